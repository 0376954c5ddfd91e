"""Small-sample statistics on cluster values: the published interval, the session variance and
the percentile bootstrap cross-check (a kind's own estimators, a sign-flip test say, live in
that kind).

Every function is pure and vectorised; values are log rate ratios unless a name says percent.

The published interval is est ± q·se with se from the per-prompt log ratios (Welch-Satterthwaite
for the pooled mean, plus the session level with enough cycles) and q the larger of Student's t
quantile and the symmetric bootstrap-t quantile. Chosen by measurement (bench/coverage.py, 600
replications a cell): at 4-16 prompts per subset the percentile bootstrap covered 0.77-0.94,
Student's t quantile alone 0.91-0.97 (0.913 under a skewed, centred exponential, prompt effect)
and this interval 0.938-0.992 under normal, skewed and t(3) prompt effects; it is never
narrower than the t-interval. The equal-tailed bootstrap-t was erratic at 6 prompts (0.91
skewed, in a numpy prototype); the symmetric one corrects for skew but degenerates at 2-3
prompts and knows nothing of the session level's few degrees of freedom, which Student's t at
the Satterthwaite df carries. The larger of the two quantiles keeps both, the bootstrap-t one
capped at twice t: at 4-6 prompts, or with tight prompts and one outlier, its resamples of a
few repeated clusters have an SE near 0 and the quantile runs to the hundreds.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from ..base.constants import INTERVAL

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

PROMPTS_ONLY = "boot-t"
WITH_SESSION = "boot-t+session"


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """Student's t quantile at probability p; NaN without a positive df."""
    if not (df > 0 and math.isfinite(p)):
        return math.nan
    # scipy.special loads in a fraction of the time scipy.stats takes, and only when needed.
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def row_quantiles(values: FloatArray, probs: Sequence[float]) -> FloatArray:
    """Quantiles (numpy's default, linear) of each row's finite values: (rows, len(probs)).

    One sort for every series at once; NaN sorts last, so row r's finite values are its first
    count[r] entries. An empty row gives NaN.
    """
    ordered = np.sort(values, axis=1)
    count = np.isfinite(values).sum(axis=1)
    out = np.full((values.shape[0], len(probs)), np.nan)
    rows = np.nonzero(count > 0)[0]
    last = count[rows] - 1
    for j, p in enumerate(probs):
        pos = p * last
        below = np.floor(pos).astype(np.int64)
        above = np.minimum(below + 1, last)
        low, high = ordered[rows, below], ordered[rows, above]
        out[rows, j] = low + (high - low) * (pos - below)
    return out


@dataclass(frozen=True)
class BootSummary:
    """Per series, from its resamples: how many were kept, the symmetric bootstrap-t quantiles
    at the published levels (95 % and 90 %, or a sequential look's) and the percentile 95 %
    interval (log scale)."""

    kept: IntArray
    q95: FloatArray
    q90: FloatArray
    low: FloatArray
    high: FloatArray


