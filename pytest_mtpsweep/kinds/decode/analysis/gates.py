"""`--expect TREATMENT:SUBSET:faster|slower|equivalent` gates, judged on published decisions, and
`TREATMENT:SUBSET:not-slower:M` (no more than M % slower, one-sided 95 %), judged by
`analysis/noninferiority.py` on the published 90 % interval (a `[stop]` look's spending-adjusted
one), which also decides the gated cell for the stop rule (`stop_cells`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ....kindapi import ExpectationError, Gate, GateFigures, GateVerdict
from ....kindapi.analysis import Decision, NonInferiority

if TYPE_CHECKING:
    import pandas as pd

    from ....kindapi.analysis import CellState
    from .runvalues import DecodeAnalysis


def check_treatment(gate: Gate, known: Sequence[str], baseline: str) -> None:
    """ExpectationError for a gate that cannot be judged at all: a treatment the run never
    had, or the baseline itself."""
    if gate.treatment not in known:
        raise ExpectationError(
            f"expectation {gate} names unknown treatment {gate.treatment!r}; use one of "
            f"{', '.join(sorted(known))}"
        )
    if gate.treatment == baseline:
        raise ExpectationError(
            f"expectation {gate} names the baseline {gate.treatment!r} itself; name a "
            "treatment to compare with it"
        )


def judge(result: DecodeAnalysis, gate: Gate) -> GateVerdict:
    """One gate on the published decisions: met, or the sentence why not, with its estimate
    and interval where the run has its row. ExpectationError for one that cannot be judged."""
    base = result.settings.baseline
    check_treatment(gate, result.known_treatments, base)
    published = result.published.set_index(["treatment", "subset"])
    key = (gate.treatment, gate.cell)
    if key not in published.index:
        return GateVerdict.of(
            gate,
            False,
            f"{gate} not met: this run has no {gate.cell} "
            f"contrast for {gate.treatment} vs {base} (not selected or no "
            "records)",
        )
    row = published.loc[key]
    numbers = figures(result, gate, row)
    if gate.margin is not None:
        level = result.settings.equivalence_confidence
        said = judge_margin(row, gate.margin, final=True, level=level)
        if said.passed:
            return GateVerdict.of(gate, True, f"{gate} met: {said.sentence}", numbers)
        return GateVerdict.of(
            gate,
            False,
            f"{gate} not met: {said.sentence} ({row['endpoint']} "
            f"endpoint, {int(row['n_prompts'])} prompts)",
            numbers,
        )
    if row["decision"] == gate.rule:
        line = published_line(row)
        return GateVerdict.of(gate, True, f"{gate} met: {line}".rstrip(": "), numbers)
    if int(row["n_pairs"]) == 0:
        return GateVerdict.of(
            gate,
            False,
            f"{gate} not met: no {gate.treatment}/{base} pairs on {gate.cell} prompts",
            numbers,
        )
    return GateVerdict.of(
        gate,
        False,
        (
            f"{gate} not met: decision is {row['decision']} ({row['endpoint']} endpoint "
            f"{row['pct_change']:+.2f}%, 95% CI [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}], "
            f"90% CI [{row['ci90_low']:+.2f}, {row['ci90_high']:+.2f}], margin "
            f"±{result.settings.margin_pct:g}%, {int(row['n_prompts'])} prompts)"
        ),
        numbers,
    )


def figures(result: DecodeAnalysis, gate: Gate, row: pd.Series) -> GateFigures:
    """The published row's estimate and interval for a gate's cell: the 90 % one a not-slower
    gate is judged on, the 95 % one for the others."""
    s = result.settings
    low, high, level = (
        ("ci90_low", "ci90_high", s.equivalence_confidence)
        if gate.margin is not None
        else ("ci_low", "ci_high", s.confidence)
    )
    return GateFigures(
        metric=str(row["endpoint"]),
        estimate_pct=float(row["pct_change"]),
        lower_pct=float(row[low]),
        upper_pct=float(row[high]),
        confidence=level,
        margin_pct=gate.margin,
    )


def published_line(r: Mapping[str, Any]) -> str:
    """One published contrast as a line: `+86.1 % [95% CI +54.0, +111.2] faster (...)`."""

    def na(value: object) -> bool:
        return value is None or (isinstance(value, float) and math.isnan(value))

    change = "n/a" if na(r["pct_change"]) else f"{r['pct_change']:+.1f} %"
    ci = (
        ""
        if na(r["ci_low"]) or na(r["ci_high"])
        else f" [95% CI {r['ci_low']:+.1f}, {r['ci_high']:+.1f}]"
    )
    return (
        f"{change}{ci} {r['decision']} ({r['endpoint']} endpoint, "
        f"{int(r['n_prompts'])} prompts, {int(r['n_pairs'])} pairs)"
    )


def judge_margin(
    row: pd.Series, margin_pct: float, *, final: bool, level: float = 0.90
) -> NonInferiority:
    """A not-slower gate on one published row: its 90 % interval (one-sided 95 % each end, at
    a look the spending-adjusted level) against −M; a decode rate is better higher."""
    return NonInferiority.decide(
        float(row["pct_change"]),
        float(row["ci90_low"]),
        float(row["ci90_high"]),
        margin_pct,
        higher_is_better=True,
        final=final,
        level=level,
    )


def stop_cells(
    cells: Sequence[CellState],
    published: pd.DataFrame,
    gates: Sequence[Gate],
    level: float = 0.90,
) -> tuple[CellState, ...]:
    """The headline cells a stop rule looks at, each cell a not-slower gate names decided by
    the gate instead (`pass` or `fail` the moment either is shown, `undecided`
    until then): the gate is what the run waits for on that cell."""
    import dataclasses

    margins = {g.key: g.margin for g in gates if g.margin is not None}
    if not margins:
        return tuple(cells)
    rows = published.set_index(["treatment", "subset"])
    out = []
    for c in cells:
        treatment, _, subset = c.cell.rpartition(":")
        margin = margins.get(c.cell)
        if margin is None or (treatment, subset) not in rows.index:
            out.append(c)
            continue
        verdict = judge_margin(rows.loc[(treatment, subset)], margin, final=False, level=level)
        out.append(dataclasses.replace(c, decision=Decision(verdict.outcome), gated=True))
    return tuple(out)
