"""`--expect TREATMENT:LEVEL:not-slower:M` for load runs: the headline endpoint at one level no
more than M % worse than the baseline's, judged by `analysis/noninferiority.py`.

A load row holds a gain (positive: the treatment is better; for a latency, baseline/treatment).
The gate is stated on the metric itself: for a latency "worse" is a rise of M %, so the gain's
interval is turned back into the latency's own change (the ends swap) and judged with worse as a
rise; for a throughput the gain is the change and worse is a drop. The row's interval is the
published 95 % one (a `[stop]` look's spending-adjusted level): each end is a one-sided 97.5 %
bound, so the gate holds its false passes at 2.5 %, more strictly than decode's 5 %.

A `[capacity]` search has no levels: its gate is `TREATMENT:capacity:not-slower:M`, the
treatment's SLO capacity no more than M % below the baseline's, on the published capacity ratio
and its 95 % prompt-resampled interval (`capacity_stats.ratios`; worse is a drop). A capacity
beyond the search's bounds is a bound with no interval, so its gate is undecided and fails,
naming the fix. A search takes no `[stop]` rule, so the end is its gate's only look.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ....kindapi import AnalysisError, Gate, GateFigures, GateVerdict
from ....kindapi.analysis import Decision, NonInferiority
from .contrast import LOWER_IS_BETTER, REQUEST_ENDPOINTS

if TYPE_CHECKING:
    from ....kindapi.analysis import CellState
    from .capacity_stats import Ratio
    from .contrast import Row

CAPACITY = "capacity"  # the LEVEL a capacity search's gate names
CAPACITY_LEVEL = 0.95  # the ratio's published interval (2.5 and 97.5 % of its resamples)
CAPACITY_FIXES = "run more cycles or more requests a probe, or widen the margin"
CENSORED_FIXES = (
    "a capacity lies beyond the search's bounds, so the ratio is a bound without an interval; "
    "widen [capacity] low and high"
)


def judge_row(row: Row, margin_pct: float, *, final: bool, level: float) -> NonInferiority:
    """The gate on one row, stated on the metric: a latency's rise or a throughput's drop."""
    if row.endpoint in REQUEST_ENDPOINTS or row.endpoint in LOWER_IS_BETTER:

        def back(gain: float) -> float:  # gain % of baseline/treatment -> treatment's change %
            return 100.0 * (100.0 / (100.0 + gain) - 1.0) if gain > -100.0 else math.inf

        return NonInferiority.decide(
            back(row.gain_pct),
            back(row.ci_high),
            back(row.ci_low),
            margin_pct,
            higher_is_better=False,
            final=final,
            level=level,
        )
    return NonInferiority.decide(
        row.gain_pct,
        row.ci_low,
        row.ci_high,
        margin_pct,
        higher_is_better=True,
        final=final,
        level=level,
    )


def judge_ratio(ratio: Ratio, margin_pct: float) -> NonInferiority:
    """The gate on a capacity ratio: the treatment's capacity change, worse a drop; a censored
    capacity (a bound) gives no interval, so the gate is undecided and fails."""
    est = 100.0 * (ratio.ratio - 1.0)
    low, high = (
        100.0 * (x - 1.0) if not ratio.bound else math.nan for x in (ratio.low, ratio.high)
    )
    fixes = CENSORED_FIXES if ratio.bound else CAPACITY_FIXES
    return NonInferiority.decide(
        est,
        low,
        high,
        margin_pct,
        higher_is_better=True,
        final=True,
        level=CAPACITY_LEVEL,
        fixes=fixes,
    )


def _margin(gate: Gate) -> float:
    """A load gate's margin: every gate a load run has is not-slower (its grammar's one rule)."""
    if gate.margin is None:
        raise AnalysisError(
            f"gate {gate} has no margin; a load gate is {gate.treatment}:{gate.cell}:not-slower:M"
        )
    return gate.margin


def _capacity(gate: Gate, ratios: Sequence[Ratio]) -> GateVerdict:
    """A capacity gate's verdict from the search's ratios."""
    ratio = next((r for r in ratios if r.treatment == gate.treatment), None)
    if ratio is None:
        return GateVerdict.of(
            gate,
            False,
            f"{gate} not met: this run has no capacity search ratio for {gate.treatment}",
        )
    if not math.isfinite(ratio.ratio):  # both capacities beyond one end: nothing is known
        return GateVerdict.of(
            gate,
            False,
            f"{gate} not met: SLO capacity vs {ratio.baseline} is "
            "unknown (both capacities lie beyond the same end of the search); "
            "the gate fails: widen [capacity] low and high",
        )
    said = judge_ratio(ratio, _margin(gate))
    met = "met" if said.passed else "not met"
    numbers = figures(said, CAPACITY, CAPACITY_LEVEL) if not ratio.bound else None
    return GateVerdict.of(
        gate,
        said.passed,
        f"{gate} {met}: SLO capacity vs {ratio.baseline} {said.sentence}",
        numbers,
    )


def _row(rows: Sequence[Row], gate: Gate, endpoint: str) -> Row | None:
    return next(
        (
            r
            for r in rows
            if (r.treatment, r.level, r.endpoint) == (gate.treatment, gate.cell, endpoint)
        ),
        None,
    )


def figures(said: NonInferiority, endpoint: str, level: float) -> GateFigures:
    """The gate's numbers for a history, signed as a gain (a latency's rise reads negative)."""
    sign = 1.0 if said.higher_is_better else -1.0
    ends = sorted((sign * said.low_pct, sign * said.high_pct))
    return GateFigures(
        metric=endpoint,
        estimate_pct=sign * said.estimate_pct,
        lower_pct=ends[0],
        upper_pct=ends[1],
        confidence=level,
        margin_pct=said.margin_pct,
    )


def verdicts(
    gates: Sequence[Gate],
    rows: Sequence[Row],
    endpoint: str,
    level: float,
    ratios: Sequence[Ratio] = (),
) -> tuple[GateVerdict, ...]:
    """Each gate at the end of the run: met, or the sentence why not (an undecided one fails)."""

    def one(gate: Gate) -> GateVerdict:
        if gate.cell == CAPACITY:
            return _capacity(gate, ratios)
        row = _row(rows, gate, endpoint)
        if row is None:
            return GateVerdict.of(
                gate,
                False,
                f"{gate} not met: this run has no {endpoint} "
                f"contrast for {gate.treatment} at {gate.cell}",
            )
        said = judge_row(row, _margin(gate), final=True, level=level)
        met = "met" if said.passed else "not met"
        return GateVerdict.of(
            gate,
            said.passed,
            f"{gate} {met}: {endpoint} {said.sentence}",
            figures(said, endpoint, level),
        )

    return tuple(map(one, gates))


def stop_cells(
    cells: Sequence[CellState],
    rows: Sequence[Row],
    gates: Sequence[Gate],
    endpoint: str,
    level: float,
) -> tuple[CellState, ...]:
    """The cells a stop rule looks at, each one a gate names decided by the gate."""
    by_cell = {g.key: g for g in gates}
    out = []
    for c in cells:
        gate = by_cell.get(c.cell)
        row = _row(rows, gate, endpoint) if gate is not None else None
        if gate is None or row is None:
            out.append(c)
            continue
        said = judge_row(row, _margin(gate), final=False, level=level)
        out.append(dataclasses.replace(c, decision=Decision(said.outcome), gated=True))
    return tuple(out)


def treatment_problem(gate: Gate, keys: Sequence[str], base: str) -> str | None:
    """Why a gate cannot be judged against these treatments and this baseline (no full stop:
    the run's refusal adds one, the analysis' does not), or None."""
    if keys and gate.treatment not in keys:
        return (
            f"--expect {gate}: expectation {gate.text!r} names unknown treatment "
            f"{gate.treatment!r}; use one of {', '.join(sorted(keys))}"
        )
    if gate.treatment == base:
        return (
            f"--expect {gate}: {base} is the baseline itself; name a treatment to compare with it"
        )
    return None
