"""The concurrent streaming client against the stand-in server, whose schedule is known:
closed loop holds N in flight, open loop keeps to its schedule and counts latency from it,
failures are records, and nothing of a key is kept."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.kinds.load.loadgen.arrivals import (
    poisson_schedule,
    poisson_until,
    prompt_order,
)
from pytest_mtpsweep.kinds.load.loadgen.level import ClosedLoop, OpenLoop, run_level
from pytest_mtpsweep.kinds.load.loadgen.payload import (
    LoadPrompt,
    LoadSpec,
    LoadTarget,
    check_target,
)
from pytest_mtpsweep.kinds.load.loadgen.reads import sse_lines
from pytest_mtpsweep.kinds.load.loadgen.summary import summarise
from pytest_mtpsweep.rig.net import free_port

STAND_IN = Path(__file__).resolve().parents[3] / "stub_stream_schedule_server.py"
MS = 1_000_000
HI = [LoadPrompt("p0", "hello"), LoadPrompt("p1", "again")]


@dataclass
class StandIn:
    url: str
    proc: subprocess.Popen[str]

    def stats(self) -> dict[str, int]:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{self.url}/stats", timeout=5) as resp:
            out: dict[str, int] = json.loads(resp.read())
            return out

    def target(self, **kw: Any) -> LoadTarget:
        return LoadTarget(self.url, "stand-in", **kw)


@pytest.fixture
def stand_in() -> Iterator[Callable[..., StandIn]]:
    """Start stand-ins with the flags given; every one is stopped at the end of the test."""
    started: list[subprocess.Popen[str]] = []

    def start(*flags: str) -> StandIn:
        proc = subprocess.Popen(
            [sys.executable, str(STAND_IN), *flags], stdout=subprocess.PIPE, text=True
        )
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on "), line
        return StandIn(f"http://{line.split()[-1]}", proc)

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=10)


def spec(tokens: int = 4, **kw: Any) -> LoadSpec:
    return LoadSpec(max_tokens=tokens, **kw)


def test_closed_loop_keeps_exactly_n_in_flight(stand_in: Callable[..., StandIn]) -> None:
    s = stand_in("--ttft-ms", "5", "--itl-ms", "2")
    run = run_level(s.target(), spec(), HI, ClosedLoop(4, 20), timeout_s=30)
    stats = s.stats()
    # The server's own witness: it saw 4 at once, never 5, and every request.
    assert stats["max_in_flight"] == 4 and stats["requests"] == 20
    assert all(r.ok for r in run.records) and [r.index for r in run.records] == list(range(20))
    assert {r.slot for r in run.records} == {0, 1, 2, 3}
    assert [r.prompt_id for r in run.records[:4]] == ["p0", "p1", "p0", "p1"]
    for lane in range(4):  # a lane sends its next request only once its last one has ended
        mine = sorted((r for r in run.records if r.slot == lane), key=lambda r: r.t_intended_ns)
        for a, b in itertools.pairwise(mine):
            assert a.t_end_ns is not None and b.t_intended_ns >= a.t_end_ns
    assert all(r.send_lag_ns is not None and r.send_lag_ns >= 0 for r in run.records)


def test_a_timed_closed_loop_sends_slot_k_with_the_same_prompt_on_any_server(
    stand_in: Callable[..., StandIn],
) -> None:
    prompts = [LoadPrompt(f"p{i}", f"prompt {i}") for i in range(5)]
    order = [prompts[i] for i in prompt_order(10, len(prompts), seed=9)]  # cycled past 10
    runs = [
        run_level(stand_in(*flags).target(), spec(), order, ClosedLoop(2, None, 0.4), timeout_s=30)
        for flags in (("--ttft-ms", "2", "--itl-ms", "1"), ("--ttft-ms", "20", "--itl-ms", "6"))
    ]
    fast, slow = (r.records for r in runs)
    assert len(fast) > len(slow) > 2  # the faster server reaches more slots in the same time
    for run in runs:
        assert [r.index for r in run.records] == list(range(len(run.records)))
        assert [r.prompt_id for r in run.records] == [
            order[i % len(order)].id for i in range(len(run.records))
        ]
        # every slot was taken before the duration ended, and finished after it if it must
        until = run.t_start_ns + 400 * MS
        assert all(r.t_intended_ns < until and r.ok for r in run.records)
        assert run.load.duration_s == 0.4 and not run.timed_out
    assert [r.prompt_id for r in fast[: len(slow)]] == [r.prompt_id for r in slow]


def test_a_timed_open_loop_sends_the_seeded_arrivals_within_its_duration(
    stand_in: Callable[..., StandIn],
) -> None:
    s = stand_in("--ttft-ms", "2", "--itl-ms", "1")
    load = OpenLoop.within(100.0, 0.3, seed=5)
    assert load.schedule == poisson_until(100.0, 0.3, 5) and load.duration_s == 0.3
    run = run_level(s.target(), spec(), HI, load, timeout_s=30)
    assert [r.t_intended_ns - run.t_start_ns for r in run.records] == list(load.schedule)
    assert all(r.ok for r in run.records) and s.stats()["requests"] == load.requests


def test_open_loop_sends_at_the_schedules_times(stand_in: Callable[..., StandIn]) -> None:
    s = stand_in("--ttft-ms", "2", "--itl-ms", "1")
    load = OpenLoop(rate=200.0, requests=25, seed=3)
    run = run_level(s.target(), spec(), HI, load, timeout_s=30)
    offsets = [r.t_intended_ns - run.t_start_ns for r in run.records]
    assert offsets == list(poisson_schedule(200.0, 25, 3))
    assert all(r.ok and r.slot == -1 for r in run.records)
    assert all(r.send_lag_ns is not None and r.send_lag_ns >= 0 for r in run.records)  # never early
    assert s.stats()["requests"] == 25


def test_open_loop_counts_latency_from_the_intended_time_when_the_server_queues(
    stand_in: Callable[..., StandIn],
) -> None:
    # One slot serving a request in >= 25 ms, asked for one every ~5 ms: the queue grows.
    s = stand_in("--ttft-ms", "20", "--itl-ms", "1", "--slots", "1")
    service_ns = (20 + 4 * 1) * MS
    run = run_level(s.target(), spec(5), HI, OpenLoop(200.0, 12, seed=1), timeout_s=30)
    assert s.stats()["max_queued"] >= 1
    first = run.records[0].t_intended_ns
    assert all(r.ok and r.e2e_ns is not None and r.t_end_ns is not None for r in run.records)
    # One slot serves one at a time: the k-th request to end cannot end before k + 1 services
    # from the first arrival (by end, not by index: on a busy host a connection that opens
    # late lets a later request take the slot first). Counted from its own intended time,
    # its latency must show that wait.
    by_end = sorted(run.records, key=lambda r: r.t_end_ns or 0)
    for k, r in enumerate(by_end):
        assert r.e2e_ns is not None
        assert r.e2e_ns >= first + (k + 1) * service_ns - r.t_intended_ns, (k, r)
    assert run.records[-1].ttft_ns > 5 * run.records[0].ttft_ns  # type: ignore[operator]


def test_open_loop_latency_includes_a_send_the_client_held_back(
    stand_in: Callable[..., StandIn],
) -> None:
    # At most one in flight on the client's side: later sends wait, and the record says so.
    s = stand_in("--ttft-ms", "10", "--itl-ms", "1")
    load = OpenLoop(rate=500.0, requests=8, seed=2, max_in_flight=1)
    run = run_level(s.target(), spec(3), HI, load, timeout_s=30)
    first = run.records[0].t_intended_ns
    service_ns = (10 + 2) * MS
    for i, r in enumerate(run.records):
        assert r.ok and r.send_lag_ns is not None and r.ttft_ns is not None
        assert r.send_lag_ns >= first + i * service_ns - r.t_intended_ns
        assert r.ttft_ns >= r.send_lag_ns + 10 * MS
    assert s.stats()["max_in_flight"] == 1


def test_inter_token_latency_follows_the_known_schedule(stand_in: Callable[..., StandIn]) -> None:
    s = stand_in("--ttft-ms", "20", "--itl-ms", "10")
    run = run_level(s.target(), spec(12), HI, ClosedLoop(1, 2), timeout_s=30, keep_raw=True)
    for r in run.records:
        assert r.ok and r.ttft_ns is not None
        assert r.ttft_ns >= 20 * MS  # the stand-in sends no token before it is due
        itl = sorted(r.itl_ns)
        assert itl[len(itl) // 2] == pytest.approx(10 * MS, rel=0.2)
    # Same clock in both processes: no chunk is stamped before the stand-in sent it.
    for raw in run.raw:
        for line, t in sse_lines(raw.pieces, raw.stamps):
            if line.startswith("data: {"):
                assert t >= json.loads(line[6:])["stub"]["sent_ns"]


def test_usage_as_the_server_sent_it_is_judged(stand_in: Callable[..., StandIn]) -> None:
    s = stand_in("--ttft-ms", "1", "--itl-ms", "1")
    prompts = [
        LoadPrompt("none", "x !usage=none"),
        LoadPrompt("neg", 'x !usage={"prompt_tokens":1,"completion_tokens":-3}'),
        LoadPrompt("ok", "x"),
    ]
    run = run_level(s.target(), spec(3), prompts, ClosedLoop(1, 3), timeout_s=30)
    status = {r.prompt_id: r.usage.status for r in run.records}
    assert status == {"none": "unknown", "neg": "malformed", "ok": "ok"}
    assert all(r.ok and r.output_tokens == 3 for r in run.records)


def test_an_answer_from_another_model_is_an_invalid_request_with_its_reason(
    stand_in: Callable[..., StandIn],
) -> None:
    s = stand_in("--ttft-ms", "1", "--itl-ms", "1")
    prompts = [LoadPrompt("other", "x !model=someone-else"), LoadPrompt("ok", "x"),
               LoadPrompt("none", "x !model=none")]  # fmt: skip
    run = run_level(s.target(), spec(3), prompts, ClosedLoop(1, 3), timeout_s=30, warmup=1)
    by = {r.prompt_id: r for r in run.records}
    assert by["other"].error == "wrong server answered: model ['someone-else'] != alias 'stand-in'"
    assert by["none"].error == "no model field in the stream: the alias witness is missing"
    assert by["ok"].ok and by["ok"].model == "stand-in"
    summary = summarise(run)
    assert summary.completed == 1 and dict(summary.errors)["wrong server answered"] == 1
    # a whole server serving another model: every request of the level, warm-up included
    other = stand_in("--ttft-ms", "1", "--itl-ms", "1", "--model", "qwen-other")
    run = run_level(other.target(), spec(3), HI, ClosedLoop(2, 4), timeout_s=30, warmup=1)
    assert not any(r.ok for r in (*run.records, *run.warmup))
    assert {r.model for r in run.records} == {"qwen-other"}


def test_failures_are_records_not_exceptions(stand_in: Callable[..., StandIn]) -> None:
    s = stand_in("--ttft-ms", "1", "--itl-ms", "1")
    prompts = [
        LoadPrompt("500", "x !status=500"),
        LoadPrompt("cut", "x !truncate=2"),
        LoadPrompt("slow", "x !ttft_ms=3000"),
        LoadPrompt("ok", "x"),
    ]
    run = run_level(
        s.target(), spec(5, read_timeout_s=0.3), prompts, ClosedLoop(2, 4), timeout_s=30
    )
    by = {r.prompt_id: r for r in run.records}
    assert by["500"].http_status == 500 and (by["500"].error or "").startswith("HTTP 500")
    assert "mid-response" in (by["cut"].error or "") and len(by["cut"].chunks) == 2
    assert "no byte for 0.3 s" in (by["slow"].error or "")
    assert by["ok"].ok
    summary = summarise(run)
    assert summary.completed == 1 and sum(n for _, n in summary.errors) == 3


def test_a_refused_connection_is_a_record_per_request() -> None:
    target = LoadTarget(f"http://127.0.0.1:{free_port()}", "nobody")
    run = run_level(target, spec(), HI, ClosedLoop(2, 5), timeout_s=30)
    assert len(run.records) == 5
    assert all((r.error or "").startswith("cannot connect") for r in run.records)


def test_a_full_server_answers_429_and_each_is_recorded(stand_in: Callable[..., StandIn]) -> None:
    s = stand_in("--ttft-ms", "30", "--itl-ms", "1", "--slots", "1", "--max-queue", "0")
    run = run_level(s.target(), spec(2), HI, ClosedLoop(3, 3), timeout_s=30)
    rejected = [r for r in run.records if r.http_status == 429]
    assert len(rejected) == s.stats()["rejected"] >= 1
    assert all((r.error or "").startswith("HTTP 429") for r in rejected)


def test_the_level_timeout_ends_the_level_and_says_what_was_not_sent(
    stand_in: Callable[..., StandIn],
) -> None:
    s = stand_in("--ttft-ms", "400", "--itl-ms", "1")
    run = run_level(s.target(), spec(2), HI, ClosedLoop(1, 3), timeout_s=0.2)
    assert run.timed_out and len(run.records) == 3
    assert "cancelled at the level's timeout" in (run.records[0].error or "")
    assert all("not sent" in (r.error or "") for r in run.records[1:])


def test_the_key_is_sent_from_its_variable_and_kept_nowhere(
    stand_in: Callable[..., StandIn], monkeypatch: pytest.MonkeyPatch
) -> None:
    s = stand_in("--ttft-ms", "1", "--itl-ms", "1")
    monkeypatch.setenv("STANDIN_KEY", "sk-do-not-keep-7f3a")
    run = run_level(s.target(api_key_env="STANDIN_KEY"), spec(), HI, ClosedLoop(1, 2), timeout_s=30)
    assert s.stats()["bearer"] == 2 and all(r.ok for r in run.records)
    assert "sk-do-not-keep-7f3a" not in repr(run)


def test_a_missing_key_variable_is_refused_before_any_request() -> None:
    target = LoadTarget("http://127.0.0.1:9", "m", api_key_env="MTPSWEEP_NO_SUCH_KEY_VAR")
    with pytest.raises(ValueError, match=r"MTPSWEEP_NO_SUCH_KEY_VAR .* is not set"):
        run_level(target, spec(), HI, ClosedLoop(1, 1), timeout_s=1)


@pytest.mark.parametrize(
    "url", ["http://10.1.2.3:8080", "http://example.com", "https://[2001:db8::1]"]
)
def test_a_target_off_loopback_needs_allow_remote(url: str) -> None:
    with pytest.raises(ValueError, match="not on loopback"):
        check_target(LoadTarget(url, "m"))
    check_target(LoadTarget(url, "m", allow_remote=True))


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:2"])
def test_loopback_targets_pass(url: str) -> None:
    check_target(LoadTarget(url, "m"))


def test_warmup_requests_are_kept_apart(stand_in: Callable[..., StandIn]) -> None:
    s = stand_in("--ttft-ms", "1", "--itl-ms", "1")
    run = run_level(s.target(), spec(), HI, ClosedLoop(2, 4), timeout_s=30, warmup=3)
    assert len(run.warmup) == 3 and len(run.records) == 4
    assert s.stats()["requests"] == 7
    assert all(r.t_intended_ns >= run.t_start_ns for r in run.records)


def test_a_key_that_could_break_a_header_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STANDIN_KEY", "sk-1\r\nX-Injected: 1")
    target = LoadTarget("http://127.0.0.1:9", "m", api_key_env="STANDIN_KEY")
    with pytest.raises(ValueError, match="whitespace or control characters"):
        run_level(target, spec(), HI, ClosedLoop(1, 1), timeout_s=1)


@pytest.mark.parametrize(
    ("load", "match"),
    [
        (ClosedLoop(0, 3), "concurrency >= 1"),
        (ClosedLoop(2, -1), "requests must be >= 0"),
        (OpenLoop(5.0, 3, seed=0, max_in_flight=0), "concurrency >= 1"),
        (OpenLoop(0.0, 3, seed=0), "positive number of requests/s"),
        (ClosedLoop(2, None), "requests or duration_s, one of them"),
        (ClosedLoop(2, 3, duration_s=1.0), "requests or duration_s, one of them"),
        (ClosedLoop(2, None, duration_s=0.0), "duration_s must be a positive number"),
    ],
)
def test_a_level_that_cannot_run_is_refused_before_it_starts(load: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        run_level(LoadTarget("http://127.0.0.1:9", "m"), spec(), HI, load, timeout_s=1)


def test_an_empty_prompt_set_is_refused() -> None:
    with pytest.raises(ValueError, match="prompt set is empty"):
        run_level(LoadTarget("http://127.0.0.1:9", "m"), spec(), [], ClosedLoop(1, 1), timeout_s=1)
