"""Timed level blocks (`duration_s`) through the whole protocol, on the two stand-ins of
test_load_kind.py (b streams twice as fast as a): closed loop reaches more slots on the faster
server and the report counts the unpaired ones; open loop sends the seeded arrivals within the
duration, the same in every session; the Design line says "s per block"; `--load-duration`
turns a counted ladder into a timed one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_mtpsweep.kinds.load.ladder import settings
from pytest_mtpsweep.kinds.load.loadgen.arrivals import poisson_until
from pytest_mtpsweep.kinds.load.loadgen.level import ClosedLoop, OpenLoop
from pytest_mtpsweep.kinds.load.run.loadrun import prepare
from pytest_mtpsweep.kinds.load.run.measure import _load
from pytest_mtpsweep.ladder import run_plan
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.wishes.request import RunRequest
from tests.kinds.load.test_ladder import ladder_file
from tests.kinds.load.test_load_kind import LADDER, _csv, lines, run, stand_in_project
from tests.sandbox import CANONICAL, only_run

TIMED = (
    LADDER.replace("requests = 6\n", "duration_s = 2\n")
    .replace("concurrency = [1, 3]\n", "concurrency = [3]\n")
    .replace("rate = [200.0]\n", "rate = [20.0]\n")
)


@pytest.fixture
def timed(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    with stand_in_project(pytester, monkeypatch, TIMED) as urls:
        yield urls


@pytest.fixture
def counted(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    with stand_in_project(pytester, monkeypatch, LADDER) as urls:
        yield urls


def requests_of(records: list[dict[str, object]], level: str) -> list[dict[str, object]]:
    return [r for r in records if r["record"] == "request" and r["level"] == level]


def test_timed_blocks_pair_by_slot_and_the_report_counts_the_unpaired(
    pytester: pytest.Pytester, timed: dict[str, str]
) -> None:
    result = run(pytester)
    result.assert_outcomes(passed=8)
    run_dir = only_run(pytester.path)
    records = {p.stem: lines(p) for p in sorted((run_dir / "records").glob("*.jsonl"))}
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["load"]["duration_s"] == 2 and plan["load"]["requests"] is None
    order = plan["load"]["prompt_order"]

    # closed loop: slot k is order[k] in every session; b reaches more slots than a
    closed = {s: requests_of(recs, "conc3") for s, recs in records.items()}
    for reqs in closed.values():
        assert [r["request"] for r in reqs] == list(range(len(reqs)))
        assert [r["prompt_id"] for r in reqs] == [order[i % len(order)] for i in range(len(reqs))]
        assert all(r["valid"] for r in reqs)
    n = {s: len(reqs) for s, reqs in closed.items()}
    assert n["02_b_c1"] > n["01_a_c1"] and n["03_b_c2"] > n["04_a_c2"]

    # open loop: the seeded arrivals within 2 s, the same in every session
    arrivals = plan["load"]["arrivals_ms"]["rate20"]
    assert arrivals == [round(t / 1e6, 3) for t in poisson_until(20.0, 2.0, 42)]
    assert arrivals and max(arrivals) <= 2000.0
    for recs in records.values():
        opens = requests_of(recs, "rate20")
        assert [r["intended_ms"] for r in opens] == pytest.approx(arrivals, abs=0.01)
        assert [r["prompt_id"] for r in opens] == order[: len(opens)]

    levels = [r for recs in records.values() for r in recs if r["record"] == "level"]
    assert {(r["duration_s"], r["span_from"]) for r in levels} == {(2, "first send")}

    report = (run_dir / "analysis" / "report.md").read_text()
    assert "- 2 s per block (closed loop: new requests while time remains" in report
    assert "throughput over each block's wall time from its first send to its last" in report
    paired = min(n["01_a_c1"], n["02_b_c1"]) + min(n["04_a_c2"], n["03_b_c2"])
    b_done, a_done = n["02_b_c1"] + n["03_b_c2"], n["01_a_c1"] + n["04_a_c2"]
    said = (
        f"conc3: {paired} paired slots, {b_done - a_done} unpaired "
        f"(b completed {b_done}, a {a_done})"
    )
    assert f"- Pairing by slot, b vs a: {said}; rate20: {2 * len(arrivals)} paired slots, " \
        "0 unpaired" in report  # fmt: skip
    rows = {
        (r["endpoint"], r["level"]): r for r in _csv(run_dir / "analysis" / "load_contrasts.csv")
    }
    assert int(rows[("e2e", "conc3")]["n_pairs"]) == paired  # what the contrast pairs, exactly
    prereg = (run_dir / "preregistration.md").read_text()
    assert "duration_s = 2 s each" in prereg and "are unpaired, counted and said" in prereg


def test_load_duration_turns_a_counted_ladder_into_a_timed_one(
    pytester: pytest.Pytester, counted: dict[str, str]
) -> None:
    result = run(pytester, "-k", "conc1", "--load-duration", "1", "--no-analysis")
    result.assert_outcomes(passed=4, deselected=8)
    run_dir = only_run(pytester.path)
    plan = json.loads((run_dir / "plan.json").read_text())
    assert (plan["load"]["requests"], plan["load"]["duration_s"]) == (None, 1.0)
    recs = lines(run_dir / "records" / "01_a_c1.jsonl")
    level = next(r for r in recs if r["record"] == "level")
    # one in flight for 1 s on a's 72 ms requests: about 13 of them, not the ladder's 6
    assert level["duration_s"] == 1.0 and level["requests"] > 6 and level["valid"]


def test_the_schedule_of_a_timed_ladder_is_one_for_every_treatment(tmp_path: Path) -> None:
    path = ladder_file(
        tmp_path, "concurrency = [2]\nrate = [40.0]\nseed = 11", size="duration_s = 3"
    )
    ladder = load_ladder(path)
    s = settings(ladder)
    cases = prepare(ladder, s, RunRequest(ladder=str(path), search_dirs=(), cwd=tmp_path,
                                          invocation=(), prompts_dir=CANONICAL)).cases(
        run_plan(ladder.treatment_keys, 2))  # fmt: skip
    loads = {(c.slot.treatment, c.slot.cycle, c.level.label): _load(s, c, ladder.seed)[0]
             for c in cases}  # fmt: skip
    opens = {v for k, v in loads.items() if k[2] == "rate40"}
    closes = {v for k, v in loads.items() if k[2] == "conc2"}
    assert opens == {OpenLoop.within(40.0, 3.0, 11, s.max_in_flight)}  # one, for every session
    (one,) = opens
    assert isinstance(one, OpenLoop)
    assert one.schedule == poisson_until(40.0, 3.0, 11) != poisson_until(40.0, 3.0, 12)
    assert closes == {ClosedLoop(2, None, 3.0)}
