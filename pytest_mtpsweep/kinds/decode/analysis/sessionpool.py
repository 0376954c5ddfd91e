"""The session level a whole run shares: when a pair has too few cycles of its own to estimate
how much one server session differs from another (under 4 shared cycles, `Spread.of_sessions`
has under 3 df), it borrows the level from every arm of the run.

A run of sessions, one server load per arm and cycle, holds a session offset in every cell of
its arm × cycle table. The table's interaction, after the arms' and the cycles' own effects, is
those offsets; with k arms beside the baseline over c cycles it has (c − 1)(k − 1) df, so a look
after 2 cycles of a 6-arm sweep estimates it with 5 df where each pair alone has 1. Assumed: the
arms' sessions vary alike (the baseline's may vary more: it gets its own term). Used by the sweep
(`sweep_pairs.py`) and, for contrasts under 4 cycles, by decode's contrasts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .contraststats import FloatArray

# The published interval's method where the session level was borrowed (decode's contrasts).
BORROWED_SESSION = "boot-t+pooled session"
# A contrast table borrows the level only with at least the df a pair's own estimate needs
# (4 cycles: 3 df; constants.INTERVAL.min_borrowed_df); a 1-2 df level has a t quantile of 4-13 and turns
# every interval of a small fixed design into "inconclusive". A sweep's looks borrow from 1 df:
# they have no other way to see the session level, and their drops need it (docs/analysis.md).


@dataclass(frozen=True)
class PooledSession:
    """The run's session level, per cycle of a pair: the arms' (the arm × cycle interaction's
    mean square, `ms` with `df`) and the baseline's own (the spread of the fitted cycle
    effects, `base` with `base_df`: the baseline's sessions may vary more than the arms', never
    less)."""

    ms: float
    df: float
    base: float
    base_df: float

    def of_pair(self, with_baseline: bool) -> tuple[float, float]:
        """The session variance one cycle adds to a pair's difference, and its df."""
        if not with_baseline:
            return 2.0 * self.ms, self.df
        if self.base <= self.ms:
            # The baseline's sessions vary at least as the arms' (one server, one model): at 2-3
            # cycles its own spread has 1-2 df, and a lucky small one would narrow every
            # interval against it, just where Satterthwaite's df trusts it most.
            return 2.0 * self.ms, self.df
        total = self.ms + self.base
        den = self.ms**2 / self.df + self.base**2 / self.base_df
        return total, (total**2 / den if den > 0 else self.df)


def pooled_session_level(m: FloatArray) -> PooledSession | None:
    """The session level every pair of a session-per-arm run shares, or None without the
    degrees of freedom to estimate it (one arm beside the baseline at 2 cycles).

    m[c, a] = the mean over prompts of arm a's log rate minus the baseline's in cycle c (NaN
    where the arm has none: a sweep's arm dropped at a look, a missing session). In an
    additive fit m = α_a + β_c, a residual carries one arm's session offset and its cell noise
    over the prompts: its mean square estimates σ_s² + σ_e²/P, which counts the cell noise the
    prompt-level SE already holds once more (a few % wider, never narrower) rather than subtract
    it and risk a negative component. β_c carries the baseline's own offset (a load of the whole
    host cancels in the differences), so the spread of the fitted β_c over the cycles, with
    cycles − 1 df, is the baseline's session level (with a share of the arms', again counted
    rather than subtracted). Order drift that the counterbalanced design spreads over positions
    lands in both."""
    rows, cols = np.nonzero(np.isfinite(m))
    n_c, n_a = m.shape
    used_c, used_a = np.unique(rows), np.unique(cols)
    df = rows.size - used_c.size - used_a.size + 1
    if df < 1 or used_c.size < 2:
        return None
    x = np.zeros((rows.size, n_c + n_a))
    x[np.arange(rows.size), rows] = 1.0
    x[np.arange(rows.size), n_c + cols] = 1.0
    y = m[rows, cols]
    fit, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ fit
    # β_c up to a constant (the minimum-norm fit shares it with the α_a): its spread is unique.
    beta = fit[used_c]
    return PooledSession(
        float((resid**2).sum()) / df, float(df), float(beta.var(ddof=1)), float(used_c.size - 1)
    )


def borrow_session(
    se: float, df: float, cycles: int, pooled: tuple[float, float] | None
) -> tuple[float, float] | None:
    """A prompt-level SE with the run's pooled session level (`PooledSession.of_pair`: one
    cycle's variance and its df) averaged over the pair's `cycles` shared cycles, and the
    Satterthwaite df of the two parts; None with nothing to borrow."""
    if pooled is None or cycles < 1 or not (math.isfinite(se) and df > 0):
        return None
    session = pooled[0] / cycles
    total = se**2 + session
    den = se**4 / df + session**2 / pooled[1]
    return math.sqrt(total), (total**2 / den if den > 0 else df)
