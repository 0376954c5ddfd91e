"""The drafting mechanism's cost model and intervals (kinds/decode/analysis/drafting.py, issue 49)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.decode.analysis import drafting as mech
from tests.mechanism_sim import Scenario, coverage


def test_expected_length_is_one_plus_the_running_products() -> None:
    assert mech.expected_length([0.9, 0.6, 0.3]) == pytest.approx(1 + 0.9 + 0.54 + 0.162)
    assert mech.expected_length([]) == 1.0


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8))
def test_expected_length_stays_within_one_and_k_plus_one(rates: list[float]) -> None:
    assert 1.0 <= mech.expected_length(rates) <= len(rates) + 1 + 1e-9


@pytest.mark.parametrize(
    ("rates", "why"),
    [([0.5, 0.7], "rises from 0.5 at position 1 to 0.7 at 2"), ([1.2], "not a rate")],
)
def test_per_position_rates_that_cannot_be(rates: list[float], why: str) -> None:
    assert why in (mech.per_position_problem(rates) or "")
    assert mech.per_position_problem([0.9, 0.6, 0.6]) is None


def _cell(steps: float, drafted: float, accepted: float, ms: float) -> mech.CellCounts:
    one = np.ones((6, 2))
    return mech.CellCounts(
        tokens=one * (steps + accepted), steps=one * steps, drafted=one * drafted,
        accepted=one * accepted, ms=one * ms, base_tokens=one * 10.0, base_ms=one * 100.0,
    )  # fmt: skip


def test_ratios_break_even_ceiling_and_a_fitted_line() -> None:
    # T1 = 10 ms. Arm k2: 10 steps, 20 drafted, 10 accepted, 15 ms a step; arm k4: 40 drafted,
    # 14 accepted, 20 ms a step. Step cost in plain steps: 1.5 at k 2 and 2.0 at k 4.
    got = mech.subset_mechanism(
        {"k2": _cell(10, 20, 10, 150), "k4": _cell(10, 40, 14, 200)},
        boot=50, seed=1, subset="s", df=5,
    )  # fmt: skip
    k2 = got["k2"]
    assert k2.mean_len.value == pytest.approx(2.0)
    assert k2.k_bar.value == pytest.approx(2.0)
    assert k2.acceptance.value == pytest.approx(0.5)
    assert k2.step_ratio.value == pytest.approx(1.5)  # the break-even E[L]
    assert k2.ceiling.value == pytest.approx(3.0 / 1.5)
    assert k2.measured.value == pytest.approx(2.0 / 1.5)
    assert k2.fitted and k2.predicted.value == pytest.approx(k2.measured.value)
    assert k2.efficiency.value == pytest.approx(1.0)
    assert k2.verdict == mech.SAVES  # every resample is the same: a zero-width interval
    fixed, per_draft = mech.cost_line(
        {"k2": _cell(10, 20, 10, 150), "k4": _cell(10, 40, 14, 200)},
        boot=50, seed=1, subset="s", df=5,
    )  # fmt: skip
    assert (fixed.value, per_draft.value) == pytest.approx((1.0, 0.25))


def test_one_arm_has_no_fit_and_no_efficiency() -> None:
    got = mech.subset_mechanism({"k2": _cell(10, 20, 2, 150)}, boot=50, seed=1, subset="s", df=5)
    m = got["k2"]
    assert not m.fitted and np.isnan(m.efficiency.value)
    assert m.predicted.value == pytest.approx(m.measured.value)
    assert m.verdict == mech.COSTS  # 1.2 tokens a step against a break-even of 1.5


def test_an_arm_that_drafted_nothing_is_named_so() -> None:
    got = mech.subset_mechanism({"k0": _cell(10, 0, 0, 90)}, boot=50, seed=1, subset="s", df=5)
    assert got["k0"].verdict == mech.DRAFTED_NONE


def test_verdict_follows_the_interval_of_the_measured_speedup() -> None:
    assert mech.verdict(mech.Estimate(1.1, 0.9, 1.3), 5) == mech.CANNOT_TELL
    assert mech.verdict(mech.Estimate(0.8, 0.7, 0.9), 5) == mech.COSTS
    assert mech.verdict(mech.Estimate(1.3, 1.1, 1.5), 5) == mech.SAVES


def test_the_coverage_simulation_at_small_size() -> None:
    # bench/mechanism_coverage.py at 24 replications: the intervals hold the planted truth,
    # the naive per-request average with requests taken as independent does not.
    got = coverage(Scenario(prompts=24, cycles=4), reps=24, boot=120)
    assert got["mean_len"] >= 0.9 and got["predicted"] >= 0.85
    assert got["naive_tokens_per_step"] < got["mean_len"]
