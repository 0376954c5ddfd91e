"""One request of a load level: what the timed loop kept, and the record it reduces to.

The timed loop keeps only the raw bytes of each network read and its arrival stamp (monotonic
ns); everything here runs after the level has ended. An SSE event is stamped with the arrival of
the read that completed it. Records are frozen values; a failure (refused, an HTTP error, a
stream cut short, the level's timeout) is a record with its `error`, never an exception.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ....kindapi.rig import ReadBound, model_reason

ABSURD_TOKENS = 10_000_000  # more tokens than any context holds: a counter gone wrong
ERROR_EXCERPT = 300
REASONING_KEYS = ("reasoning_content", "reasoning")  # llama-server's and vLLM's spellings


@dataclass(frozen=True)
class RawRequest:
    """What the timed loop kept for one request (bytes per read, with their arrival stamps)."""

    index: int
    slot: int
    prompt_id: str
    t_intended_ns: int
    t_send_ns: int | None  # None: never sent
    t_end_ns: int | None
    pieces: tuple[bytes, ...] = ()
    stamps: tuple[int, ...] = ()
    status: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class Chunk:
    """A chunk that carried content or reasoning: when it arrived, how many tokens (None:
    unknown), and the client's event-loop lag at that moment (None: no lag sample)."""

    t_ns: int
    tokens: int | None
    reasoning: bool
    lag_ns: int | None


@dataclass(frozen=True)
class Usage:
    """The server's token counts, judged: ok, unknown (not sent) or malformed (and why)."""

    status: Literal["ok", "unknown", "malformed"]
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reason: str | None = None


@dataclass(frozen=True)
class StreamRecord:
    """One request of a level. Latencies count from the intended send time: in open loop the
    schedule's, in closed loop the moment the request's slot came free (coordinated omission)."""

    index: int  # position in the level's schedule: requests pair across treatments by it
    slot: int  # closed loop: the lane (0..N-1) that sent it; open loop: -1
    prompt_id: str
    t_intended_ns: int
    t_send_ns: int | None
    t_first_ns: int | None  # the first content or reasoning token
    t_end_ns: int | None
    chunks: tuple[Chunk, ...]
    http_status: int | None
    error: str | None
    finish_reason: str | None
    usage: Usage
    timings: Mapping[str, Any] | None  # the server's last `timings` object, as sent
    token_basis: str | None  # how chunk token counts are known: timings, logprobs, usage
    model: str | None
    content_chars: int
    content_sha256: str

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def send_lag_ns(self) -> int | None:
        return None if self.t_send_ns is None else self.t_send_ns - self.t_intended_ns

    @property
    def ttft_ns(self) -> int | None:
        return None if self.t_first_ns is None else self.t_first_ns - self.t_intended_ns

    @property
    def e2e_ns(self) -> int | None:
        return None if self.t_end_ns is None else self.t_end_ns - self.t_intended_ns

    @property
    def itl_ns(self) -> tuple[float, ...]:
        """One sample per chunk after the first: its gap, over its tokens where known."""
        c = self.chunks
        return tuple((b.t_ns - a.t_ns) / (b.tokens or 1) for a, b in itertools.pairwise(c))

    @property
    def output_tokens(self) -> int:
        """The server's completion tokens when its usage is ok, else what the chunks show."""
        if self.usage.status == "ok" and self.usage.completion_tokens is not None:
            return self.usage.completion_tokens
        return sum(ch.tokens or 1 for ch in self.chunks)


def check_usage(raw: object, *, max_tokens: int | None, token_chunks: int) -> Usage:
    """Judge a usage object: missing -> unknown; not an int, negative, absurd, inconsistent ->
    malformed. `token_chunks` chunks carried tokens, so fewer completion tokens cannot be."""
    if raw is None:
        return Usage("unknown", reason="no usage in the stream")
    if not isinstance(raw, dict):
        return Usage("malformed", reason=f"usage is a {type(raw).__name__}, not an object")
    counts: dict[str, int] = {}
    for key in ("prompt_tokens", "completion_tokens"):
        v = raw.get(key)
        if v is None:
            return Usage("unknown", reason=f"usage has no {key}")
        if not isinstance(v, int) or isinstance(v, bool):
            return Usage("malformed", reason=f"usage {key} {v!r} is not an integer")
        if not 0 <= v <= ABSURD_TOKENS:
            return Usage("malformed", reason=f"usage {key} {v} is out of range")
        counts[key] = v
    prompt, completion = counts["prompt_tokens"], counts["completion_tokens"]
    bad = None
    total = raw.get("total_tokens")
    if total is not None and total != prompt + completion:
        bad = f"usage total_tokens {total!r} != prompt {prompt} + completion {completion}"
    elif max_tokens is not None and completion > max_tokens:
        bad = f"usage completion_tokens {completion} exceeds max_tokens {max_tokens}"
    elif completion < token_chunks:
        bad = f"usage completion_tokens {completion} < {token_chunks} chunks that carried tokens"
    if bad is not None:
        return Usage("malformed", prompt, completion, bad)
    return Usage("ok", prompt, completion)


def sse_lines(pieces: Sequence[bytes], stamps: Sequence[int]) -> Iterator[tuple[str, int]]:
    """The stream's lines, each with the arrival of the read that completed it."""
    buf = b""
    for piece, t in zip(pieces, stamps, strict=True):
        buf += piece
        *complete, buf = buf.split(b"\n")
        for line in complete:
            yield line.rstrip(b"\r").decode("utf-8", "replace"), t
    if buf:
        yield buf.decode("utf-8", "replace"), stamps[-1]


