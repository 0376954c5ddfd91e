"""Every pair of a sweep's arms, paired within (prompt, cycle), with its published spread and one
shared set of prompt resamples: what `sweep.py`'s step-down, best set and elimination read.

A sweep is one subset's arms along one server setting, the baseline among them. Each arm's log
rate is averaged per (prompt, cycle) cell first (repeats, as decode does); a pair's value in a
cell is the difference of the two arms' cell means, so arms are compared only where both were
measured in the same prompt and cycle. Per prompt, the mean over its cycles is the cluster value;
a pair's estimate is the mean over prompts (decode's estimator, `kinds/decode/analysis`).

The spread of each pair is the prompt-level SE (`analysis/stats.py`) plus the session level. A
pair's own cycles give its session level only from 4 shared cycles (`Spread.of_sessions`); before
that, and as a floor after it, the session level comes from the whole run: the arm × cycle
interaction of the arms' per-cycle means against the baseline (`pooled_session`), which every
arm of a session-per-arm design shares, with (cycles − 1)(arms − 2) degrees of freedom. An arm
a look dropped after 2 cycles keeps those 2 cycles, and its interval carries the session level
all the same; a pair with no session level to borrow has no spread (no claim is made on it). The bootstrap is stats.py's too: one index
matrix over prompts (`Resamples.indices`, seeded by the seed and the subset, the draw decode's
contrasts make) resamples every pair at once (`Resamples.of`), so the pairs' joint distribution,
which the max statistic needs, is kept, and an arm's interval against the baseline is decode's
published one (tests/kinds/decode/analysis/test_sweepstats.py checks it).
Without prompt labels each cycle is the cluster (one value per cycle: a load ladder's per-block
endpoint), and the bootstrap resamples cycles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ....kindapi import BOOT, AnalysisError
from ....kindapi.analysis import INTERVAL, Resamples, Spread
from .contraststats import FloatArray, IntArray, nan_mean
from .sessionpool import PooledSession, borrow_session, pooled_session_level

# A sweep is a handful of values along a setting (the ladders: 6 values and a baseline;
# a two-setting grid: a few dozen). Past this the pairs (k²/2) and their resamples stop being a
# few megabytes.
MAX_SWEEP_ARMS = 32
MAX_SWEEP_BLOCKS = 200_000
# The (pairs x resamples) studentized draws are held at once for the max statistic.
MAX_PAIR_DRAWS = 20_000_000
# `Resamples.of` builds (pairs, resamples, clusters) arrays: a chunk of pairs at most this big.
CHUNK_VALUES = 4_000_000


@dataclass(frozen=True)
class SweepData:
    """One subset's sweep as arrays.

    `arms` holds every arm key, the baseline included, in ascending order of the setting (the
    sentences' "up" and "down" read it so). A block is one (prompt, cycle) pairing unit; decode
    pairs arms within prompt and cycle.
    `log_rates` is (n_blocks, n_arms), higher is better, NaN where an arm has no value in a
    block (not measured, dropped, invalid). `clusters` is each block's cycle (the session pair);
    `prompts`, each block's prompt, makes the prompt the bootstrap's cluster as in decode (the
    cycles then give the session level); without it each cycle is the cluster. `start` is the
    pre-registered end the step-down starts from: "last" (the last arm of `arms`, the highest
    setting) or "first". `setting` and `labels` (one per arm, default the keys) only word the
    sentences.
    """

    arms: tuple[str, ...]
    baseline: str
    log_rates: FloatArray
    clusters: npt.NDArray[np.generic]
    prompts: npt.NDArray[np.generic] | None = None
    subset: str = ""
    setting: str = ""
    labels: tuple[str, ...] = ()
    start: str = "last"
    # False: the naive spread kept for the bench (bench/sweep_coverage.py), whose pairs under 4
    # shared cycles resample prompts only and so cannot see a session offset.
    pool_sessions: bool = True

    def label(self, arm: str) -> str:
        """How a sentence names an arm: its label, else its key."""
        if self.labels:
            return self.labels[self.arms.index(arm)]
        return arm


def check_data(data: SweepData, boot: int, seed: int) -> None:
    """Refuse a sweep the functions cannot analyse, or one past the bounds, before any work:
    one sentence naming the bound (AnalysisError, a UserError)."""
    BOOT.check(boot, seed)
    k = len(data.arms)
    if not 2 <= k <= MAX_SWEEP_ARMS:
        raise AnalysisError(f"a sweep holds 2 to {MAX_SWEEP_ARMS} arms with its baseline, not {k}")
    if len(set(data.arms)) != k:
        raise AnalysisError(f"the sweep's arms {data.arms} repeat a key; name each arm once")
    if data.baseline not in data.arms:
        raise AnalysisError(f"the baseline {data.baseline!r} is not one of the sweep's arms")
    if data.labels and len(data.labels) != k:
        raise AnalysisError(f"the sweep has {k} arms but {len(data.labels)} labels; give one each")
    if data.start not in ("first", "last"):
        raise AnalysisError(f"the step-down starts from 'first' or 'last', not {data.start!r}")
    shape = np.shape(data.log_rates)
    if len(shape) != 2 or shape[1] != k:
        raise AnalysisError(f"log_rates is {shape}, not (blocks, {k} arms)")
    if not 1 <= shape[0] <= MAX_SWEEP_BLOCKS:
        raise AnalysisError(f"a sweep holds 1 to {MAX_SWEEP_BLOCKS} blocks, not {shape[0]}")
    for name, labels in (("clusters", data.clusters), ("prompts", data.prompts)):
        if labels is not None and np.shape(labels) != (shape[0],):
            raise AnalysisError(f"{name} is {np.shape(labels)}, not one label per block")
    pairs = k * (k - 1) // 2
    if pairs * boot > MAX_PAIR_DRAWS:
        raise AnalysisError(
            f"{pairs} pairs × {boot} resamples is above {MAX_PAIR_DRAWS:,} draws; pass "
            f"--boot {MAX_PAIR_DRAWS // pairs} or fewer, or sweep fewer values"
        )


def _codes(labels: npt.NDArray[np.generic]) -> tuple[IntArray, int]:
    values, codes = np.unique(np.asarray(labels), return_inverse=True)
    return codes.astype(np.int64).ravel(), int(values.size)


def cell_cube(data: SweepData) -> FloatArray:
    """(clusters, cycles, arms): each arm's mean log rate per cell, NaN where it has none."""
    y = np.asarray(data.log_rates, dtype=np.float64)
    cyc, n_c = _codes(data.clusters)
    if data.prompts is None:
        # Each cycle is the cluster, with one column: no session level apart from it.
        clu, n_p, cyc, n_c = cyc, n_c, np.zeros_like(cyc), 1
    else:
        clu, n_p = _codes(data.prompts)
    finite = np.isfinite(y)
    total = np.zeros((n_p, n_c, y.shape[1]))
    count = np.zeros((n_p, n_c, y.shape[1]))
    np.add.at(total, (clu, cyc), np.where(finite, y, 0.0))
    np.add.at(count, (clu, cyc), finite.astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(count > 0, total / np.maximum(count, 1.0), np.nan))


@dataclass(frozen=True)
class Pairs:
    """Every pair i < j of the arms (log scale, arm i minus arm j).

    est, se, df: (pairs,); the spread is prompt-level or with the session level. tstar:
    (pairs, boot) the studentized resample deviations (m* − m) / se* (NaN where unusable).
    q_boot: (pairs,) the symmetric bootstrap-t quantile at `level` (Resamples.summary).
    """

    k: int
    index: IntArray  # (k, k): the pair row of (i, j), -1 on the diagonal and where not computed
    est: FloatArray
    se: FloatArray
    df: FloatArray
    tstar: FloatArray

    def row(self, i: int, j: int) -> tuple[int, float]:
        """The pair row comparing arm i with arm j, and the sign that makes it i − j."""
        return int(self.index[i, j]), (1.0 if i < j else -1.0)

    def diff(self, i: int, j: int) -> tuple[float, float, float]:
        """(estimate of i − j, its SE, its df)."""
        r, s = self.row(i, j)
        return s * float(self.est[r]), float(self.se[r]), float(self.df[r])


def pooled_session(cube: FloatArray, baseline: int) -> PooledSession | None:
    """The run's session level (`stats.pooled_session_level`) from the cube: each arm's mean over
    prompts of its log rate minus the baseline's, per cycle."""
    if cube.shape[1] < 2 or cube.shape[2] < 3:
        return None
    with np.errstate(invalid="ignore"):
        diffs = cube - cube[:, :, baseline : baseline + 1]
    m = nan_mean(np.moveaxis(diffs, 0, -1))  # (cycles, arms)
    return pooled_session_level(np.delete(m, baseline, axis=1))


def _spread_of(
    values: FloatArray, matrix: FloatArray, pooled: tuple[float, float] | None, pool: bool = True
) -> tuple[float, float]:
    """SE and df of one pair: the prompt level plus the session level (see the module
    docstring); NaN where no session level can be had (`pool` False: the naive prompt-only
    spread under 4 shared cycles)."""
    finite = values[np.isfinite(values)]
    if finite.size < 2:
        return math.nan, math.nan
    shared = np.isfinite(matrix).any(axis=0)
    base = Spread.of_prompts([finite])
    cycles = int(shared.sum())
    borrowed = borrow_session(base.se, base.df, cycles, pooled)
    if cycles < INTERVAL.session_cycles:
        if not pool:
            return base.se, base.df
        return borrowed if borrowed is not None else (math.nan, math.nan)
    s = Spread.of_sessions([finite], [matrix[np.isfinite(values)][:, shared]])
    if pool and borrowed is not None and borrowed[0] > s.se:
        return borrowed
    if s.session_var <= 0.0:
        return s.se, s.df
    # Decode's Satterthwaite df takes the session component as a difference of mean squares,
    # and where that difference is barely positive its df collapses below 1 (a t quantile of
    # hundreds): harmless for one interval, but among a sweep's k(k-1)/2 pairs some pair meets
    # it in most runs and keeps every arm in the best set. Here the component counts with the
    # cycles' own k - 1 df, so the df lies between the prompts' and the cycles'.
    prompt_var = base.se**2
    den = prompt_var**2 / base.df + s.session_var**2 / (cycles - 1)
    return s.se, (prompt_var + s.session_var) ** 2 / den


def pair_statistics(data: SweepData, boot: int, seed: int, *, with_arm: int | None = None) -> Pairs:
    """Every pair's estimate, spread and studentized resamples (see the module docstring); with
    `with_arm`, only the pairs holding that arm (the step-down needs the baseline's alone).
    A pair's numbers do not depend on which other pairs are computed."""
    cube = cell_cube(data)
    k = cube.shape[2]
    ii, jj = np.triu_indices(k, 1)
    if with_arm is not None:
        keep = (ii == with_arm) | (jj == with_arm)
        ii, jj = ii[keep], jj[keep]
    index = np.full((k, k), -1, dtype=np.int64)
    index[ii, jj] = index[jj, ii] = np.arange(ii.size)
    matrix = cube[:, :, ii] - cube[:, :, jj]  # (clusters, cycles, pairs)
    matrix = np.moveaxis(matrix, 2, 0)  # (pairs, clusters, cycles)
    values = nan_mean(matrix)  # (pairs, clusters): a cluster's mean over its cycles
    est = nan_mean(values)
    b = data.arms.index(data.baseline)
    # Without prompts each cycle is a cluster: its resamples carry the session level already.
    by_prompt = data.prompts is not None
    pooled = pooled_session(cube, b) if by_prompt else None
    pool = data.pool_sessions and by_prompt
    spreads = [
        _spread_of(
            values[r],
            matrix[r],
            None if pooled is None else pooled.of_pair(b in (int(ii[r]), int(jj[r]))),
            pool,
        )
        for r in range(ii.size)
    ]
    se = np.array([s for s, _ in spreads])
    df = np.array([d for _, d in spreads])
    idx = Resamples.indices(values.shape[1], boot, seed, data.subset)
    step = max(1, CHUNK_VALUES // max(1, boot * values.shape[1]))
    tstar = np.full((ii.size, boot), np.nan)
    for lo in range(0, ii.size, step):
        draws = Resamples.of(values[lo : lo + step], idx)
        se_star = np.sqrt(draws.var_mean)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = (draws.mean - est[lo : lo + step, None]) / se_star
        tstar[lo : lo + step] = np.where(np.isfinite(t) & (se_star > 0), t, np.nan)
    return Pairs(k, index, est, se, df, tstar)
