"""`--expect TREATMENT:SUBSET:faster|slower|equivalent` gates, judged on published decisions."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ....kindapi import ExpectationError
from .model import KNOWN_SUBSETS, DecodeAnalysis

DIRECTIONS: tuple[str, ...] = ("faster", "slower", "equivalent")
SYNTAX = "TREATMENT:SUBSET:faster|slower|equivalent"


@dataclass(frozen=True)
class Expectation:
    """One gate: this treatment is faster/slower/equivalent to the baseline on this subset."""

    treatment: str
    subset: str
    direction: str

    def __str__(self) -> str:
        return f"{self.treatment}:{self.subset}:{self.direction}"


def parse_expectation(text: str, *, treatments: Collection[str] | None = None) -> Expectation:
    """Parse one gate; `treatments`, when given, are the names the treatment must be among."""
    # Treatment keys may themselves hold colons, so split from the right.
    parts = text.strip().rsplit(":", 2)
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise ExpectationError(
            f"expectation {text!r} is not {SYNTAX}; write it like gate_0.10:structured:faster"
        )
    treatment, subset, direction = (p.strip() for p in parts)
    if direction not in DIRECTIONS:
        raise ExpectationError(
            f"expectation {text!r} ends in {direction!r}; use one of {', '.join(DIRECTIONS)}"
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
    return Expectation(treatment, subset, direction)


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
