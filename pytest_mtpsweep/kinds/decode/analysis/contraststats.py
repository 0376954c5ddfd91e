"""The estimators and tests only decode's contrasts use, on cluster values: a NaN-skipping
mean, the exact (or Monte Carlo) sign-flip p-value, the minimum detectable effect and a slope
with fixed effects (the position trend). The shared interval is the door's (`kindapi.analysis`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ....kindapi.analysis import Spread, t_quantile, to_pct

# the kind's array types (a float and an integer numpy array)
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Power of the MDE: the true effect a two-sided 5 % test detects this often.
MDE_POWER = 0.80
# Above this many clusters 2^n sign patterns stop being cheap, so the p-value turns Monte Carlo.
EXACT_SIGN_FLIP_MAX_N = 16


def nan_mean(values: FloatArray, axis: int = -1) -> FloatArray:
    """Mean over the finite entries along an axis; NaN where there are none (no warning)."""
    finite = np.isfinite(values)
    total = np.where(finite, values, 0.0).sum(axis=axis)
    count = finite.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(count > 0, total / np.maximum(count, 1), np.nan))


@functools.lru_cache(maxsize=EXACT_SIGN_FLIP_MAX_N + 1)
def _sign_matrix(n: int) -> FloatArray:
    # Built once per n and shared read-only: rebuilding the patterns per cell dominated.
    codes = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
    signs = 1.0 - 2.0 * (codes & 1).astype(np.float64)
    signs.setflags(write=False)
    return signs


@functools.lru_cache(maxsize=8)
def _random_signs(n: int, n_mc: int, seed: int) -> FloatArray:
    # The same seed gives the same patterns for every cell, so draw them once.
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_mc, n))
    signs.setflags(write=False)
    return signs


def _all_sign_sums(contrib: FloatArray) -> FloatArray:
    """sum(s_i · c_i) for all 2^n sign patterns s, flattened (order irrelevant).

    Meet in the middle: the 2^h sums of one half plus the 2^(n-h) of the other give all 2^n,
    so 2^n additions replace a 2^n × n matrix product.
    """
    h = contrib.size // 2
    low = _sign_matrix(h) @ contrib[:h] if h else np.zeros(1)
    high = _sign_matrix(contrib.size - h) @ contrib[h:]
    return np.asarray((low[:, None] + high[None, :]).ravel())


def sign_flip_pvalue(
    values: FloatArray, weights: FloatArray, *, seed: int, n_mc: int
) -> tuple[float, str]:
    """Two-sided sign-flip p-value for sum(weights * values) = 0; returns (p, method).

    Exact (all 2^n patterns) for n <= 16; above that `n_mc` random patterns from a Generator
    seeded with `seed`, with the +1 correction that keeps a Monte Carlo p-value valid. The
    smallest exact p-value is 2^(1-n), so below 6 values it cannot fall under 0.05.
    """
    n = values.size
    if n == 0:
        return math.nan, "none"
    contrib = weights * values
    observed = abs(float(contrib.sum()))
    # Sums of the same terms in another order can differ in the last bits; treat those as ties.
    tol = 1e-10 * float(np.abs(contrib).sum())
    if n <= EXACT_SIGN_FLIP_MAX_N:
        flipped = np.abs(_all_sign_sums(contrib))
        return float(np.count_nonzero(flipped >= observed - tol)) / flipped.size, "exact"
    flipped = np.abs(_random_signs(n, n_mc, seed) @ contrib)
    hits = int(np.count_nonzero(flipped >= observed - tol))
    return (hits + 1) / (n_mc + 1), "monte-carlo"


def mde_multiplier(df: float) -> float:
    """t(0.975, df) + t(MDE_POWER, df): the MDE in standard errors for a two-sided 5 % test."""
    return t_quantile(0.975, df) + t_quantile(MDE_POWER, df)


def mde_pct(spread: Spread) -> float:
    """Minimum detectable effect in percent: the true change a two-sided 5 % t-test on this
    SE and df detects with MDE_POWER probability."""
    if not (math.isfinite(spread.se) and math.isfinite(spread.df)):
        return math.nan
    return to_pct(mde_multiplier(spread.df) * spread.se)


@dataclass(frozen=True)
class Slope:
    """An OLS slope (log scale) with its SE and residual df; NaN where not identifiable."""

    estimate: float
    se: float
    df: float


def fixed_effects_slope(y: FloatArray, x: FloatArray, groupings: Sequence[IntArray]) -> Slope:
    """Slope of y on x with one fixed effect per level of each grouping (Frisch-Waugh-Lovell).

    With session and prompt groupings, the slope is identified only when positions vary within
    prompts across sessions; where x is (numerically) a combination of the fixed effects, or
    no residual df is left, the slope is NaN.
    """
    n = y.size
    columns = [np.ones(n)]
    for codes in groupings:
        levels = np.unique(codes)
        columns += [(codes == level).astype(np.float64) for level in levels[1:]]
    design = np.column_stack(columns)
    both = np.column_stack([y, x])
    coef, _, rank, _ = np.linalg.lstsq(design, both, rcond=None)
    resid = both - design @ coef
    ry, rx = resid[:, 0], resid[:, 1]
    sxx = float(rx @ rx)
    df = n - int(rank) - 1
    centred = x - x.mean()
    if df < 1 or sxx <= 1e-9 * max(float(centred @ centred), 1e-300):
        return Slope(math.nan, math.nan, math.nan)
    beta = float(rx @ ry) / sxx
    e = ry - beta * rx
    return Slope(beta, math.sqrt(float(e @ e) / df / sxx), float(df))
