"""Small-sample statistics on cluster values: bootstrap, t-interval, sign-flip test, MDE.

Every function is pure and vectorised; values are log rate ratios unless a name says percent.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from pytest_mtpsweep.analysis.model import EXACT_SIGN_FLIP_MAX_N, MDE_MULTIPLIER

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def index_matrix(n_clusters: int, boot: int, seed: int, subset: str) -> IntArray:
    """The (boot, n_clusters) resample index matrix for one subset.

    The Generator is seeded with the seed and the subset's name, so each subset's draw is fixed
    by the seed alone (not by which other subsets a run holds) and prose and structured are not
    resampled in lockstep.
    """
    seq = np.random.SeedSequence(seed, spawn_key=(zlib.crc32(subset.encode("utf-8")),))
    rng = np.random.default_rng(seq)
    if n_clusters == 0:
        return np.zeros((boot, 0), dtype=np.int64)
    return rng.integers(0, n_clusters, size=(boot, n_clusters), dtype=np.int64)


def nan_mean(values: FloatArray, axis: int = -1) -> FloatArray:
    """Mean over the finite entries along an axis; NaN where there are none (no warning)."""
    finite = np.isfinite(values)
    total = np.where(finite, values, 0.0).sum(axis=axis)
    count = finite.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(count > 0, total / np.maximum(count, 1), np.nan))


def resample_means(values: FloatArray, idx: IntArray) -> FloatArray:
    """Bootstrap means for many series at once: (series, clusters) -> (series, boot).

    A cluster a series lacks is NaN and skipped, so every series shares one index matrix; a
    resample that draws none of a series' clusters is NaN and is later dropped as not kept.
    """
    if values.shape[1] == 0:
        return np.full((values.shape[0], idx.shape[0]), np.nan)
    return nan_mean(values[:, idx], axis=-1)


def percentile_interval(samples: FloatArray, level: float) -> tuple[float, float]:
    """Equal-tailed percentile interval of the finite samples; NaNs when there are none."""
    kept = samples[np.isfinite(samples)]
    if kept.size == 0:
        return math.nan, math.nan
    tail = 50.0 * (1.0 - level)
    low, high = np.percentile(kept, [tail, 100.0 - tail])
    return float(low), float(high)


def t_interval(groups: Sequence[FloatArray], level: float) -> tuple[float, float]:
    """t-interval for the equal-weight mean of group means (one group: the plain t-interval).

    Several groups use a Welch-Satterthwaite df, the same small-sample correction as Welch's t.
    """
    if not groups or any(g.size < 2 for g in groups):
        return math.nan, math.nan
    k = len(groups)
    est = float(np.mean([g.mean() for g in groups]))
    var_terms = np.array([g.var(ddof=1) / g.size for g in groups]) / k**2
    se = math.sqrt(float(var_terms.sum()))
    if se == 0.0:
        return est, est
    dfs = np.array([g.size - 1 for g in groups], dtype=np.float64)
    df = float(var_terms.sum() ** 2 / (var_terms**2 / dfs).sum())
    half = float(sps.t.ppf(0.5 + level / 2.0, df)) * se
    return est - half, est + half


def _sign_matrix(n: int) -> FloatArray:
    codes = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
    return 1.0 - 2.0 * (codes & 1).astype(np.float64)


def sign_flip_pvalue(
    values: FloatArray, weights: FloatArray, *, seed: int, n_mc: int
) -> tuple[float, str]:
    """Two-sided sign-flip p-value for sum(weights * values) = 0; returns (p, method).

    Exact (all 2^n patterns) for n <= 16; above that `n_mc` random patterns from a Generator
    seeded with `seed`, with the +1 correction that keeps a Monte Carlo p-value valid.
    """
    n = values.size
    if n == 0:
        return math.nan, "none"
    contrib = weights * values
    observed = abs(float(contrib.sum()))
    # Sums of the same terms in another order can differ in the last bits; treat those as ties.
    tol = 1e-10 * float(np.abs(contrib).sum())
    if n <= EXACT_SIGN_FLIP_MAX_N:
        flipped = np.abs(_sign_matrix(n) @ contrib)
        return float(np.mean(flipped >= observed - tol)), "exact"
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_mc, n))
    flipped = np.abs(signs @ contrib)
    hits = int(np.count_nonzero(flipped >= observed - tol))
    return (hits + 1) / (n_mc + 1), "monte-carlo"


def to_pct(log_value: float) -> float:
    """A mean log ratio as a percent change."""
    return 100.0 * math.expm1(log_value) if math.isfinite(log_value) else math.nan


def mde_pct(boot_log: FloatArray) -> tuple[float, float]:
    """(bootstrap SE, minimum detectable effect), both in percent.

    MDE = 2.8 × SE: the effect a two-sided 5 % test would detect with 80 % power, taking the
    bootstrap spread of the percent change as the standard error.
    """
    kept = boot_log[np.isfinite(boot_log)]
    if kept.size < 2:
        return math.nan, math.nan
    se = float(np.std(100.0 * np.expm1(kept), ddof=1))
    return se, MDE_MULTIPLIER * se
