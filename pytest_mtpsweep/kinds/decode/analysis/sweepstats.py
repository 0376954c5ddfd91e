"""Sweeps along one server setting: where the gain starts, which settings may be best, and which
arms to drop at a look. Kind-neutral and pure; one subset's arms at a time (`SweepData`, built
by the kind), the pairs and their resamples from `sweep_pairs.py`.

- **Where the gain starts** (`where_gain_starts`): a fixed-sequence step-down along the
  pre-registered order, from the end expected most effective (Maurer, Hothorn & Lehmacher 1995;
  Tamhane, Hochberg & Dunnett 1996; Hsu & Berger 1999). Each arm is tested against the baseline
  in turn with its published 95 % interval (`Spread.interval`, the decode interval) and
  no multiplicity adjustment; the first arm whose interval does not exclude 0 in the
  pre-registered direction stops the sequence, and no arm after it is tested. Family-wise error
  is at most alpha because a false call needs the first true null in the order to be rejected,
  which happens with probability at most alpha. The answer is a bound: the arms declared are
  faster "from X up"; below X there is "no evidence", never "no gain". Nothing assumes the
  curve is monotone: a dip inside the order only ends the sequence early.
- **Which settings may be best** (`best_set`): multiple comparisons with the best (Hsu 1984;
  Hsu 1996 ch. 4, the constrained intervals for unequal variances), on paired differences within
  (prompt, cycle) as Nelson & Matejcik (1995) pair common random numbers. For each arm i,
  θ_i − max_{j≠i} θ_j gets an interval; the arms whose upper end is above 0 may be best. The
  critical value d holds with probability 1 − alpha for the true best's k − 1 one-sided
  comparisons: for every candidate i the bootstrap quantile of max_j of the studentized
  deviations of i − j (the best is unknown, and only pairs holding it need its quantile, so a
  pair takes the larger of its two arms'), never below the Bonferroni one-sided Student's t
  (k − 1 comparisons, the pair's df) and capped at twice it, as stats.py caps its
  bootstrap-t. The baseline is a candidate: "none may be best but the baseline" is an answer.
  No curve shape is assumed.
- **Arms to drop at a look** (`arms_to_drop`): the best set at the look's spent two-sided level
  (`analysis/sequential.py`'s repeated-interval level of that look), in the spirit of Kim &
  Nelson's (2001) sequential elimination: an arm leaves when it is surely not the best, i.e.
  outside the best set (and surely more than `margin_pct` below the best of the others). The
  baseline never leaves: every arm is paired with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ....kindapi import AnalysisError
from ....kindapi.analysis import INTERVAL, Spread, row_quantiles, t_quantile, to_pct
from .contraststats import FloatArray
from .sweeppairs import Pairs, SweepData, check_data, pair_statistics

__all__ = [
    "ArmInterval",
    "BestSet",
    "StepDown",
    "SweepData",
    "arms_to_drop",
    "best_set",
    "where_gain_starts",
]

DIRECTIONS = ("faster", "slower")


@dataclass(frozen=True)
class ArmInterval:
    """One arm's interval in percent (against the baseline, or against the best of the others)."""

    arm: str
    estimate_pct: float
    low_pct: float
    high_pct: float


@dataclass(frozen=True)
class StepDown:
    """The fixed-sequence step-down's answer: `effective` were declared in the direction,
    family-wise at alpha; `tested` holds them and the arm that stopped the sequence."""

    order: tuple[str, ...]
    effective: tuple[str, ...]
    first_effective: str | None
    direction: str
    intervals: tuple[ArmInterval, ...]
    sentence: str
    tested: tuple[str, ...] = ()
    alpha: float = 0.05


@dataclass(frozen=True)
class BestSet:
    """The arms that may be best and each arm's simultaneous interval of θ_i − max_{j≠i} θ_j."""

    best: tuple[str, ...]
    intervals: tuple[ArmInterval, ...]
    sentence: str
    critical: float = math.nan  # d: the multiple of each pair's SE
    alpha: float = 0.05

    def within_margin(self, margin_pct: float) -> bool:
        """Whether every arm of the best set is surely within margin_pct of the best (Hsu's
        lower bounds): the stop rule's "the best set is within the user's margin"."""
        lows = [iv.low_pct for iv in self.intervals if iv.arm in self.best]
        return bool(lows) and all(math.isfinite(v) and v >= -margin_pct for v in lows)


def _words(labels: list[str]) -> str:
    if len(labels) <= 1:
        return "".join(labels)
    return ", ".join(labels[:-1]) + " or " + labels[-1]


def _check_alpha(alpha: float, name: str = "alpha") -> None:
    if not (isinstance(alpha, float | int) and 0.0 < alpha < 0.5):
        raise AnalysisError(f"{name} is {alpha!r}; give a level between 0 and 0.5")