def lag_at(monitor: Sequence[tuple[int, int]], t_ns: int) -> int | None:
    """The lag of the first monitor wake at or after `t_ns` (samples: (woke_ns, lag_ns))."""
    i = bisect.bisect_left(monitor, (t_ns, -1))
    return monitor[i][1] if i < len(monitor) else None


@dataclass
class _Events:
    """What a stream's events said so far: a private accumulator of `reduce_request`, not a
    value (the record it becomes is frozen)."""

    top: int  # the largest running predicted_n that is a token count
    monitor: Sequence[tuple[int, int]]
    chunks: list[Chunk] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    usage_raw: object = None
    timings: dict[str, Any] | None = None
    finish: str | None = None
    models: set[str] = field(default_factory=set)
    basis: set[str] = field(default_factory=set)
    done: bool = False
    bad_json: bool = False
    cumulative: int = 0

    def line(self, line: str, t: int) -> None:
        """One SSE line stamped `t`: an event, `[DONE]`, or a line that is no JSON object."""
        if not line.startswith("data:"):
            return
        payload = line[5:].strip()
        if payload == "[DONE]":
            self.done = True
            return
        try:
            event = json.loads(payload)
        except json.JSONDecodeError:
            event = None
        if not isinstance(event, dict):
            self.bad_json = True
            return
        self.event(event, t)

    def _timed_tokens(self, event: Mapping[str, Any]) -> int | None:
        """The tokens this event's `timings` add, while the running count stays believable."""
        if not isinstance(event.get("timings"), dict):
            return None
        self.timings = event["timings"]
        n = self.timings.get("predicted_n")
        if isinstance(n, int) and not isinstance(n, bool) and self.cumulative <= n <= self.top:
            tokens, self.cumulative = n - self.cumulative, n
            return tokens
        return None

    def event(self, event: Mapping[str, Any], t: int) -> None:
        """One parsed event: its model, usage and timings, and a chunk when it carried text."""
        if isinstance(event.get("model"), str):
            self.models.add(event["model"])
        self.usage_raw = event.get("usage", self.usage_raw)
        tokens = self._timed_tokens(event)
        choices = event.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            return
        if choice.get("finish_reason"):
            self.finish = str(choice["finish_reason"])
        delta = choice.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        content = delta.get("content")
        reasoning = next((delta[k] for k in REASONING_KEYS if delta.get(k)), None)
        text = content if isinstance(content, str) and content else None
        if text is None and not isinstance(reasoning, str):
            return
        if tokens is not None:
            self.basis.add("timings")
        logprobs = choice.get("logprobs")
        if (
            tokens is None
            and isinstance(logprobs, dict)
            and isinstance(logprobs.get("content"), list)
        ):
            tokens = len(logprobs["content"])
            self.basis.add("logprobs")
        self.chunks.append(Chunk(t, tokens, text is None, lag_at(self.monitor, t)))
        if text is not None:
            self.parts.append(text)


def reduce_request(
    raw: RawRequest,
    *,
    max_tokens: int | None,
    monitor: Sequence[tuple[int, int]] = (),
    expected_model: str | None = None,
) -> StreamRecord:
    """Parse a kept stream into its record (pure; after the level, never inside it).

    `expected_model`: the alias every event's `model` must name (`served.model_reason`, the
    decode kind's rule too); another, or none, makes the request an error with its reason."""
    # A running predicted_n is a token count only while it grows within what max_tokens allows:
    # a lying server's 10**30 (or a count that goes back) is no chunk's size (issue 43).
    top = ABSURD_TOKENS if max_tokens is None else max_tokens + ReadBound.CHUNK_SLACK
    seen = _Events(top, monitor)
    for line, t in sse_lines(raw.pieces, raw.stamps) if raw.status == 200 else ():
        seen.line(line, t)
    chunks = seen.chunks
    usage = check_usage(seen.usage_raw, max_tokens=max_tokens, token_chunks=len(chunks))
    if (
        not seen.basis
        and chunks
        and usage.completion_tokens == len(chunks)
        and usage.status == "ok"
    ):
        # One token per chunk is then the only count that fits; say so rather than assume it.
        chunks = [Chunk(c.t_ns, 1, c.reasoning, c.lag_ns) for c in chunks]
        seen.basis.add("usage")
    content = "".join(seen.parts)
    error = (
        raw.error
        or _stream_error(raw, seen.done, seen.finish, seen.bad_json)
        or ReadBound.excess_chunks(len(chunks), max_tokens)
    )
    if error is None and expected_model is not None:
        error = model_reason(seen.models, expected_model, answered=True)
    return StreamRecord(
        index=raw.index,
        slot=raw.slot,
        prompt_id=raw.prompt_id,
        t_intended_ns=raw.t_intended_ns,
        t_send_ns=raw.t_send_ns,
        t_first_ns=chunks[0].t_ns if chunks else None,
        t_end_ns=raw.t_end_ns,
        chunks=tuple(chunks),
        http_status=raw.status,
        error=error,
        finish_reason=seen.finish,
        usage=usage,
        timings=seen.timings,
        token_basis="+".join(sorted(seen.basis)) or None,
        model=shown(seen.models),
        content_chars=len(content),
        content_sha256=hashlib.sha256(content.encode()).hexdigest(),
    )


def _stream_error(raw: RawRequest, done: bool, finish: str | None, bad_json: bool) -> str | None:
    if raw.status != 200:
        body = b"".join(raw.pieces)[:ERROR_EXCERPT].decode("utf-8", "replace")
        return f"HTTP {raw.status}: {body!r}"
    if finish is None and not done:
        return "the stream ended early (no finish_reason, no [DONE])"
    if bad_json:
        return "an event of the stream was not JSON"
    return None


def shown(models: Collection[str]) -> str | None:
    """The record's `model`: the one name, or every name seen (comma-joined), or None."""
    return ",".join(sorted(models)) or None
