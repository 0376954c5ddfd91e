"""Deadlines, duration estimates, and which sessions a deadline drops."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.errors import OptionError
from pytest_mtpsweep.ladder import run_plan, session_label
from pytest_mtpsweep.options import parse_deadline, parse_duration
from pytest_mtpsweep.protocol.schedule import (
    estimate_s,
    plan_drops,
)


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
