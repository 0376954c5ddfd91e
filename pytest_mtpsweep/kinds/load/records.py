"""A level block's records: one JSON line per request, then one for the level (pure).

Times are milliseconds from the level's start (its `t_start_ns`); latencies count from each
request's intended send time, as `loadgen.reads.StreamRecord` defines them. A request is
counted as queued when it was sent while at least `slots` others were in flight: with every
slot taken it had to wait for one (by the client's count; the server's own, where it has one,
is in the level's `occupancy`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .loadgen.chatlevel import TurnFacts
from .loadgen.level import LevelRun
from .loadgen.reads import StreamRecord
from .loadgen.summary import LevelSummary, Percentiles

MS = 1e6
REQUEST, LEVEL = "request", "level"  # the `record` field of each line
SEARCH = "search"  # a capacity search's line after each probe (kinds/load/run/probe.py)
# The endpoints the analysis reads (analysis/contrast.py): per request, then per level block. A
# request line's latencies are its own; a level line's are percentiles under the same names.
# Every writer and reader names them from here (tests/kinds/test_record_fields.py).
TTFT_MS, ITL_MEAN_MS, E2E_MS = "ttft_ms", "itl_mean_ms", "e2e_ms"
OUTPUT_TOK_S, REQ_S, GOODPUT_REQ_S = "output_tok_s", "req_s", "goodput_req_s"
J_PER_TOKEN = "j_per_token"  # written by run/energy.py, where NVML counts the joules
# analysis name -> record field (a per-block endpoint is named by its field)
ENDPOINT_FIELDS: dict[str, str] = {
    "ttft": TTFT_MS,
    "itl": ITL_MEAN_MS,
    "e2e": E2E_MS,
    OUTPUT_TOK_S: OUTPUT_TOK_S,
    REQ_S: REQ_S,
    GOODPUT_REQ_S: GOODPUT_REQ_S,
    J_PER_TOKEN: J_PER_TOKEN,
}
# A conversation block's request line adds its (conversation, turn) slot and the cached prompt
# tokens the server reported, judged (`loadgen.chatlevel.read_cache`); None elsewhere.
CONVERSATION_FIELDS = (
    "conversation",
    "turn",
    "cached_tokens",
    "cache_status",
    "cache_source",
    "cache_reason",
    "prompt_tokens_total",
)
# A request line, in the order its JSON holds the fields (then keyed fields and provenance).
REQUEST_FIELDS = (
    "run_id",
    "ladder",
    "treatment",
    "cycle",
    "ordinal",
    "session",
    "record",
    "level",
    "mode",
    "level_value",
    "block",
    "request",
    "prompt_id",
    "subset",
    "lane",
    "valid",
    "reason",
    "http_status",
    "finish_reason",
    "intended_ms",
    "send_lag_ms",
    TTFT_MS,
    E2E_MS,
    ITL_MEAN_MS,
    "itl_ms",
    "chunks",
    "chunk_tokens",
    "output_tokens",
    "prompt_tokens",
    "usage_status",
    "token_basis",
    "in_flight_at_send",
    "queued",
    "client_lag_max_ms",
    "model",
    "content_chars",
    "content_sha256",
    "timings",
    "started_at",
    *CONVERSATION_FIELDS,
)
# A trace replay's request line adds, after those: its trace record and what filled it
# (kinds/load/run/replay.py: the same bytes, fill_sha256, for the slot in every treatment).
TRACE_FIELDS = (
    "trace_line",
    "trace_input_tokens",
    "trace_output_tokens",
    "request_max_tokens",
    "fill_chars",
    "fill_sha256",
)


def _ms(ns: float | None) -> float | None:
    return None if ns is None else round(ns / MS, 4)


def in_flight_at_send(records: Sequence[StreamRecord]) -> list[int]:
    """For each request, how many others were in flight (sent, not ended) when it was sent."""
    # A sweep in send order (ties by index) over a heap of the open requests' ends: once a
    # request has ended by one send it has ended by every later one, so it leaves the heap
    # for good. n log n: a timed block of thousands of requests is counted in milliseconds.
    out = [0] * len(records)
    open_ends: list[float] = []
    for send, i in sorted(
        (r.t_send_ns, i) for i, r in enumerate(records) if r.t_send_ns is not None
    ):
        while open_ends and open_ends[0] <= send:
            heapq.heappop(open_ends)
        out[i] = len(open_ends)
        end = records[i].t_end_ns
        heapq.heappush(open_ends, math.inf if end is None else end)
    return out


def mean_itl_ms(r: StreamRecord) -> float | None:
    """The request's mean inter-token latency: first to last token chunk over the tokens the
    later chunks carried (one per chunk where unknown: a server that drafts may send several
    at once, which llama-server's per-chunk `timings` show); None under two chunks."""
    if len(r.chunks) < 2:
        return None
    between = sum(c.tokens or 1 for c in r.chunks[1:])
    return (r.chunks[-1].t_ns - r.chunks[0].t_ns) / between / MS


def request_line(
    identity: Mapping[str, Any],
    r: StreamRecord,
    t_start_ns: int,
    in_flight: int,
    slots: int | None,
    subset: str,
) -> dict[str, Any]:
    lags = [c.lag_ns for c in r.chunks if c.lag_ns is not None]
    if r.send_lag_ns is not None:
        lags.append(r.send_lag_ns)
    values = {
        **identity,
        "record": REQUEST,
        "request": r.index,
        "prompt_id": r.prompt_id,
        "subset": subset,
        "lane": r.slot,
        "valid": r.ok,
        "reason": r.error,
        "http_status": r.http_status,
        "finish_reason": r.finish_reason,
        "intended_ms": _ms(r.t_intended_ns - t_start_ns),
        "send_lag_ms": _ms(r.send_lag_ns),
        TTFT_MS: _ms(r.ttft_ns),
        E2E_MS: _ms(r.e2e_ns),
        ITL_MEAN_MS: mean_itl_ms(r) if r.ok else None,
        "itl_ms": [round(x / MS, 4) for x in r.itl_ns],
        "chunks": len(r.chunks),
        "chunk_tokens": [c.tokens for c in r.chunks] if any(c.tokens for c in r.chunks) else None,
        "output_tokens": r.output_tokens,
        "prompt_tokens": r.usage.prompt_tokens,
        "usage_status": r.usage.status,
        "token_basis": r.token_basis,
        "in_flight_at_send": in_flight,
        "queued": None if slots is None or r.t_send_ns is None else in_flight >= slots,
        "client_lag_max_ms": _ms(max(lags)) if lags else None,
        "model": r.model,
        "content_chars": r.content_chars,
        "content_sha256": r.content_sha256,
        "timings": dict(r.timings) if r.timings else None,
    }
    return values


def _pct(p: Percentiles) -> dict[str, Any]:
    return {"n": p.n, "p50": p.p50, "p90": p.p90, "p99": p.p99}


def level_line(
    identity: Mapping[str, Any],
    run: LevelRun,
    s: LevelSummary,
    *,
    slots: int | None,
    queued: int | None,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """The level's summary line: its figures, its client and server witnesses."""
    warm_ok = sum(r.ok for r in run.warmup)
    return {
        **identity,
        "record": LEVEL,
        "valid": s.completed == s.requests and not s.timed_out,
        "reason": level_reason(s),
        "requests": s.requests,
        "completed": s.completed,
        "errors": dict(s.errors),
        "span_s": s.span_s,
        "span_from": s.span_from,
        "duration_s": run.load.duration_s,
        TTFT_MS: _pct(s.ttft_ms),
        "itl_ms": _pct(s.itl_ms),
        E2E_MS: _pct(s.e2e_ms),
        "send_lag_ms": _pct(s.send_lag_ms),
        "client_lag_ms": _pct(s.client_lag_ms),
        "output_tokens": s.output_tokens,
        "tokens_from_chunks": s.tokens_from_chunks,
        OUTPUT_TOK_S: s.output_tok_s,
        REQ_S: s.req_s,
        "good": s.good,
        GOODPUT_REQ_S: s.goodput_req_s,
        "lag_bound_ms": s.lag_bound_ms,
        "lag_flag": s.lag_flag,
        "timed_out": s.timed_out,
        "timer": s.timer,
        "client_cpu_s": run.cpu_s,
        "warmup": {"requests": len(run.warmup), "ok": warm_ok},
        "total_slots": slots,
        "max_in_flight": max_in_flight(run.records),
        "queued": queued,
        **extra,
    }


def max_in_flight(records: Sequence[StreamRecord]) -> int:
    """The most requests in flight at once during the level (by send and end times)."""
    events = sorted(
        [(r.t_send_ns, 1) for r in records if r.t_send_ns is not None]
        + [(r.t_end_ns, -1) for r in records if r.t_send_ns is not None and r.t_end_ns is not None]
    )
    most = now = 0
    for _, step in events:  # at a tie an end sorts before a send (-1 < 1): not overlapping
        now += step
        most = max(most, now)
    return most


def level_reason(s: LevelSummary) -> str | None:
    """Why a level is not valid (every request must complete, within the level's timeout)."""
    if s.timed_out:
        return f"the level's timeout cut it short ({s.completed} of {s.requests} completed)"
    if s.completed < s.requests:
        errors = "; ".join(f"{n}x {k}" for k, n in s.errors)
        return f"{s.requests - s.completed} of {s.requests} requests failed: {errors}"
    return None


def turn_fields(t: TurnFacts) -> dict[str, Any]:
    """A conversation request line's own fields: its slot, and its cached tokens as judged."""
    return {
        "conversation": t.conversation,
        "turn": t.turn,
        "cached_tokens": t.cache.tokens,
        "cache_status": t.cache.status,
        "cache_source": t.cache.source,
        "cache_reason": t.cache.reason,
        "prompt_tokens_total": t.prompt_tokens,
    }