def where_gain_starts(
    data: SweepData,
    *,
    direction: str = "faster",
    alpha: float = 0.05,
    boot: int = 2000,
    seed: int = 0,
    start: str | None = None,
) -> StepDown:
    """The fixed-sequence step-down against the baseline along the pre-registered order (see the
    module docstring). `start` overrides `data.start` ("last": from the last arm of `arms`)."""
    if direction not in DIRECTIONS:
        raise AnalysisError(f"direction is {direction!r}; use 'faster' or 'slower'")
    _check_alpha(alpha)
    check_data(data, boot, seed)
    start = data.start if start is None else start
    if start not in ("first", "last"):
        raise AnalysisError(f"the step-down starts from 'first' or 'last', not {start!r}")
    b = data.arms.index(data.baseline)
    pairs = pair_statistics(data, boot, seed, with_arm=b)
    along = [a for a in data.arms if a != data.baseline]
    order = tuple(reversed(along)) if start == "last" else tuple(along)
    # The symmetric bootstrap-t quantile of each pair at the level, as Resamples.summary.
    q_boot = row_quantiles(np.abs(pairs.tstar), (1.0 - alpha,))[:, 0]
    intervals: dict[str, ArmInterval] = {}
    bounds: dict[str, tuple[float, float]] = {}
    for arm in along:
        i = data.arms.index(arm)
        est, se, df = pairs.diff(i, b)
        lo, hi = Spread(se, df, "sweep").interval(
            est, float(q_boot[pairs.row(i, b)[0]]), 1.0 - alpha
        )
        bounds[arm] = (lo, hi)
        intervals[arm] = ArmInterval(arm, to_pct(est), to_pct(lo), to_pct(hi))
    effective: list[str] = []
    tested: list[str] = []
    for arm in order:
        tested.append(arm)
        lo, hi = bounds[arm]
        if not (lo > 0.0 if direction == "faster" else hi < 0.0):
            break
        effective.append(arm)
    first = effective[-1] if effective else None
    return StepDown(
        order=order,
        effective=tuple(effective),
        first_effective=first,
        direction=direction,
        intervals=tuple(intervals[a] for a in along),
        sentence=_step_sentence(data, order, effective, direction, start, alpha),
        tested=tuple(tested),
        alpha=alpha,
    )


def _step_sentence(
    data: SweepData,
    order: tuple[str, ...],
    effective: list[str],
    direction: str,
    start: str,
    alpha: float,
) -> str:
    setting = f"{data.setting} " if data.setting else ""
    base = data.label(data.baseline)
    level = f"step-down on {100 * (1 - alpha):.4g} % intervals"
    if not order:
        return "no value was swept beside the baseline"
    if not effective:
        return (
            f"no tested value is shown {direction} than {base} ({level}): the step-down "
            f"stops at its first, {setting}{data.label(order[0])}"
        )
    up = "up" if start == "last" else "down"
    first = data.label(effective[-1])
    rest = [data.label(a) for a in order[len(effective) :]]
    if not rest:
        return f"{direction} than {base} at every tested value, {setting}{first} {up} ({level})"
    return (
        f"{direction} than {base} from {setting}{first} {up} ({level}); no evidence at "
        f"{_words(rest)}"
    )


@dataclass(frozen=True)
class _Mcb:
    u: FloatArray  # (k,) unconstrained upper ends: min_j (i − j + d·se)
    low: FloatArray
    high: FloatArray
    est: FloatArray
    best: tuple[int, ...]
    d: float
    nearest: tuple[int, ...]  # per arm, the j attaining its upper end


def _critical(pairs: Pairs, alpha: float) -> FloatArray:
    """(k, k): the multiple of each pair's SE in the MCB bounds.

    Hsu's intervals hold when, for the true best b, no θ_b − θ_j is above ȳ_b − ȳ_j + d·se
    (b's advantage is not underestimated by more than d SEs against any j). Each candidate i
    gets the bootstrap (1 − alpha) quantile of max_{j≠i} −(studentized deviation of i − j);
    since only pairs holding the best need it, pair (i, j) takes the larger of i's and j's. Per
    pair it is never below the Bonferroni one-sided Student's t at its own df (k − 1
    comparisons) and the bootstrap part is capped at twice that, as stats.py's interval is.
    """
    k = pairs.k
    valid = np.isfinite(pairs.est) & np.isfinite(pairs.se) & (pairs.se > 0)
    boot_q = np.full(k, np.nan)
    for i in range(k):
        rows = [pairs.row(i, j) for j in range(k) if j != i and valid[pairs.row(i, j)[0]]]
        if not rows:
            continue
        stacked = np.stack([-s * pairs.tstar[r] for r, s in rows])
        usable = np.isfinite(stacked).all(axis=0)  # a resample with a degenerate pair is not kept
        if usable.any():
            boot_q[i] = float(np.quantile(stacked[:, usable].max(axis=0), 1.0 - alpha))
    comparisons = k - 1  # the true best's, whichever arm it is
    d = np.full((k, k), np.nan)
    for i in range(k):
        for j in range(k):
            r = int(pairs.index[i, j])
            if i == j or not valid[r]:
                continue
            floor = t_quantile(1.0 - alpha / comparisons, float(pairs.df[r]))
            q = float(np.fmax(boot_q[i], boot_q[j]))
            d[i, j] = (
                floor
                if not math.isfinite(q)
                else max(floor, min(q, INTERVAL.boot_t_max_factor * floor))
            )
    return d


