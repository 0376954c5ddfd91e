"""A recorded SSE stream -> a Measurement: parse the events, compute the rates, judge validity.

Pure functions over the raw lines and their arrival stamps (monotonic ns); nothing here runs
while the stream is timed.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from ..base.schema import Measurement
from .bounds import ReadBound
from .served import model_reason, shown
from .timings import Timings, read_timings
from .usage import read_usage

# Delta fields an OpenAI-compatible stream may carry; anything else is an anomaly worth a look.
KNOWN_DELTA_FIELDS = frozenset(
    {"role", "content", "reasoning_content", "tool_calls", "function_call", "refusal"}
)


@dataclass(frozen=True)
class RawStream:
    """What the timed loop kept: raw lines, their arrival stamps, and how the request ended."""

    lines: list[str]
    stamps: list[int]
    t_send: int
    t_end: int
    status: int | None
    error: str | None


@dataclass
class Events:
    """What the events of one stream said, before any rate is computed."""

    content_parts: list[str] = field(default_factory=list)
    content_stamps: list[int] = field(default_factory=list)
    t_first_token: int | None = None
    reasoning_chars: int = 0
    chunks: int = 0
    token_chunks: int = 0  # chunks that carried content or reasoning (a token at least each)
    finish_reason: str | None = None
    t_finish: int | None = None  # arrival of the event that carried finish_reason
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    models: set[str] = field(default_factory=set)
    unknown_fields: set[str] = field(default_factory=set)
    anomalies: dict[str, int] = field(default_factory=dict)
    done: bool = False

    def note(self, kind: str) -> None:
        self.anomalies[kind] = self.anomalies.get(kind, 0) + 1


def parse_events(raw: RawStream) -> Events:
    """Walk the SSE lines once, collecting content, usage, timings, models and anomalies."""
    ev = Events()
    for line, t in zip(raw.lines, raw.stamps, strict=True):
        if not line:
            continue
        if line.startswith(":"):
            ev.note("keepalive")
            continue
        if not line.startswith("data:"):
            ev.note("non_data_line")
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            ev.done = True
            continue
        if ev.done:
            ev.note("data_after_done")
        try:
            event = json.loads(payload)
        except json.JSONDecodeError:
            event = None
        if not isinstance(event, dict):
            ev.note("bad_json")
            continue
        _event(ev, event, t)
    if raw.lines and not ev.done and raw.error is None:
        ev.note("missing_done")
    return ev


def _event(ev: Events, event: dict[str, Any], t: int) -> None:
    ev.chunks += 1
    if isinstance(event.get("model"), str):
        ev.models.add(event["model"])
    if isinstance(event.get("usage"), dict):
        ev.usage = event["usage"]
    if isinstance(event.get("timings"), dict):
        ev.timings = event["timings"]
    choices = event.get("choices")
    choices = choices if isinstance(choices, list) else []
    if len(choices) > 1:
        ev.note("multiple_choices")
    for choice in choices[:1]:
        if not isinstance(choice, dict):
            ev.note("bad_json")
            continue
        if ev.finish_reason is not None:
            ev.note("event_after_finish")
        delta = choice.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        unknown = set(delta) - KNOWN_DELTA_FIELDS
        if unknown:
            ev.unknown_fields |= unknown
            ev.note("unrecognised_delta_fields")
        content = delta.get("content")
        if isinstance(content, str) and content:
            ev.content_parts.append(content)
            ev.content_stamps.append(t)
            if ev.t_first_token is None:
                ev.t_first_token = t
        reasoning = delta.get("reasoning_content")
        if (isinstance(content, str) and content) or (isinstance(reasoning, str) and reasoning):
            ev.token_chunks += 1
        if isinstance(reasoning, str) and reasoning:
            ev.reasoning_chars += len(reasoning)
            ev.note("reasoning_events")
            if ev.t_first_token is None:
                ev.t_first_token = t
        if choice.get("finish_reason"):
            ev.finish_reason = str(choice["finish_reason"])
            ev.t_finish = t


def primary_rate(
    completion_tokens: int | None, content_stamps: list[int], t_stop: int | None = None
) -> float | None:
    """(completion tokens − 1) / (last token's arrival − first content event), client clock.

    The last token's arrival is the last content event, except when the generation ended on a
    stop (`t_stop`: the event carrying finish_reason "stop"): the stop token (an end-of-generation
    token, or the tokens of a stop string) is counted in completion_tokens but ends no content
    event, and arrives with the finish event. Ending at the last content event there would count
    one token more than the interval spans (1.6-2.7 % high at 64 tokens)."""
    if completion_tokens is None or completion_tokens < 2 or len(content_stamps) < 2:
        return None
    end = max(content_stamps[-1], t_stop) if t_stop is not None else content_stamps[-1]
    span_ns = end - content_stamps[0]
    return (completion_tokens - 1) / (span_ns / 1e9) if span_ns > 0 else None


def interval_rate(timings: Timings, content_stamps: list[int]) -> tuple[float | None, str | None]:
    """The server's own decode interval (checked: rig/timings.py), else content events per
    second; and which basis."""
    predicted_n, predicted_ms = timings.predicted_n, timings.predicted_ms
    if predicted_n is not None and predicted_n >= 2 and predicted_ms:
        return (predicted_n - 1) / (predicted_ms / 1000.0), "server_timings"
    if len(content_stamps) >= 2 and content_stamps[-1] > content_stamps[0]:
        # No server timings: one token per content event is the best the stream can say.
        span_s = (content_stamps[-1] - content_stamps[0]) / 1e9
        return (len(content_stamps) - 1) / span_s, "inter_chunk"
    return None, None


def invalid_reasons(
    raw: RawStream, ev: Events, expected_alias: str, stall: str | None = None
) -> list[str]:
    """Why a measurement is not valid (empty: it is)."""
    reasons: list[str] = []
    if raw.error is not None:
        reasons.append(raw.error)
    elif raw.status != 200:
        reasons.append(f"HTTP {raw.status}")
    # A stream cut short (a server that stopped or died) says nothing about usage support:
    # blame include_usage only when the answer itself came to its end.
    cut_short = raw.error is None and ev.finish_reason is None and not ev.done
    if cut_short:
        reasons.append(
            "the stream ended early (no finish_reason, no [DONE]): the server stopped "
            "answering or died mid-answer"
        )
    elif raw.error is None and ev.usage is None:
        reasons.append("no usage in the stream (the server ignored stream_options.include_usage)")
    witness = model_reason(ev.models, expected_alias, answered=raw.error is None and not cut_short)
    if witness is not None:
        reasons.append(witness)
    if raw.error is None and ev.finish_reason is None and not cut_short:
        reasons.append("no finish_reason arrived")
    if ev.unknown_fields:
        reasons.append(f"unrecognised delta fields {sorted(ev.unknown_fields)}")
    if stall is not None:
        reasons.append(stall)
    return reasons


def max_gap_s(raw: RawStream, t_first_token: int | None) -> float | None:
    """The longest silence from the first token to the end of the stream, in seconds.

    Computed after the stream from the arrival stamps: a stall mid-answer (a server paused,
    swapping, or stuck) shows here though the rate over the whole answer may look plausible.
    """
    if t_first_token is None:
        return None
    stamps = [t for t in raw.stamps if t >= t_first_token] + [raw.t_end]
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    return max(gaps, default=0) / 1e9


def stall_reason(gap_s: float | None, threshold_s: float | None) -> str | None:
    """Why the stream counts as stalled (None: it did not, or no threshold was set)."""
    if gap_s is None or threshold_s is None or gap_s <= threshold_s:
        return None
    return f"stalled: {gap_s:.1f} s without an event mid-answer (stall threshold {threshold_s:g} s)"


def reduce_stream(
    raw: RawStream,
    *,
    expected_alias: str,
    stall_s: float | None = None,
    max_tokens: int | None = None,
) -> Measurement:
    """Turn a recorded stream into a Measurement; `stall_s` flags a longer silence mid-answer,
    and usage that cannot be true (rig/usage.py, `max_tokens` its cap) makes it invalid."""
    ev = parse_events(raw)
    usage = read_usage(ev.usage, max_tokens)
    completion_tokens = usage.completion_tokens
    timings = read_timings(
        ev.timings,
        content_stamps=ev.content_stamps,
        t_send=raw.t_send,
        t_end=raw.t_end,
        prompt_tokens=usage.prompt_tokens,
    )
    # A server's timings that cannot be true never become a rate: the measurement is invalid.
    interval, basis = (None, None) if timings.problem else interval_rate(timings, ev.content_stamps)
    content = "".join(ev.content_parts)
    gap = max_gap_s(raw, ev.t_first_token)
    # A stream the stall watch cut (rig/bounds.py) says so in its error already.
    cut = raw.error is not None and raw.error.startswith("stalled:")
    reasons = invalid_reasons(raw, ev, expected_alias, None if cut else stall_reason(gap, stall_s))
    if usage.problem is not None:
        reasons.append(usage.problem)
    if timings.problem is not None:
        reasons.append(timings.problem)
    # Each content or reasoning chunk holds a token at least: more than max_tokens allows is a
    # server that does not stop where it was told, whatever its usage says.
    excess = ReadBound.excess_chunks(ev.token_chunks, max_tokens)
    if excess is not None and raw.error is None:
        reasons.append(excess)
    alias = shown(ev.models)
    return Measurement(
        valid=not reasons,
        reason="; ".join(reasons) or None,
        http_status=raw.status,
        decode_rate_tps_primary=primary_rate(
            completion_tokens,
            ev.content_stamps,
            ev.t_finish if ev.finish_reason == "stop" else None,
        ),
        decode_rate_tps_interval=interval,
        interval_basis=basis,
        ttft_s=(ev.t_first_token - raw.t_send) / 1e9 if ev.t_first_token is not None else None,
        e2e_s=(raw.t_end - raw.t_send) / 1e9,
        max_gap_s=gap,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=completion_tokens,
        **timings.measured(),
        draft_source="server_timings" if timings.draft_n is not None else None,
        finish_reason=ev.finish_reason,
        content_chars=len(content),
        content_sha256=hashlib.sha256(content.encode()).hexdigest(),
        reasoning_chars=ev.reasoning_chars,
        chunks=ev.chunks,
        content_chunks=len(ev.content_stamps),
        server_alias=alias,
        anomalies=ev.anomalies,
        unrecognised_delta_fields=tuple(sorted(ev.unknown_fields)),
        content=content,
    )
