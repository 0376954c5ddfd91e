"""A level's records -> percentiles, throughput, goodput, and the client-lag flag."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.load.loadgen.level import ClosedLoop, LevelRun, OpenLoop
from pytest_mtpsweep.kinds.load.loadgen.reads import Chunk, StreamRecord, Usage
from pytest_mtpsweep.kinds.load.loadgen.summary import Slo, error_kind, percentile, summarise

MS = 1_000_000


def record(
    index: int,
    *,
    ttft_ms: float = 10.0,
    gaps_ms: tuple[float, ...] = (5.0, 5.0),
    send_lag_ms: float = 0.0,
    chunk_lag_ms: float = 0.1,
    intended_ms: float = 0.0,
    error: str | None = None,
    usage: Usage | None = None,
) -> StreamRecord:
    t0 = int(intended_ms * MS)
    t = t0 + int(ttft_ms * MS)
    chunks = [Chunk(t, 1, False, int(chunk_lag_ms * MS))]
    for g in gaps_ms:
        t += int(g * MS)
        chunks.append(Chunk(t, 1, False, int(chunk_lag_ms * MS)))
    n = len(chunks)
    return StreamRecord(
        index=index,
        slot=0,
        prompt_id=f"p{index % 2}",
        t_intended_ns=t0,
        t_send_ns=t0 + int(send_lag_ms * MS),
        t_first_ns=chunks[0].t_ns,
        t_end_ns=t,
        chunks=tuple(chunks),
        http_status=200,
        error=error,
        finish_reason="length",
        usage=usage or Usage("ok", 5, n),
        timings=None,
        token_basis="usage",
        model="m",
        content_chars=n,
        content_sha256="",
    )


def level(records: list[StreamRecord], load: Any = None, t_start_ms: float = 0.0) -> LevelRun:
    return LevelRun(
        load=load or ClosedLoop(2, len(records)),
        records=tuple(records),
        warmup=(),
        t_start_ns=int(t_start_ms * MS),
        t_end_ns=max(r.t_end_ns or 0 for r in records),
        timed_out=False,
        timer="select (µs timers)",
        monitor=(),
    )


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60), st.floats(0, 100))
def test_percentile_is_numpys_linear_interpolation(values: list[float], q: float) -> None:
    got = percentile(values, q)
    assert got == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-6)


def test_percentile_of_nothing_is_none() -> None:
    assert percentile([], 50) is None


def test_a_level_reduces_to_its_percentiles_and_rates() -> None:
    recs = [record(i, ttft_ms=10.0 * (i + 1), intended_ms=100.0 * i) for i in range(5)]
    s = summarise(level(recs))
    assert s.mode == "closed" and s.level == 2.0 and s.requests == s.completed == 5
    assert s.ttft_ms.n == 5 and s.ttft_ms.p50 == pytest.approx(30.0)
    assert s.itl_ms.n == 10 and s.itl_ms.p99 == pytest.approx(5.0)
    assert s.e2e_ms.p50 == pytest.approx(40.0)
    # The last request ends at 400 + 50 + 10 ms: 15 tokens and 5 requests over 0.46 s.
    assert s.span_s == pytest.approx(0.46)
    assert s.output_tokens == 15 and s.output_tok_s == pytest.approx(15 / 0.46)
    assert s.req_s == pytest.approx(5 / 0.46)
    assert s.good is None and s.goodput_req_s is None and s.lag_flag is None


def test_failed_requests_are_counted_by_kind_and_left_out_of_latencies() -> None:
    recs = [
        record(0),
        record(1, ttft_ms=999.0, error="HTTP 500: 'boom'"),
        record(2, error="HTTP 500: 'again'"),
        record(3, error="cannot connect: ConnectionRefusedError(111)"),
    ]
    s = summarise(level(recs))
    assert s.completed == 1 and s.errors == (("HTTP 500", 2), ("cannot connect", 1))
    assert s.ttft_ms.n == 1 and s.ttft_ms.p99 == pytest.approx(10.0)


def test_goodput_counts_the_requests_that_meet_every_target() -> None:
    recs = [
        record(0, ttft_ms=10.0),
        record(1, ttft_ms=50.0),  # misses ttft
        record(2, gaps_ms=(20.0, 20.0)),  # misses itl (mean 20 ms)
        record(3, gaps_ms=(1.0, 9.0)),  # mean itl 5 ms: meets it
    ]
    s = summarise(level(recs), Slo(ttft_ms=20.0, itl_ms=8.0))
    assert s.good == 2 and s.goodput_req_s == pytest.approx(2 / s.span_s)
    # e2e: 20, 60, 50 and 20 ms; only record 1 misses 55 ms.
    assert summarise(level(recs), Slo(e2e_ms=55.0)).good == 3


def test_a_client_lag_over_the_bound_flags_the_level() -> None:
    calm = summarise(level([record(i, chunk_lag_ms=0.2) for i in range(3)]))
    assert calm.lag_flag is None and calm.client_lag_ms.p99 == pytest.approx(0.2)
    # 132 lag samples (a send and 3 chunks per request), the top 3 of them 5 ms: p99 is 5 ms.
    busy = [record(i, chunk_lag_ms=0.2) for i in range(30)]
    busy += [record(30 + i, send_lag_ms=5.0) for i in range(3)]
    s = summarise(level(busy), lag_bound_ms=1.0)
    assert s.client_lag_ms.n == 33 * 4 and s.client_lag_ms.p99 == pytest.approx(5.0)
    assert s.lag_flag is not None
    assert "exceeds the bound 1 ms" in s.lag_flag
    assert summarise(level(busy), lag_bound_ms=10.0).lag_flag is None


def test_usage_that_is_not_ok_is_counted_and_tokens_come_from_chunks() -> None:
    recs = [record(0), record(1, usage=Usage("unknown", reason="no usage in the stream"))]
    s = summarise(level(recs))
    assert s.usage == (("ok", 1), ("unknown", 1)) and s.tokens_from_chunks == 1
    assert s.output_tokens == 6


@pytest.mark.parametrize(
    "load",
    [ClosedLoop(2, None, duration_s=1.0), OpenLoop(rate=5.0, requests=4, seed=0, duration_s=1.0)],
)
def test_a_timed_level_divides_by_its_first_send_to_its_last_end(load: Any) -> None:
    # The first request is sent 120 ms after the level's start: a timed level's span starts
    # there, a counted level's at its start.
    recs = [record(i, intended_ms=120.0 + 100.0 * i, send_lag_ms=2.0) for i in range(4)]
    timed = summarise(level(recs, load=load))
    # the last ends at 420 + 10 + 10 ms (its ttft and gaps count from the intended time)
    assert timed.span_s == pytest.approx((440.0 - 122.0) / 1000)
    assert timed.span_from == "first send"
    assert timed.output_tok_s == pytest.approx(12 / timed.span_s)
    counted = summarise(level(recs))
    assert counted.span_s == pytest.approx(0.44) and counted.span_from == "level start"


def test_an_open_level_is_named_by_its_rate() -> None:
    s = summarise(level([record(0)], load=OpenLoop(rate=7.5, requests=1, seed=0)))
    assert s.mode == "open" and s.level == 7.5


def test_a_long_error_kind_is_shortened() -> None:
    assert error_kind("x" * 100).endswith("...") and len(error_kind("x" * 100)) == 60