def _mcb(pairs: Pairs, alpha: float) -> _Mcb:
    """Hsu's constrained MCB intervals (unequal variances), log scale."""
    k = pairs.k
    d = _critical(pairs, alpha)
    diff = np.full((k, k), np.nan)
    se = np.full((k, k), np.nan)
    for i in range(k):
        for j in range(k):
            if i != j:
                diff[i, j], se[i, j], _ = pairs.diff(i, j)
    upper = diff + d * se
    np.fill_diagonal(upper, np.inf)
    # A pair without an estimate cannot exclude an arm: its bound is +inf, not NaN.
    upper = np.where(np.isnan(upper), np.inf, upper)
    u = upper.min(axis=1)
    nearest = tuple(int(j) for j in upper.argmin(axis=1))
    best = tuple(int(i) for i in np.nonzero(u > 0.0)[0])
    lower = diff - d * se
    low = np.zeros(k)
    for i in range(k):
        others = [j for j in best if j != i]
        if others:
            vals = lower[i, others]
            low[i] = min(0.0, float(np.min(np.where(np.isnan(vals), -np.inf, vals))))
    est_m = np.where(np.eye(k, dtype=bool), np.inf, diff)
    est = np.where(np.isnan(est_m), np.inf, est_m).min(axis=1)
    est = np.where(np.isfinite(est), est, np.nan)  # an arm paired with none has no estimate
    finite_d = d[np.isfinite(d)]
    largest = float(finite_d.max()) if finite_d.size else math.nan
    return _Mcb(u, low, np.maximum(u, 0.0), est, best, largest, nearest)


def best_set(data: SweepData, *, alpha: float = 0.05, boot: int = 2000, seed: int = 0) -> BestSet:
    """Simultaneous (1 − alpha) MCB intervals of each arm against the best of the others, and
    the set of arms that may be best (see the module docstring)."""
    _check_alpha(alpha)
    check_data(data, boot, seed)
    m = _mcb(pair_statistics(data, boot, seed), alpha)
    intervals = tuple(
        ArmInterval(a, to_pct(float(m.est[i])), to_pct(float(m.low[i])), to_pct(float(m.high[i])))
        for i, a in enumerate(data.arms)
    )
    best = tuple(data.arms[i] for i in m.best)
    return BestSet(best, intervals, _best_sentence(data, best, alpha), m.d, alpha)


def _best_sentence(data: SweepData, best: tuple[str, ...], alpha: float) -> str:
    level = f"simultaneous {100 * (1 - alpha):.3g} %"
    setting = f"{data.setting} " if data.setting else ""
    base = data.label(data.baseline)
    if best == (data.baseline,):
        return f"none may be best but the baseline {base}: every tested value is surely slower ({level})"
    names = [data.label(a) if a == data.baseline else f"{setting}{data.label(a)}" for a in best]
    others = len(data.arms) - len(best)
    if len(best) == 1:
        return f"{names[0]} is the best: every other arm is surely slower ({level})"
    tail = f"; the other {others} are surely slower than one of them" if others else ""
    return f"may be best: {', '.join(names)} ({level}{tail})"


def arms_to_drop(
    data: SweepData,
    *,
    alpha_look: float,
    margin_pct: float = 0.0,
    boot: int = 2000,
    seed: int = 0,
) -> tuple[tuple[str, str], ...]:
    """(arm, why) for every arm that is surely not the best at this look's two-sided spent level
    `alpha_look` (1 − the look's nominal confidence, `sequential.Design.confidence`), and surely
    more than `margin_pct` below the best of the others. Never an arm of the best set at that
    level, never the baseline."""
    _check_alpha(alpha_look, "alpha_look")
    if not (math.isfinite(margin_pct) and 0.0 <= margin_pct < 100.0):
        raise AnalysisError(f"margin_pct is {margin_pct!r}; give a margin from 0 to under 100 %")
    check_data(data, boot, seed)
    m = _mcb(pair_statistics(data, boot, seed), alpha_look)
    # With a margin an arm leaves only when surely more than the margin below the best of the
    # others: its upper end against them is below -margin, not merely below 0.
    limit = math.log1p(-margin_pct / 100.0)
    out = []
    for i, arm in enumerate(data.arms):
        if arm == data.baseline or i in m.best or not float(m.u[i]) < limit:
            continue
        j = data.arms[m.nearest[i]]
        name = (
            data.label(j)
            if j == data.baseline or not data.setting
            else f"{data.setting} {data.label(j)}"
        )
        out.append(
            (
                arm,
                f"surely not the best at the look's {100 * (1 - alpha_look):.2f} % level: "
                f"{name} is faster by at least {to_pct(-float(m.u[i])):.1f} %",
            )
        )
    return tuple(out)