@dataclass(frozen=True)
class Resamples:
    """Bootstrap draws of many series, each (series, boot): the mean and its squared SE.

    `Resamples.indices(...)` draws one subset's index matrix, `Resamples.of(values, idx)`
    resamples many series with it, and `.summary(est)` gives their bootstrap-t quantiles.
    """

    mean: FloatArray
    var_mean: FloatArray

    @staticmethod
    def indices(n_clusters: int, boot: int, seed: int, subset: str) -> IntArray:
        """The (boot, n_clusters) resample index matrix for one subset.

        The Generator is seeded with the seed and the subset's name, so each subset's draw is
        fixed by the seed alone (not by which other subsets a run holds) and prose and
        structured are not resampled in lockstep.
        """
        seq = np.random.SeedSequence(seed, spawn_key=(zlib.crc32(subset.encode("utf-8")),))
        rng = np.random.default_rng(seq)
        if n_clusters == 0:
            return np.zeros((boot, 0), dtype=np.int64)
        return rng.integers(0, n_clusters, size=(boot, n_clusters), dtype=np.int64)

    @classmethod
    def of(cls, values: FloatArray, idx: IntArray) -> Resamples:
        """Bootstrap mean and s²/n for many series at once: (series, clusters) -> (series, boot).

        A cluster a series lacks is NaN and skipped, so every series shares one index matrix; a
        resample that draws none of a series' clusters is NaN (later dropped as not kept), one
        that draws a single cluster value has no variance (NaN).
        """
        shape = (values.shape[0], idx.shape[0])
        if values.shape[1] == 0:
            return cls(np.full(shape, np.nan), np.full(shape, np.nan))
        drawn = values[:, idx]
        finite = np.isfinite(drawn)
        count = finite.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(finite, drawn, 0.0).sum(axis=-1) / count
            dev = np.where(finite, drawn - mean[..., None], 0.0)
            var = (dev * dev).sum(axis=-1) / (count - 1)
            # A draw of one value repeated has variance 0 but may round to ~1e-34; call it 0,
            # or the studentized ratio |m* - m| / se* would turn on rounding noise.
            scale = np.abs(np.where(np.isfinite(values), values, 0.0)).max(axis=1)
            var = np.where(var <= (1e-9 * scale[:, None]) ** 2, 0.0, var)
            var_mean = np.where(count >= 2, var / count, np.nan)
        return cls(np.where(count > 0, mean, np.nan), var_mean)

    def summary(self, est: FloatArray, levels: tuple[float, float] = (0.95, 0.90)) -> BootSummary:
        """Bootstrap-t quantiles of |m* - m| / se* at `levels` (usable resamples: finite,
        se* > 0) and the percentile interval of the kept means, for every series at once; NaN
        without data."""
        se = np.sqrt(self.var_mean)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.abs(self.mean - est[:, None]) / se
        ratio = np.where(np.isfinite(ratio) & (se > 0), ratio, np.nan)
        q = row_quantiles(ratio, levels)
        ends = row_quantiles(self.mean, (0.025, 0.975))
        kept = np.isfinite(self.mean).sum(axis=1).astype(np.int64)
        return BootSummary(kept, q[:, 0], q[:, 1], ends[:, 0], ends[:, 1])


def _satterthwaite(terms: FloatArray, dfs: FloatArray) -> float:
    den = float((terms**2 / dfs).sum())
    return float(terms.sum()) ** 2 / den if den > 0 else float(dfs.sum())


