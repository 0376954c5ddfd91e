"""A performance gate's message: the decision, the estimate with its interval, and the margin,
in one line a CI log and a JUnit `<failure message>` show as they are.

`GateOutcome` is the typed outcome a non-inferiority decision (`TREATMENT:SUBSET:not-slower:M`)
hands over: its fields are the decision's (estimate, lower, upper, margin), so the decision's
own module converts to it field by field; nothing here decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DECISIONS = ("not-slower", "slower", "inconclusive", "not-judged")


@dataclass(frozen=True)
class GateOutcome:
    """One gate's decision and what it rests on; percents of the treatment over the baseline
    (+ faster), the interval two-sided at `confidence` (its lower end is the one-sided bound)."""

    treatment: str
    baseline: str
    subset: str
    decision: str  # one of DECISIONS; only "not-slower" meets the gate
    estimate: float
    lower: float
    upper: float
    margin: float  # the loss allowed, in percent (3.0: no more than 3 % slower)
    confidence: float = 0.90  # two-sided; its lower end is a one-sided 95 % bound
    reason: str = ""  # why it was not judged (no pairs, --no-analysis)

    @property
    def met(self) -> bool:
        return self.decision == "not-slower"

    @property
    def gate(self) -> str:
        """The gate as the user wrote it: `slow:prose:not-slower:3`."""
        return f"{self.treatment}:{self.subset}:not-slower:{self.margin:g}"


def signed(value: float) -> str:
    """A percent with its sign and a true minus (−3.0 %), or n/a."""
    if not math.isfinite(value):
        return "n/a"
    return f"{value:+.1f}".replace("-", "\u2212") + " %"


def interval(outcome: GateOutcome) -> str:
    """`−1.2 % [−2.9, +0.4] (90 %)`."""
    lo, hi = (signed(v).removesuffix(" %") for v in (outcome.lower, outcome.upper))
    return f"{signed(outcome.estimate)} [{lo}, {hi}] ({outcome.confidence * 100:g} %)"


def gate_message(outcome: GateOutcome) -> str:
    """The one line that says what the gate decided, on what, against which margin."""
    t, b, s = outcome.treatment, outcome.baseline, outcome.subset
    floor = signed(-outcome.margin)
    head = f"{outcome.gate}: {outcome.decision.upper()}"
    if outcome.decision == "not-judged":
        return f"{head}: {t} against {b} on {s} was not judged ({outcome.reason or 'no analysis'})."
    where = f"{t} against {b} on {s}: {interval(outcome)}"
    if outcome.decision == "not-slower":
        return f"{head} (met): {where}; the lower bound is above the margin {floor}."
    if outcome.decision == "slower":
        return (
            f"{head} (failed): {where}; the whole interval is below the margin {floor}: "
            f"{t} is slower than {b} by more than {outcome.margin:g} %."
        )
    return (
        f"{head} (failed): {where}; the interval reaches below the margin {floor}, so a loss "
        f"over {outcome.margin:g} % is not ruled out: more cycles or a quieter host narrow it."
    )


def gate_properties(outcome: GateOutcome) -> dict[str, str]:
    """The gate's JUnit properties (a CI dashboard reads numbers, not the sentence)."""
    return {
        "gate": outcome.gate,
        "decision": outcome.decision,
        "met": str(outcome.met).lower(),
        "estimate_pct": f"{outcome.estimate:.3f}",
        "lower_pct": f"{outcome.lower:.3f}",
        "upper_pct": f"{outcome.upper:.3f}",
        "margin_pct": f"{outcome.margin:g}",
        "confidence": f"{outcome.confidence:g}",
    }
