"""One streamed chat completion over HTTP: the timed loop only stamps and keeps raw lines."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from ..base.errors import ReplyCut
from ..base.redact import redact_url
from ..base.schema import Measurement
from .bounds import Deadline, ReadBound, read_body, stream_lines
from .http import http_client
from .stream import RawStream, reduce_stream


@dataclass(frozen=True)
class RequestSpec:
    """What to ask: everything that goes into the request body besides the prompt."""

    alias: str
    max_tokens: int
    seed: int
    temperature: float
    timeout_s: float = 600.0  # the whole request, its reply read to the end (rig/bounds.py)
    stall_s: float | None = None  # a longer silence mid-answer makes the measurement invalid
    cache_prompt: bool = False  # llama-server's prompt cache (off: every prompt is processed)
    headers: tuple[
        tuple[str, str], ...
    ] = ()  # e.g. an attached server's bearer key; never recorded

    def __repr__(self) -> str:  # the headers may hold a key: keep it out of any repr
        return f"RequestSpec(alias={self.alias!r}, max_tokens={self.max_tokens})"


def request_body(prompt: str, spec: RequestSpec) -> dict[str, Any]:
    return {
        "model": spec.alias,
        "messages": [{"role": "user", "content": prompt}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": spec.max_tokens,
        "temperature": spec.temperature,
        "seed": spec.seed,
        # A repeated prompt would otherwise reuse its cached prefix and skew prompt timings.
        "cache_prompt": spec.cache_prompt,
    }


def new_http_client() -> httpx.Client:
    """One fresh connection per request: a kept-alive socket the server has just closed would
    turn into a spurious failed measurement. trust_env=False keeps proxies off loopback."""
    return http_client(limits=httpx.Limits(max_keepalive_connections=0))


def stream_chat(client: httpx.Client, base_url: str, prompt: str, spec: RequestSpec) -> Measurement:
    """Send one streamed request and reduce it; transport failures, and a reply past its bound
    (`spec.timeout_s` in all, and lines, events and bytes from `max_tokens`: rig/bounds.py),
    and a silence past `spec.stall_s` after a line (cut then, not at the total bound), become
    invalid measurements."""
    body = request_body(prompt, spec)
    bound = ReadBound.stream(spec.max_tokens, spec.timeout_s)
    lines: list[str] = []
    stamps: list[int] = []
    status: int | None = None
    error: str | None = None
    with Deadline(bound.total_s, spec.stall_s, stamps) as deadline:
        t_send = time.monotonic_ns()
        try:
            with client.stream(
                "POST",
                f"{base_url}/v1/chat/completions",
                json=body,
                timeout=spec.timeout_s,
                headers=dict(spec.headers),
                extensions=deadline.extensions,
            ) as resp:
                deadline.watch(resp)
                status = resp.status_code
                if status != 200:
                    text = read_body(resp, bound).decode("utf-8", "replace")
                    error = f"HTTP {status}: {text[:300]!r}"
                else:
                    # The timed loop: stamp each line as it arrives and keep it raw. Parsing
                    # waits until the stream has ended so it never lands inside an interval;
                    # stream_lines only counts, to cut a reply past its bound.
                    append_line, append_stamp, now = lines.append, stamps.append, time.monotonic_ns
                    for line in stream_lines(resp, bound):
                        append_stamp(now())
                        append_line(line)
        except ReplyCut as exc:
            error = str(exc)
        except httpx.HTTPError as exc:
            error = redact_url(
                f"transport error after {len(lines)} events: {type(exc).__name__}: {exc}"
            )
        if deadline.stalled_s is not None and spec.stall_s is not None:  # the watch cut it
            error = bound.stalled(spec.stall_s, f"{len(lines)} lines")
        elif deadline.passed:  # the timer's shutdown ended the reads, whatever they raised
            error = bound.too_long(deadline.elapsed_s, f"{len(lines)} lines")
        t_end = time.monotonic_ns()
    raw = RawStream(lines, stamps, t_send=t_send, t_end=t_end, status=status, error=error)
    return reduce_stream(
        raw, expected_alias=spec.alias, stall_s=spec.stall_s, max_tokens=spec.max_tokens
    )
