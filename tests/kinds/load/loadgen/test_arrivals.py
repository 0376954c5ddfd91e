"""The seeded request schedule: the same for a seed, Poisson-like at its rate."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.load.loadgen.arrivals import (
    MAX_RATE,
    MAX_SCHEDULE,
    MIN_RATE,
    NS_PER_S,
    first_arrival_ns,
    poisson_schedule,
    poisson_until,
    prompt_order,
)

SEEDS = st.integers(min_value=0, max_value=2**63)
RATES = st.floats(min_value=0.05, max_value=5000.0, allow_nan=False)


@given(rate=RATES, n=st.integers(0, 300), seed=SEEDS)
def test_a_schedule_is_a_pure_function_of_rate_count_and_seed(
    rate: float, n: int, seed: int
) -> None:
    one = poisson_schedule(rate, n, seed)
    assert one == poisson_schedule(rate, n, seed)
    assert len(one) == n
    assert list(one) == sorted(one) and all(t >= 0 for t in one)


@given(rate=RATES, duration_s=st.floats(0.001, 2.0), seed=SEEDS)
def test_a_timed_schedule_is_the_seeded_schedule_up_to_its_duration(
    rate: float, duration_s: float, seed: int
) -> None:
    timed = poisson_until(rate, duration_s, seed)
    assert timed == poisson_until(rate, duration_s, seed)  # the same for every treatment
    # exactly the arrivals of the counted schedule that fall within the duration
    longer = poisson_schedule(rate, len(timed) + 1, seed)
    assert timed == longer[: len(timed)]
    assert all(t <= round(duration_s * NS_PER_S) for t in timed)
    assert longer[-1] > round(duration_s * NS_PER_S)


def test_a_timed_schedule_depends_on_its_seed_and_is_refused_without_a_duration() -> None:
    assert poisson_until(50.0, 2.0, 1) != poisson_until(50.0, 2.0, 2)
    assert 60 < len(poisson_until(50.0, 2.0, 1)) < 140  # ~100 arrivals in 2 s at 50/s
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="not a positive number of seconds"):
            poisson_until(5.0, bad, 0)


def test_another_seed_gives_another_schedule() -> None:
    assert poisson_schedule(10.0, 50, 1) != poisson_schedule(10.0, 50, 2)


def test_a_longer_schedule_begins_as_the_shorter_one() -> None:
    # The first requests of a level do not depend on how many follow.
    assert poisson_schedule(4.0, 200, 7)[:50] == poisson_schedule(4.0, 50, 7)


@settings(max_examples=20, deadline=None)
@given(rate=RATES, seed=SEEDS)
def test_gaps_are_exponential_with_mean_one_over_rate(rate: float, seed: int) -> None:
    n = 10_000
    times = poisson_schedule(rate, n, seed)
    gaps = [b - a for a, b in itertools.pairwise((0, *times))]
    mean_s = sum(gaps) / n / 1e9
    # The mean of n exponential gaps has a relative sd of 1/sqrt(n) = 1 %: 5 % is 5 sd.
    assert mean_s == pytest.approx(1 / rate, rel=0.05)
    # Exponential, not merely the right mean: half the gaps fall under mean * ln 2 (sd 0.5 %),
    # and a third of them exceed the mean (e^-1 = 0.368). Evenly spaced arrivals fail both.
    below_median = sum(g / 1e9 < math.log(2) / rate for g in gaps) / n
    above_mean = sum(g / 1e9 > 1 / rate for g in gaps) / n
    assert below_median == pytest.approx(0.5, abs=0.025)
    assert above_mean == pytest.approx(math.exp(-1), abs=0.025)


@pytest.mark.parametrize("rate", [0.0, -1.0, math.inf, math.nan])
def test_a_rate_that_is_not_positive_and_finite_is_refused(rate: float) -> None:
    with pytest.raises(ValueError, match="positive number of requests/s"):
        poisson_schedule(rate, 3, 0)


@given(n=st.integers(0, 200), n_prompts=st.integers(1, 17), seed=SEEDS)
def test_prompt_order_uses_every_prompt_equally_often(n: int, n_prompts: int, seed: int) -> None:
    order = prompt_order(n, n_prompts, seed)
    assert order == prompt_order(n, n_prompts, seed) and len(order) == n
    counts = Counter(order)
    assert set(counts) <= set(range(n_prompts))
    if n >= n_prompts:
        assert max(counts.values()) - min(counts[p] for p in range(n_prompts)) <= 1


def test_an_empty_prompt_set_is_refused() -> None:
    with pytest.raises(ValueError, match="prompt set is empty"):
        prompt_order(3, 0, 0)


@pytest.mark.parametrize("rate", [MIN_RATE / 2, 1e-300, MAX_RATE * 2, 1e300])
def test_a_rate_outside_its_bounds_is_refused_before_a_draw(rate: float) -> None:
    # 1e-300 once drew a gap of ~1e300 s and overflowed its conversion to ns
    with pytest.raises(ValueError, match=r"outside 0\.001 to 1e\+06 requests/s"):
        poisson_schedule(rate, 3, 0)
    with pytest.raises(ValueError, match="outside"):
        first_arrival_ns(rate, 0)


def test_a_schedule_past_its_bound_is_refused_before_a_draw() -> None:
    # 2·10⁶ expected arrivals: a regression draws them (a second, 100 MB) and fails here
    with pytest.raises(ValueError, match="at most 1000000 per level"):
        poisson_until(MAX_RATE, 2.0, 0)
    with pytest.raises(ValueError, match="give at most that many"):
        poisson_schedule(5.0, MAX_SCHEDULE + 1, 0)
    with pytest.raises(ValueError, match="give at most that many"):
        prompt_order(MAX_SCHEDULE + 1, 3, 0)


@given(rate=RATES, seed=SEEDS)
def test_the_first_arrival_is_the_schedules_first(rate: float, seed: int) -> None:
    assert first_arrival_ns(rate, seed) == poisson_schedule(rate, 1, seed)[0]
