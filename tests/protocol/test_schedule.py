"""Deadlines, duration estimates, and which sessions a deadline drops."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.base.errors import Curtailed, OptionError
from pytest_mtpsweep.ladder import SessionSlot, run_plan, session_label
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.protocol.schedule import Schedule, estimate_s, plan_drops
from pytest_mtpsweep.wishes.options import parse_deadline, parse_duration


class TestParsing:
    @pytest.mark.parametrize(
        ("text", "seconds"),
        [("90s", 90), ("10m", 600), ("1h30m", 5400), ("2h", 7200), ("1h0m5s", 3605)],
    )
    def test_durations(self, text: str, seconds: float) -> None:
        assert parse_duration(text) == seconds

    @pytest.mark.parametrize("text", ["", "10", "ten minutes", "5d", "m"])
    def test_bad_durations_show_the_format(self, text: str) -> None:
        with pytest.raises(OptionError, match="like 90s, 10m, 1h30m or 2h"):
            parse_duration(text)

    def test_deadline_later_today_or_tomorrow(self) -> None:
        now = dt.datetime(2026, 8, 11, 0, 8)
        assert parse_deadline("04:00", now) == dt.datetime(2026, 8, 11, 4, 0)
        assert parse_deadline("00:05", now) == dt.datetime(2026, 8, 12, 0, 5)

    @pytest.mark.parametrize("text", ["25:00", "4pm", "04:60", ""])
    def test_bad_deadlines(self, text: str) -> None:
        with pytest.raises(OptionError, match="HH:MM"):
            parse_deadline(text, dt.datetime(2026, 1, 1))


class TestEstimate:
    def test_none_before_any_session(self) -> None:
        assert estimate_s([], 16) is None

    def test_scales_with_planned_measurements(self) -> None:
        assert estimate_s([(32.0, 16), (48.0, 16)], 8) == pytest.approx(20.0)


slots = run_plan(["none", "a", "b"], 2)
labels = [session_label(s) for s in slots]


@given(
    st.lists(st.floats(1, 100), min_size=6, max_size=6),
    st.floats(-10, 700),
    st.permutations(labels[:-1]),
)
def test_drops_follow_the_registered_order_and_spare_the_never_drop(
    secs: list[float], left: float, order: list[str]
) -> None:
    remaining = list(zip(slots, secs, strict=True))
    dropped = plan_drops(remaining, left, tuple(order), labels[-1])
    names = [session_label(s) for s in dropped]
    assert names == order[: len(names)]  # a prefix of the drop order, in that order
    assert labels[-1] not in names
    kept = sum(sec for s, sec in remaining if s not in dropped)
    if len(names) < len(order):
        assert kept <= left  # it stopped dropping only once the rest fits
    if names:
        # without its last drop the rest did not fit, so nothing was dropped needlessly
        assert kept + dict(remaining)[dropped[-1]] > left


def test_nothing_dropped_when_it_fits() -> None:
    remaining = [(s, 10.0) for s in slots]
    assert plan_drops(remaining, 60.0, tuple(labels[:-1]), labels[-1]) == []


LOWERARM = Path(__file__).resolve().parents[2] / "experiments" / "ladders" / "lowerarm-cpu.toml"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def schedule(deadline_in: float) -> tuple[Schedule, list[SessionSlot], Clock, list[dict[str, Any]]]:
    """lowerarm-cpu's plan (none, gate_0.10, gate_0.25, then reversed), 16 measurements each."""
    ladder = load_ladder(LOWERARM)
    plan = run_plan(ladder.treatment_keys, ladder.cycles)
    clock = Clock()
    sch = Schedule.for_run(ladder, plan, {s.name: 16 for s in plan}, clock() + deadline_in, set())
    sch.clock, sch.deadline_label = clock, "04:00"
    docs: list[dict[str, Any]] = []
    return sch, plan, clock, docs


def run_session(sch: Schedule, slot: SessionSlot, clock: Clock, seconds: float) -> None:
    clock.now += seconds
    sch.ran.append(slot.name)
    sch.record(seconds, 16)


class TestDeadline:
    def test_the_drop_order_plans_away_while_the_deadline_is_ahead(self) -> None:
        sch, plan, clock, docs = schedule(deadline_in=3 * 100 + 250)
        for slot in plan[:3]:
            sch.check(slot, docs.append)
            run_session(sch, slot, clock, 100.0)
        # 250 s left, three sessions of ~100 s to go: the first in the drop order goes
        with pytest.raises(Curtailed, match=r"dropped gate_0\.25:c2 .pre-registered drop order"):
            sch.check(plan[3], docs.append)
        assert [d["session"] for d in docs[-1]["dropped"]] == ["04_gate_0.25_c2"]
        assert "deadline_stop" not in docs[-1]
        sch.check(plan[4], docs.append)  # gate_0.10:c2 fits now
        run_session(sch, plan[4], clock, 100.0)
        sch.check(plan[5], docs.append)  # none:c2 is never dropped, and the deadline is ahead
        assert sch.stopped_by_deadline is None

    def test_the_deadline_stops_the_run_after_the_current_session_always(self) -> None:
        sch, plan, clock, docs = schedule(deadline_in=150)
        sch.check(plan[0], docs.append)
        run_session(sch, plan[0], clock, 100.0)
        sch.check(plan[1], docs.append)  # 50 s left: both c2 gates are planned away now
        assert sorted(sch.dropped) == ["04_gate_0.25_c2", "05_gate_0.10_c2"]
        run_session(sch, plan[1], clock, 100.0)  # the deadline passes during session 2
        for slot in (plan[2], plan[5]):
            with pytest.raises(Curtailed, match=r"deadline \(04:00\) had passed.*after 02_gate"):
                sch.check(slot, docs.append)
        stop = docs[-1]["deadline_stop"]
        # the never-drop session too: the deadline is a hard cap
        assert stop == {"deadline": "04:00", "after": plan[1].name,
                        "not_run": [plan[2].name, plan[5].name]}  # fmt: skip
        assert [d["session"] for d in docs[-1]["dropped"]] == [s.name for s in plan[2:]]
        assert docs[-1]["affected_treatments"] == ["gate_0.10", "gate_0.25", "none"]
