"""The pairs of one subset as arrays: (series, prompts, sessions), NaN where a pair is missing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .contraststats import FloatArray, nan_mean
from .pairing import SERIES_KEYS


@dataclass(frozen=True)
class Series:
    """One (endpoint, treatment) series on one subset's clusters; NaN where a prompt lacks pairs.

    `matrix` holds every pair's log ratio, prompts × the run's (run, cycle) sessions.
    """

    subset: str
    log: FloatArray
    arith: FloatArray
    n_pairs: FloatArray
    balanced: FloatArray
    matrix: FloatArray
    cycles: frozenset[int]


@dataclass(frozen=True)
class Layout:
    """Every series of one subset as arrays, rows in `keys` order.

    `matrix` is (series, prompts, sessions) of pair log ratios; `log`, `arith`, `n_pairs` and
    `balanced` are (series, prompts): a prompt's cluster value is the mean over its pairs.
    """

    subset: str
    sessions: tuple[tuple[str, int], ...]
    matrix: FloatArray
    log: FloatArray
    arith: FloatArray
    n_pairs: FloatArray
    balanced: FloatArray
    cycles: tuple[frozenset[int], ...]

    @property
    def log_mean(self) -> FloatArray:
        """Each series' estimate: the mean over its prompts with pairs (NaN without any)."""
        return nan_mean(self.log)

    def series(self, k: int) -> Series:
        return Series(
            self.subset,
            self.log[k],
            self.arith[k],
            self.n_pairs[k],
            self.balanced[k],
            self.matrix[k],
            self.cycles[k],
        )


def make_layout(
    subset: str,
    pairs: pd.DataFrame,
    keys: Sequence[tuple[str, str]],
    universe: Sequence[str],
    sessions: Sequence[tuple[str, int]],
) -> Layout:
    # numpy fancy indexing instead of groupbys: this was most of the analysis' pandas time.
    shape = (len(keys), len(universe), len(sessions))
    matrix, arith = np.full(shape, np.nan), np.full(shape, np.nan)
    if keys and sessions and not pairs.empty:
        index = pd.MultiIndex.from_tuples(list(keys), names=SERIES_KEYS)
        rows = index.get_indexer(pd.MultiIndex.from_frame(pairs[SERIES_KEYS]))
        cols = pd.Categorical(pairs["prompt_id"], categories=list(universe)).codes
        where = pd.MultiIndex.from_tuples(list(sessions), names=["run_id", "cycle"])
        depth = where.get_indexer(pd.MultiIndex.from_frame(pairs[["run_id", "cycle"]]))
        matrix[rows, cols, depth] = pairs["log_ratio"].to_numpy(dtype=np.float64)
        arith[rows, cols, depth] = pairs["ratio_minus_1"].to_numpy(dtype=np.float64)
    has = np.isfinite(matrix)
    count = has.sum(axis=-1)
    odd = np.array([c % 2 == 1 for _, c in sessions], dtype=bool)
    balanced = has[..., odd].any(axis=-1) & has[..., ~odd].any(axis=-1)
    cycle_of = np.array([c for _, c in sessions], dtype=np.int64)
    return Layout(
        subset=subset,
        sessions=tuple(sessions),
        matrix=matrix,
        log=nan_mean(matrix),
        arith=nan_mean(arith),
        n_pairs=np.where(count > 0, count, np.nan),
        balanced=np.where(count > 0, balanced.astype(np.float64), np.nan),
        cycles=tuple(frozenset(int(c) for c in cycle_of[seen]) for seen in has.any(axis=1)),
    )
