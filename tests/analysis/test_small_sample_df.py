"""No interval wider than its data allow: the session level's degrees of freedom are floored.

Issue 43, finding 2: a fresh 4-cycle cell at +98 % with an SE of 0.57 % got a Satterthwaite df
of 0.46 and the interval [-53.6 %, +744.9 %]. The session variance is a difference of mean
squares (the cycle means' spread less the residual's share); where the two nearly cancel, the
Satterthwaite df of the sum falls below that of every mean square in it. The floor is the
smallest df among the mean squares that enter with a positive sign: the prompts' n - 1 and the
cycles' k - 1.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mtpsweep.analysis.stats import (
    WITH_SESSION,
    published_interval,
    session_spread,
    t_quantile,
)

Cell = tuple[list[np.ndarray], list[np.ndarray]]


def _cell(seed: int, n: int, k: int, prompt_sd: float, cycle_sd: float, noise_sd: float) -> Cell:
    rng = np.random.default_rng(seed)
    y = (
        0.68
        + rng.normal(0, prompt_sd, size=(n, 1))
        + rng.normal(0, cycle_sd, size=(1, k))
        + rng.normal(0, noise_sd, size=(n, k))
    )
    return [y.mean(axis=1)], [y]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(4, 12),
    k=st.integers(4, 8),
    prompt_sd=st.sampled_from([0.0, 1e-4, 0.002, 0.02]),
    cycle_sd=st.sampled_from([0.0, 0.005, 0.02, 0.3]),
    noise_sd=st.sampled_from([0.001, 0.01, 0.05, 0.3]),
)
def test_the_session_df_is_never_below_its_smallest_mean_squares_df(
    seed: int, n: int, k: int, prompt_sd: float, cycle_sd: float, noise_sd: float
) -> None:
    groups, matrices = _cell(seed, n, k, prompt_sd, cycle_sd, noise_sd)
    spread = session_spread(groups, matrices)
    floor = min(n - 1, k - 1)
    assert spread.df >= floor - 1e-9, (spread, floor)
    # So the interval is at most Student's t at that floor (the bootstrap-t's cap aside) wide.
    _, high = published_interval(0.68, spread, math.nan, 0.95)
    assert high - 0.68 <= t_quantile(0.975, floor) * spread.se * (1 + 1e-9)


def test_the_reported_four_cycle_case_has_a_finite_honest_interval() -> None:
    """A cell like the report's (+98 %, tight prompts, the session share nearly cancelled by
    the residual's): df at least 3, so the 95 % interval is a few SEs, not [-53 %, +745 %]."""
    worst = None
    for seed in range(400):
        groups, matrices = _cell(seed, 6, 4, 1e-4, 0.0, 0.01)
        spread = session_spread(groups, matrices)
        if spread.method == WITH_SESSION and (worst is None or spread.df < worst.df):
            worst = spread
    assert worst is not None
    assert worst.df >= 3.0
    low, high = published_interval(0.68, worst, math.nan, 0.95)
    assert 100 * math.expm1(high) - 100 * math.expm1(low) < 100 * 20 * worst.se