@dataclass(frozen=True)
class Spread:
    """The standard error of an estimate (log scale), its degrees of freedom and the method.

    `Spread.of_prompts(groups)` from the prompts alone, `Spread.of_sessions(groups, matrices)`
    with the session level too; `.interval(est, q_boot, level)` is the published interval."""

    # the methods an interval is published by: prompts alone, or the session level too
    PROMPTS_ONLY: ClassVar[str] = PROMPTS_ONLY
    WITH_SESSION: ClassVar[str] = WITH_SESSION

    se: float
    df: float
    method: str
    session_var: float = 0.0

    @classmethod
    def of_prompts(cls, groups: Sequence[FloatArray]) -> Spread:
        """SE of the equal-weight mean of group means, with a Welch-Satterthwaite df.

        One group is the plain t-interval's SE and n-1 df; NaN when a group has under 2 values.
        """
        if not groups or any(g.size < 2 for g in groups):
            return cls(math.nan, math.nan, PROMPTS_ONLY)
        terms = np.array([g.var(ddof=1) / g.size for g in groups]) / len(groups) ** 2
        dfs = np.array([g.size - 1 for g in groups], dtype=np.float64)
        return cls(math.sqrt(float(terms.sum())), _satterthwaite(terms, dfs), PROMPTS_ONLY)

    @classmethod
    def of_sessions(cls, groups: Sequence[FloatArray], matrices: Sequence[FloatArray]) -> Spread:
        """Prompt SE plus the session level, from a two-way (prompt × cycle) random-effects
        model.

        y[p, c] = mu + a_p + b_c + e_pc per subset, with b_c shared by the subsets (one server
        session pair per cycle serves them all). `matrices` hold each subset's log ratios,
        prompts × the cycles every subset has (NaN where missing); rows lacking a cycle are left
        out of the session estimate. With cycle means z_c (equal weight over subsets), var(z)/k
        estimates sigma_b²/k plus the residual share sum_s MS_E,s / (n_s k) / S², which is
        subtracted (the component is truncated at 0); df by Satterthwaite over all the mean
        squares used.
        """
        base = cls.of_prompts(groups)
        if not math.isfinite(base.se) or not matrices:
            return base
        k, weight = matrices[0].shape[1], 1.0 / len(matrices)
        cycle_means, resid_terms, resid_dfs = [], [], []
        for matrix in matrices:
            rows = matrix[np.isfinite(matrix).all(axis=1)]
            n = rows.shape[0]
            if n < 2 or k < 2:
                return base
            col, row, grand = rows.mean(axis=0), rows.mean(axis=1), float(rows.mean())
            resid = rows - row[:, None] - col[None, :] + grand
            ms_e = float((resid**2).sum()) / ((n - 1) * (k - 1))
            cycle_means.append(col)
            resid_terms.append(weight**2 * ms_e / (n * k))
            resid_dfs.append(float((n - 1) * (k - 1)))
        v_cycle = float(np.mean(cycle_means, axis=0).var(ddof=1)) / k
        v_session = max(0.0, v_cycle - sum(resid_terms))
        if v_session == 0.0:
            return cls(base.se, base.df, WITH_SESSION)
        total = base.se**2 + v_session
        prompt_terms = np.array([g.var(ddof=1) / g.size for g in groups]) * weight**2
        den = float((prompt_terms**2 / np.array([g.size - 1.0 for g in groups])).sum())
        den += v_cycle**2 / (k - 1) + sum(
            t**2 / d for t, d in zip(resid_terms, resid_dfs, strict=True)
        )
        # The residual's share enters with a minus sign, and where it nearly cancels the cycle
        # means' spread the Satterthwaite df of the sum falls below that of every mean square in
        # it (0.46 on a 4-cycle cell, whose 95 % interval was then [-53.6 %, +744.9 %]). A sum
        # of positive terms never has fewer df than its fewest, so that is the floor: the
        # prompts' n - 1 and the cycles' k - 1 (tests/analysis/test_small_sample_df.py).
        floor = min(min(g.size - 1.0 for g in groups), k - 1.0)
        return cls(math.sqrt(total), max(total**2 / den, floor), WITH_SESSION, v_session)

    def interval(self, est: float, q_boot: float, level: float) -> tuple[float, float]:
        """The published interval: est ± q·se with q = max(Student's t at this df, the
        bootstrap-t quantile), the latter capped at INTERVAL.boot_t_max_factor times t.

        The t quantile alone under-covers a skewed prompt effect (0.91-0.95 at 4-16 prompts);
        the bootstrap-t quantile alone misses the session level's few degrees of freedom. The
        larger of the two keeps both, and the interval is never narrower than the t-interval.
        The cap keeps a degenerate bootstrap-t (tight clusters and one outlier) from making it
        unboundedly wide.
        """
        q_t = t_quantile(0.5 + level / 2.0, self.df)
        if not (math.isfinite(est) and math.isfinite(q_t) and math.isfinite(self.se)):
            return math.nan, math.nan
        q = q_t
        if math.isfinite(q_boot):
            q = max(q_t, min(q_boot, INTERVAL.boot_t_max_factor * q_t))
        return est - q * self.se, est + q * self.se


def to_pct(log_value: float) -> float:
    """A mean log ratio as a percent change (inf past float range, NaN for NaN)."""
    if math.isnan(log_value):
        return math.nan
    # An interval from 2-3 wildly spread prompts can reach past exp's range; that is inf %.
    return 100.0 * math.expm1(log_value) if log_value < 700.0 else math.inf
