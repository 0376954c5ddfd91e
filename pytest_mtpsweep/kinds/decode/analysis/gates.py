"""`--expect TREATMENT:SUBSET:faster|slower|equivalent` gates, judged on published decisions, and
`TREATMENT:SUBSET:not-slower:M` (no more than M % slower, one-sided 95 %), judged by
`analysis/noninferiority.py` on the published 90 % interval (a `[stop]` look's spending-adjusted
one), which also decides the gated cell for the stop rule (`stop_cells`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ....kindapi import ExpectationError
from ....kindapi.analysis import WORD, Decision, NonInferiority, check_margin, decide
from .model import KNOWN_SUBSETS, DecodeAnalysis

if TYPE_CHECKING:
    import pandas as pd

    from ....kindapi.analysis import CellState

DIRECTIONS: tuple[str, ...] = ("faster", "slower", "equivalent", WORD)
SYNTAX = f"TREATMENT:SUBSET:faster|slower|equivalent or TREATMENT:SUBSET:{WORD}:M"


@dataclass(frozen=True)
class Expectation:
    """One gate: this treatment is faster/slower/equivalent to the baseline on this subset."""

    treatment: str
    subset: str
    direction: str
    margin_pct: float | None = None  # not-slower's M; None for the other directions

    def __str__(self) -> str:
        tail = "" if self.margin_pct is None else f":{self.margin_pct:g}"
        return f"{self.treatment}:{self.subset}:{self.direction}{tail}"

    @property
    def cell(self) -> str:
        return f"{self.treatment}:{self.subset}"


def parse_expectation(text: str, *, treatments: Collection[str] | None = None) -> Expectation:
    """Parse one gate; `treatments`, when given, are the names the treatment must be among."""
    # Treatment keys may themselves hold colons, so split from the right.
    four = text.strip().rsplit(":", 3)
    margin: float | None = None
    if len(four) == 4 and four[2].strip() == WORD:
        try:
            margin = check_margin(four[3].strip(), f"expectation {text!r}")
        except ValueError as exc:
            raise ExpectationError(str(exc)) from None
        text_parts = four[:3]
    else:
        text_parts = text.strip().rsplit(":", 2)
    parts = text_parts
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise ExpectationError(
            f"expectation {text!r} is not {SYNTAX}; write it like gate_0.10:structured:faster"
        )
    treatment, subset, direction = (p.strip() for p in parts)
    if direction not in DIRECTIONS:
        raise ExpectationError(
            f"expectation {text!r} ends in {direction!r}; use one of {', '.join(DIRECTIONS)}"
        )
    if direction == WORD and margin is None:
        raise ExpectationError(
            f"expectation {text!r} gives {WORD} no margin; write it like "
            f"{treatment}:{subset}:{WORD}:3 (no more than 3 % slower)"
        )
    if subset not in KNOWN_SUBSETS:
        raise ExpectationError(
            f"expectation {text!r} names unknown subset {subset!r}; use one of "
            f"{', '.join(KNOWN_SUBSETS)}"
        )
    if treatments is not None and treatment not in treatments:
        raise ExpectationError(
            f"expectation {text!r} names unknown treatment {treatment!r}; use one of "
            f"{', '.join(sorted(treatments))}"
        )
    return Expectation(treatment, subset, direction, margin)


def evaluate_expectations(
    result: DecodeAnalysis, expectations: Sequence[str | Expectation]
) -> list[str]:
    """One line per unmet gate (empty when all are met).

    Raises ExpectationError for a gate that cannot be judged at all: bad syntax, a treatment
    the run never had, or the baseline itself.
    """
    parsed = [
        e
        if isinstance(e, Expectation)
        else parse_expectation(e, treatments=result.known_treatments)
        for e in expectations
    ]
    failures: list[str] = []
    published = result.published.set_index(["treatment", "subset"])
    for exp in parsed:
        if exp.treatment not in result.known_treatments:
            raise ExpectationError(
                f"expectation {exp} names unknown treatment {exp.treatment!r}; use one of "
                f"{', '.join(sorted(result.known_treatments))}"
            )
        if exp.treatment == result.settings.baseline:
            raise ExpectationError(
                f"expectation {exp} names the baseline {exp.treatment!r} itself; name a "
                "treatment to compare with it"
            )
        key = (exp.treatment, exp.subset)
        if key not in published.index:
            failures.append(
                f"{exp} not met: this run has no {exp.subset} contrast for {exp.treatment} "
                f"vs {result.settings.baseline} (not selected or no records)"
            )
            continue
        row = published.loc[key]
        if exp.margin_pct is not None:
            level = result.settings.equivalence_confidence
            verdict = judge_margin(row, exp.margin_pct, final=True, level=level)
            if not verdict.passed:
                failures.append(f"{exp} not met: {verdict.sentence} ({row['endpoint']} endpoint, "
                                f"{int(row['n_prompts'])} prompts)")  # fmt: skip
            continue
        if row["decision"] == exp.direction:
            continue
        if int(row["n_pairs"]) == 0:
            failures.append(
                f"{exp} not met: no {exp.treatment}/{result.settings.baseline} pairs on "
                f"{exp.subset} prompts"
            )
            continue
        failures.append(
            f"{exp} not met: decision is {row['decision']} ({row['endpoint']} endpoint "
            f"{row['pct_change']:+.2f}%, 95% CI [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}], "
            f"90% CI [{row['ci90_low']:+.2f}, {row['ci90_high']:+.2f}], margin "
            f"±{result.settings.margin_pct:g}%, {int(row['n_prompts'])} prompts)"
        )
    return failures


def judge_margin(
    row: pd.Series, margin_pct: float, *, final: bool, level: float = 0.90
) -> NonInferiority:
    """A not-slower gate on one published row: its 90 % interval (one-sided 95 % each end, at
    a look the spending-adjusted level) against −M; a decode rate is better higher."""
    return decide(
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
    gates: Sequence[Expectation],
    level: float = 0.90,
) -> tuple[CellState, ...]:
    """The headline cells a stop rule looks at, each cell a not-slower gate names decided by
    the gate instead (`pass` or `fail` the moment either is shown, `undecided`
    until then): the gate is what the run waits for on that cell."""
    import dataclasses

    margins = {g.cell: g.margin_pct for g in gates if g.margin_pct is not None}
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
