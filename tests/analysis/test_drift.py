"""The history's drift test: its invariances (hypothesis), and its false-alarm rate by
simulation, which must stay under its bound while the naive rule's must not."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_mtpsweep.analysis.drift import (
    ALLOWANCE,
    CLIP,
    THRESHOLD,
    Point,
    cusum,
    drift,
    naive_runs,
    sparkline,
    standardised,
)
from tests.history_drift_sim import SCENARIOS, Rate, Scenario, simulate

REPS = 2000  # Monte Carlo SE of a 2 % rate: 0.003
GATES = 20

zs = st.lists(st.one_of(st.none(), st.floats(-8, 8, allow_nan=False)), min_size=1, max_size=60)


def _points(draw: st.DrawFn) -> list[Point]:
    n = draw(st.integers(1, 40))
    out = []
    for _ in range(n):
        e = draw(st.floats(-20, 20, allow_nan=False))
        below = draw(st.floats(0.01, 10))
        above = draw(st.floats(0.01, 10))
        out.append(Point(e, e - below, e + above))
    return out


points = st.composite(_points)()


@settings(deadline=None)  # a shared CI host's load is no property of the test
@given(points, st.sampled_from([0.125, 0.5, 2.0, 4.0, 16.0]))
def test_the_unit_does_not_matter(ps: list[Point], c: float) -> None:
    # percent or fraction, the same history: scaling estimate and interval by c changes nothing
    scaled = [Point(p.estimate * c, p.lower * c, p.upper * c) for p in ps]
    assert drift(ps).flagged == drift(scaled).flagged
    assert drift(ps).statistic == pytest.approx(drift(scaled).statistic)


@settings(deadline=None)  # a shared CI host's load is no property of the test
@given(zs, st.integers(0, 59))
def test_a_later_gate_never_changes_an_earlier_verdict(z: list[float | None], cut: int) -> None:
    whole, prefix = cusum(z), cusum(z[:cut])
    assert whole.statistic[:cut] == prefix.statistic
    assert whole.flagged[:cut] == prefix.flagged


@settings(deadline=None)  # a shared CI host's load is no property of the test
@given(zs, st.data())
def test_a_better_gate_never_raises_the_statistic(
    z: list[float | None], data: st.DataObject
) -> None:
    i = data.draw(st.integers(0, len(z) - 1))
    zi = z[i]
    if zi is None:
        return  # an unusable gate has no value to raise
    better = list(z)
    better[i] = zi + data.draw(st.floats(0, 10))
    before, after = cusum(z), cusum(better)
    assert all(a <= b + 1e-12 for a, b in zip(after.statistic, before.statistic, strict=True))


@settings(deadline=None)  # a shared CI host's load is no property of the test
@given(st.lists(st.floats(-ALLOWANCE, 50, allow_nan=False), min_size=1, max_size=60))
def test_no_loss_beyond_the_allowance_never_flags(z: list[float]) -> None:
    d = cusum(z)
    assert set(d.statistic) == {0.0} and not any(d.flagged) and d.since is None


@settings(deadline=None)  # a shared CI host's load is no property of the test
@given(zs)
def test_one_gate_moves_the_statistic_by_at_most_clip_plus_allowance(z: list[float | None]) -> None:
    s = (0.0, *cusum(z).statistic)
    assert all(b - a <= CLIP + ALLOWANCE + 1e-12 for a, b in itertools.pairwise(s))
    # and a gate without an interval leaves it where it was
    assert all(s[i + 1] == s[i] for i, zi in enumerate(z) if zi is None)


def test_a_run_of_small_losses_is_flagged_and_dated() -> None:
    # 7 gates each -0.9 SE (no single 95 % interval excludes 0), after 3 flat ones
    z = [0.5, -0.2, 0.4] + [-0.9] * 7
    d = cusum(z)
    assert d.now and d.since == 3
    assert d.statistic[-1] == pytest.approx(7 * (0.9 - ALLOWANCE))
    assert not cusum(z[:8]).now  # 5 such losses are not yet beyond h
    assert not cusum([*z, 3.0, 3.0, 3.0, 3.0]).now  # gains bring it back


def test_an_interval_reads_as_its_standard_error() -> None:
    assert standardised(Point(-2.0, -2.0 - 1.959964, -2.0 + 1.959964)) == pytest.approx(-2.0)
    assert standardised(Point(-2.0, -3.0, -1.0, confidence=0.6827)) == pytest.approx(-2.0, rel=1e-3)
    for bad in (Point(1, 1, 1), Point(1, 2, 0), Point(math.inf, 0, 1), Point(0, -1, 1, 1.0)):
        assert standardised(bad) is None


def test_the_naive_rule_and_the_sparkline() -> None:
    assert naive_runs([-1, -1, 1, -1, -1, -1]) == (False, False, False, False, False, True)
    assert sparkline([0, None, 7]) == "▁ █" and sparkline([None]) == " "
    assert sparkline([2, 2]) == "▁▁"


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s.effect == 0], ids=lambda s: s.name)
def test_false_alarms_stay_under_the_bound_and_the_naive_rule_does_not(scenario: Scenario) -> None:
    got = simulate(scenario, REPS, GATES, 4242)
    # ours: 0.7 % (honest SEs) and 2.9 % (SEs √3 too small) in bench/history_drift.py
    assert got.cusum.wilson()[1] <= 0.05, got.cusum
    # three losses in a row: ~78 % of no-change histories of 20 gates; it must keep failing
    assert got.naive.rate >= 0.5, got.naive


def test_a_slow_drift_no_single_gate_catches_is_found() -> None:
    s = next(s for s in SCENARIOS if s.effect < 0 and not s.narrow)
    got = simulate(s, REPS, GATES, 77)
    assert got.gate_losses <= 0.1  # almost every gate alone says nothing
    assert got.cusum.rate >= 0.45, got.cusum  # 60 % within 20 gates in the bench


def test_the_wilson_interval_holds_its_rate() -> None:
    lo, hi = Rate(14, 2000).wilson()
    assert lo < 0.007 < hi and hi < 0.012
    assert Rate(0, 10).wilson()[0] == 0.0 and THRESHOLD > 0
