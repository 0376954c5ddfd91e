"""`--expect COHORT:SUBJECT:not-slower:M` for authoring runs: the cohort's green pass rate, in
one subject, no more than M percentage points below the baseline cohort's, judged by
`analysis/noninferiority.py`.

An authoring contrast is a cohort against the baseline cohort within a subject, paired by task
(`contrast.py`), so the gate names the cohort first and the subject in the place decode's
prompt subset and load's level take. The margin is in percentage points of the pass rate, not
a percent of it: `plain-json:alpha:not-slower:5` passes when a drop from 60 % green to below
55 % is ruled out. The decision reads the paired difference of the task means (repeats averaged
within a task, the task the unit) with Newcombe's hybrid score interval (`paired_binary.py`) at
90 % two-sided: its lower end is a one-sided 95 % bound, so a gate passes a cohort truly M pp
worse at most 5 % of the time (bench/authoring_gate.py measures it). An undecided gate fails:
the authoring kind has no `[stop]` rule (no interim analysis), so the end is the only look, and
its sentence names what resolves it, more tasks or repeats, or a wider margin.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import pandas as pd

from ....kindapi import AnalysisError, ExpectationError, Gate, GateFigures, GateVerdict
from ....kindapi.analysis import NonInferiority
from .contrast import cells_behind, paired_means, rate_interval

LEVEL = 0.90  # two-sided: each end a one-sided 95 % bound
METRIC = "green"  # the pass rate the gate reads: green at any turn
UNIT = "pp"
FIXES = (
    "run more tasks or more repeats (the interval narrows with tasks, and with repeats where "
    "tasks are not all-or-nothing), or widen the margin"
)


def margin_pp(gate: Gate) -> float:
    """An authoring gate's margin: every one is not-slower (its grammar's one rule)."""
    if gate.margin is None:
        raise AnalysisError(
            f"gate {gate} has no margin; an authoring gate is "
            f"{gate.treatment}:{gate.cell}:not-slower:M"
        )
    return gate.margin


def check_names(gate: Gate, cohorts: Collection[str], subjects: Collection[str]) -> None:
    """ExpectationError naming the fix when a gate names a cohort or subject the run lacks."""
    for what, name, known in (
        ("cohort", gate.treatment, cohorts),
        ("subject", gate.cell, subjects),
    ):
        if name not in known:
            raise ExpectationError(
                f"expectation {gate.text!r} names unknown {what} {name!r}; use one of "
                f"{', '.join(sorted(known))}"
            )


@dataclass(frozen=True)
class Judged:
    """A gate's decision and the tasks it stood on."""

    said: NonInferiority
    tasks: int


def judge(
    cells: pd.DataFrame,
    gate: Gate,
    baseline: str,
    *,
    final: bool = True,
    level: float = LEVEL,
) -> Judged:
    """The gate on the run's informative cells: the paired difference of green rates, in pp."""
    mine = cells[cells["subject"] == gate.cell]
    pair = paired_means(mine, gate.treatment, baseline, METRIC)
    behind = cells_behind(mine, pair, gate.treatment, baseline, METRIC)
    est, low, high = rate_interval(pair, gate.treatment, baseline, behind, level)
    margin = margin_pp(gate)
    return Judged(decide_rates(est, low, high, margin, final=final, level=level), len(pair))


def decide_rates(
    est: float,
    low: float,
    high: float,
    margin_pp: float,
    *,
    final: bool = True,
    level: float = LEVEL,
) -> NonInferiority:
    """The decision on a difference of pass rates (fractions) and its interval, said in pp;
    what `judge` and the simulation (tests/authoring_gate_sim.py) both decide with."""
    return NonInferiority.decide(
        100.0 * est,
        100.0 * low,
        100.0 * high,
        margin_pp,
        higher_is_better=True,
        final=final,
        level=level,
        unit=UNIT,
        fixes=FIXES,
    )


def figures(said: NonInferiority, level: float = LEVEL) -> GateFigures:
    """The gate's numbers for a history: the difference in pp, a drop negative."""
    return GateFigures(
        metric=f"{METRIC}_pp",
        estimate_pct=said.estimate_pct,
        lower_pct=said.low_pct,
        upper_pct=said.high_pct,
        confidence=level,
        margin_pct=said.margin_pct,
    )


def _missing(cells: pd.DataFrame, gate: Gate, baseline: str) -> str | None:
    """Why the run has no contrast for this gate (None: it has one)."""
    for what, column, name in (
        ("subject", "subject", gate.cell),
        ("cohort", "cohort", gate.treatment),
    ):
        if name not in set(cells[column]):
            return f"this run has no cells of {what} {name!r}"
    if gate.treatment == baseline:
        return f"{baseline} is the baseline cohort itself; name a cohort to compare with it"
    return None


def verdicts(
    gates: Sequence[Gate], cells: pd.DataFrame, baseline: str, level: float = LEVEL
) -> tuple[GateVerdict, ...]:
    """Each gate at the end of the run: met, or the sentence why not (an undecided one fails)."""

    def one(gate: Gate) -> GateVerdict:
        why = _missing(cells, gate, baseline)
        if why is not None:
            return GateVerdict.of(gate, False, f"{gate} not met: {why}")
        got = judge(cells, gate, baseline, final=True, level=level)
        met = "met" if got.said.passed else "not met"
        detail = (
            f"{gate} {met}: green rate vs {baseline} in {gate.cell} over "
            f"{got.tasks} paired tasks, {got.said.sentence}"
        )
        finite = all(map(math.isfinite, (got.said.low_pct, got.said.high_pct)))
        return GateVerdict.of(
            gate, got.said.passed, detail, figures(got.said, level) if finite else None
        )

    return tuple(map(one, gates))
