"""One streamed chat completion -> a Measurement (timestamps, tokens, rates, anomalies)."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

# Delta fields an OpenAI-compatible stream may carry; anything else is an anomaly worth a look.
KNOWN_DELTA_FIELDS = frozenset(
    {"role", "content", "reasoning_content", "tool_calls", "function_call", "refusal"}
)


@dataclass(frozen=True)
class RequestSpec:
    """What to ask: everything that goes into the request body besides the prompt."""

    alias: str
    max_tokens: int
    seed: int
    temperature: float
    timeout_s: float = 600.0


@dataclass(frozen=True)
class Measurement:
    """One streamed request, reduced to the numbers the records keep."""

    valid: bool
    reason: str | None
    http_status: int | None
    decode_rate_tps_primary: float | None
    decode_rate_tps_interval: float | None
    interval_basis: str | None
    ttft_s: float | None
    e2e_s: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    predicted_n: int | None
    predicted_ms: float | None
    prompt_ms: float | None
    cache_n: int | None
    draft_n: int | None
    draft_n_accepted: int | None
    finish_reason: str | None
    content_chars: int
    content_sha256: str
    reasoning_chars: int
    chunks: int
    content_chunks: int
    server_alias: str | None
    anomalies: dict[str, int] = field(default_factory=dict)
    unrecognised_delta_fields: tuple[str, ...] = ()

    def fields(self) -> dict[str, Any]:
        d = asdict(self)
        d["unrecognised_delta_fields"] = list(self.unrecognised_delta_fields)
        return d


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
        "cache_prompt": False,
    }


def stream_chat(client: httpx.Client, base_url: str, prompt: str, spec: RequestSpec) -> Measurement:
    """Send one streamed request and reduce it; transport failures become invalid measurements."""
    body = request_body(prompt, spec)
    lines: list[str] = []
    stamps: list[int] = []
    status: int | None = None
    error: str | None = None
    t_send = time.monotonic_ns()
    try:
        with client.stream(
            "POST", f"{base_url}/v1/chat/completions", json=body, timeout=spec.timeout_s
        ) as resp:
            status = resp.status_code
            if status != 200:
                resp.read()
                error = f"HTTP {status}: {resp.text[:300]!r}"
            else:
                # The timed loop: stamp each event as it arrives and keep the raw line.
                # Parsing waits until the stream has ended so it never lands inside an interval.
                append_line, append_stamp, now = lines.append, stamps.append, time.monotonic_ns
                for line in resp.iter_lines():
                    append_stamp(now())
                    append_line(line)
    except httpx.HTTPError as exc:
        error = f"transport error after {len(lines)} events: {type(exc).__name__}: {exc}"
    t_end = time.monotonic_ns()
    return reduce_stream(
        lines,
        stamps,
        t_send=t_send,
        t_end=t_end,
        status=status,
        error=error,
        expected_alias=spec.alias,
    )


def reduce_stream(
    lines: list[str],
    stamps: list[int],
    *,
    t_send: int,
    t_end: int,
    status: int | None,
    error: str | None,
    expected_alias: str,
) -> Measurement:
    """Turn raw SSE lines and their arrival stamps (monotonic ns) into a Measurement."""
    anomalies: dict[str, int] = {}

    def note(kind: str) -> None:
        anomalies[kind] = anomalies.get(kind, 0) + 1

    content_parts: list[str] = []
    content_stamps: list[int] = []
    t_first_token: int | None = None
    reasoning_chars = 0
    chunks = 0
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    models: set[str] = set()
    unknown_fields: set[str] = set()
    done = False
    for line, t in zip(lines, stamps, strict=True):
        if not line:
            continue
        if line.startswith(":"):
            note("keepalive")
            continue
        if not line.startswith("data:"):
            note("non_data_line")
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            done = True
            continue
        if done:
            note("data_after_done")
        try:
            event = json.loads(payload)
        except json.JSONDecodeError:
            note("bad_json")
            continue
        if not isinstance(event, dict):
            note("bad_json")
            continue
        chunks += 1
        if isinstance(event.get("model"), str):
            models.add(event["model"])
        if isinstance(event.get("usage"), dict):
            usage = event["usage"]
        if isinstance(event.get("timings"), dict):
            timings = event["timings"]
        choices = event.get("choices") or []
        if len(choices) > 1:
            note("multiple_choices")
        for choice in choices[:1]:
            if finish_reason is not None:
                note("event_after_finish")
            delta = choice.get("delta") or {}
            unknown = set(delta) - KNOWN_DELTA_FIELDS
            if unknown:
                unknown_fields |= unknown
                note("unrecognised_delta_fields")
            content = delta.get("content")
            if content:
                content_parts.append(content)
                content_stamps.append(t)
                if t_first_token is None:
                    t_first_token = t
            reasoning = delta.get("reasoning_content")
            if reasoning:
                reasoning_chars += len(reasoning)
                note("reasoning_events")
                if t_first_token is None:
                    t_first_token = t
            if choice.get("finish_reason"):
                finish_reason = choice["finish_reason"]
    if lines and not done and error is None:
        note("missing_done")

    completion_tokens = _int(usage, "completion_tokens")
    prompt_tokens = _int(usage, "prompt_tokens")
    primary: float | None = None
    if completion_tokens is not None and completion_tokens >= 2 and len(content_stamps) >= 2:
        span_ns = content_stamps[-1] - content_stamps[0]
        if span_ns > 0:
            primary = (completion_tokens - 1) / (span_ns / 1e9)

    predicted_n = _int(timings, "predicted_n")
    predicted_ms = _float(timings, "predicted_ms")
    interval: float | None = None
    basis: str | None = None
    if predicted_n is not None and predicted_n >= 2 and predicted_ms:
        interval = (predicted_n - 1) / (predicted_ms / 1000.0)
        basis = "server_timings"
    elif len(content_stamps) >= 2 and content_stamps[-1] > content_stamps[0]:
        # No server timings: one token per content event is the best the stream can say.
        interval = (len(content_stamps) - 1) / ((content_stamps[-1] - content_stamps[0]) / 1e9)
        basis = "inter_chunk"

    content = "".join(content_parts)
    alias = next(iter(models)) if len(models) == 1 else (",".join(sorted(models)) or None)
    reasons: list[str] = []
    if error is not None:
        reasons.append(error)
    elif status != 200:
        reasons.append(f"HTTP {status}")
    if error is None and usage is None:
        reasons.append("no usage in the stream (the server ignored stream_options.include_usage)")
    if models and models != {expected_alias}:
        reasons.append(f"wrong server answered: model {sorted(models)} != alias {expected_alias!r}")
    elif error is None and not models:
        reasons.append("no model field in the stream: the alias witness is missing")
    if error is None and finish_reason is None:
        reasons.append("no finish_reason arrived")
    if unknown_fields:
        reasons.append(f"unrecognised delta fields {sorted(unknown_fields)}")
    return Measurement(
        valid=not reasons,
        reason="; ".join(reasons) or None,
        http_status=status,
        decode_rate_tps_primary=primary,
        decode_rate_tps_interval=interval,
        interval_basis=basis,
        ttft_s=(t_first_token - t_send) / 1e9 if t_first_token is not None else None,
        e2e_s=(t_end - t_send) / 1e9,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        predicted_n=predicted_n,
        predicted_ms=predicted_ms,
        prompt_ms=_float(timings, "prompt_ms"),
        cache_n=_int(timings, "cache_n"),
        draft_n=_int(timings, "draft_n"),
        draft_n_accepted=_int(timings, "draft_n_accepted"),
        finish_reason=finish_reason,
        content_chars=len(content),
        content_sha256=hashlib.sha256(content.encode()).hexdigest(),
        reasoning_chars=reasoning_chars,
        chunks=chunks,
        content_chunks=len(content_stamps),
        server_alias=alias,
        anomalies=anomalies,
        unrecognised_delta_fields=tuple(sorted(unknown_fields)),
    )


def _int(d: dict[str, Any] | None, key: str) -> int | None:
    v = d.get(key) if d else None
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _float(d: dict[str, Any] | None, key: str) -> float | None:
    v = d.get(key) if d else None
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
