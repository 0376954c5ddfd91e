"""One level's records -> its figures: latency percentiles, throughput, goodput, client lag.

Pure: a function of a `LevelRun` and the targets given. Latencies count from each request's
intended send time (see `StreamRecord`). ITL pools every chunk gap of the level's completed
requests (one sample per gap, over its tokens where known); TTFT and e2e take one sample per
completed request. Rates divide by the level's span: from its start to its last request's end,
or, for a level given a duration, from its first send to its last request's end (the span the
requests were measured over, whatever the schedule's first gap).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .level import ClosedLoop, LevelRun
from .reads import StreamRecord

MS = 1e6  # ns per ms
DEFAULT_LAG_BOUND_MS = 1.0
SPAN_LEVEL_START, SPAN_FIRST_SEND = "level start", "first send"


@dataclass(frozen=True)
class Slo:
    """Latency targets a request must all meet to count toward goodput (None: no target).
    `itl_ms` is held against the request's mean inter-token latency."""

    ttft_ms: float | None = None
    itl_ms: float | None = None
    e2e_ms: float | None = None

    def met(self, r: StreamRecord) -> bool:
        ttft, e2e, itl = r.ttft_ns, r.e2e_ns, r.itl_ns
        if self.ttft_ms is not None and (ttft is None or ttft / MS > self.ttft_ms):
            return False
        if self.e2e_ms is not None and (e2e is None or e2e / MS > self.e2e_ms):
            return False
        return self.itl_ms is None or not itl or sum(itl) / len(itl) / MS <= self.itl_ms


@dataclass(frozen=True)
class Percentiles:
    n: int
    p50: float | None
    p90: float | None
    p99: float | None


@dataclass(frozen=True)
class LevelSummary:
    mode: str  # closed, open
    level: float  # the concurrency, or the offered rate in requests/s
    requests: int
    completed: int
    errors: tuple[tuple[str, int], ...]  # (kind, count), most frequent first
    span_s: float
    span_from: str  # where the span starts: "level start" or "first send"
    ttft_ms: Percentiles
    itl_ms: Percentiles
    e2e_ms: Percentiles
    send_lag_ms: Percentiles
    client_lag_ms: Percentiles  # every send lag and every chunk's event-loop lag
    output_tokens: int
    tokens_from_chunks: int  # completed requests whose usage was not ok: counted from chunks
    usage: tuple[tuple[str, int], ...]  # (ok|unknown|malformed, count)
    output_tok_s: float
    req_s: float
    good: int | None  # None: no SLO given
    goodput_req_s: float | None
    lag_bound_ms: float
    lag_flag: str | None  # why this level's latencies may be the client's, not the server's
    timed_out: bool
    timer: str


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default), None when empty."""
    if not values:
        return None
    v = sorted(values)
    pos = (len(v) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def percentiles(values_ns: Iterable[float]) -> Percentiles:
    ms = sorted(v / MS for v in values_ns)
    return Percentiles(len(ms), percentile(ms, 50), percentile(ms, 90), percentile(ms, 99))


def error_kind(error: str) -> str:
    """A short name for an error, to count alike ones together."""
    head = error.split(":", 1)[0]
    return head if len(head) <= 60 else head[:57] + "..."


def client_lags_ns(records: Iterable[StreamRecord]) -> list[int]:
    out: list[int] = []
    for r in records:
        if r.send_lag_ns is not None:
            out.append(r.send_lag_ns)
        out.extend(c.lag_ns for c in r.chunks if c.lag_ns is not None)
    return out


def summarise(
    run: LevelRun, slo: Slo | None = None, lag_bound_ms: float = DEFAULT_LAG_BOUND_MS
) -> LevelSummary:
    """The level's figures; a client lag p99 over `lag_bound_ms` is flagged, not hidden."""
    records = run.records
    done = [r for r in records if r.ok]
    ends = [r.t_end_ns for r in records if r.t_end_ns is not None]
    sends = [r.t_send_ns for r in records if r.t_send_ns is not None]
    timed = run.load.duration_s is not None
    start = min(sends, default=run.t_start_ns) if timed else run.t_start_ns
    span_s = max((max(ends, default=run.t_end_ns) - start) / 1e9, 1e-9)
    tokens = sum(r.output_tokens for r in done)
    lag = percentiles(client_lags_ns(records))
    flag = None
    if lag.p99 is not None and lag.p99 > lag_bound_ms:
        flag = (
            f"client lag p99 {lag.p99:.2f} ms exceeds the bound {lag_bound_ms:g} ms: these "
            "latencies may show the client's delay as much as the server's"
        )
    good = None if slo is None else sum(slo.met(r) for r in done)
    closed = isinstance(run.load, ClosedLoop)
    return LevelSummary(
        mode="closed" if closed else "open",
        level=float(run.load.concurrency if isinstance(run.load, ClosedLoop) else run.load.rate),
        requests=len(records),
        completed=len(done),
        errors=tuple(Counter(error_kind(r.error) for r in records if r.error).most_common()),
        span_s=span_s,
        span_from=SPAN_FIRST_SEND if timed else SPAN_LEVEL_START,
        ttft_ms=percentiles(r.ttft_ns for r in done if r.ttft_ns is not None),
        itl_ms=percentiles(x for r in done for x in r.itl_ns),
        e2e_ms=percentiles(r.e2e_ns for r in done if r.e2e_ns is not None),
        send_lag_ms=percentiles(r.send_lag_ns for r in records if r.send_lag_ns is not None),
        client_lag_ms=lag,
        output_tokens=tokens,
        tokens_from_chunks=sum(r.usage.status != "ok" for r in done),
        usage=tuple(sorted(Counter(r.usage.status for r in done).items())),
        output_tok_s=tokens / span_s,
        req_s=len(done) / span_s,
        good=good,
        goodput_req_s=None if good is None else good / span_s,
        lag_bound_ms=lag_bound_ms,
        lag_flag=flag,
        timed_out=run.timed_out,
        timer=run.timer,
    )
