"""A one-sided non-inferiority decision: B is no more than M % worse than the baseline.

The decision reads an interval whose each tail is one-sided α (the published 90 % interval: its
lower end is a one-sided 95 % bound, its upper end the other one). At a `[stop]` look that
interval is the spending-adjusted one (analysis/sequential.py spends the 90 % interval's 10 %
two-sided, so each one-sided tail is held at 5 % over every look together). For a metric where
higher is better (a decode rate, a capacity, a pass rate) "worse" is a drop; for one where lower
is better (a latency percentile) it is a rise. In the drop case:

- `pass` (non-inferior): the lower bound of the % change is above −M;
- `fail` (inferior): the upper bound is below −M, so B is shown worse than the margin;
- otherwise `undecided`; at the last look an undecided gate fails, with the sentence that says
  the host could not resolve the margin and what to do.

The sentence says `%` unless the caller gives its `unit` (a pass rate's difference is in
percentage points, `pp`), and names the caller's `fixes` for an undecided last look when given
(a kind whose noise is not the host's: more tasks, not more cycles).

Pure: no I/O, no heavy import. Nothing here names a kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal

from ..wishes.gate import MAX_MARGIN_PCT, MIN_MARGIN_PCT

# The outcomes as a headline cell's decision (the words the stop rule reads): `pass` and `fail`
# are decided, `undecided` is not.
NONINFERIOR: Final = "pass"
INFERIOR: Final = "fail"
UNDECIDED: Final = "undecided"
Outcome = Literal["pass", "fail", "undecided"]


@dataclass(frozen=True)
class NonInferiority:
    """One gate's decision at one look, and the sentence a report or a JUnit message shows."""

    outcome: Outcome
    margin_pct: float
    estimate_pct: float
    low_pct: float  # the interval's ends, % change (each tail one-sided α)
    high_pct: float
    higher_is_better: bool
    final: bool  # the last look: an undecided gate fails here
    sentence: str

    @property
    def decided(self) -> bool:
        return self.outcome != UNDECIDED

    @property
    def passed(self) -> bool:
        """The gate's verdict: only a shown non-inferiority passes."""
        return self.outcome == NONINFERIOR

    @classmethod
    def decide(
        cls,
        estimate_pct: float,
        low_pct: float,
        high_pct: float,
        margin_pct: float,
        *,
        higher_is_better: bool = True,
        final: bool = False,
        level: float = 0.90,
        unit: str = "%",
        fixes: str | None = None,
    ) -> NonInferiority:
        """The decision on one interval (`level`: its two-sided level, for the sentence; `unit`:
        what the estimate and margin are in; `fixes`: what an undecided last look should try)."""
        if not (MIN_MARGIN_PCT < margin_pct <= MAX_MARGIN_PCT):
            raise ValueError(f"margin {margin_pct!r} % is outside (0, {MAX_MARGIN_PCT:g}]")
        bounded = math.isfinite(low_pct) and math.isfinite(high_pct)
        if higher_is_better:  # worse is a drop: the line sits at −M
            line, good, bad = -margin_pct, low_pct > -margin_pct, high_pct < -margin_pct
        else:  # worse is a rise: the line sits at +M
            line, good, bad = margin_pct, high_pct < margin_pct, low_pct > margin_pct
        outcome: Outcome = UNDECIDED
        if bounded and good:
            outcome = NONINFERIOR
        elif bounded and bad:
            outcome = INFERIOR
        sentence = _sentence(
            outcome,
            estimate_pct,
            low_pct,
            high_pct,
            margin_pct,
            line,
            higher_is_better,
            final,
            level,
            unit,
            fixes,
        )
        return cls(
            outcome, margin_pct, estimate_pct, low_pct, high_pct, higher_is_better, final, sentence
        )


def _sentence(
    outcome: Outcome,
    est: float,
    low: float,
    high: float,
    margin: float,
    line: float,
    higher_is_better: bool,
    final: bool,
    level: float,
    unit: str = "%",
    fixes: str | None = None,
) -> str:
    worse = "drop" if higher_is_better else "rise"
    one_sided = 100.0 * (1.0 - (1.0 - level) / 2.0)
    shown = (
        f"{est:+.2f} {unit} [{100 * level:.2f} % CI {low:+.2f}, {high:+.2f}] against a margin of "
        f"{line:+g} {unit} (one-sided {one_sided:.1f} %)"
    )
    if outcome == NONINFERIOR:
        return f"non-inferior: {shown}; a {worse} beyond {margin:g} {unit} is ruled out"
    if outcome == INFERIOR:
        return f"inferior: {shown}; the {worse} is shown to exceed the {margin:g} {unit} margin"
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"undecided: no interval ({shown})" + (
            f"; the gate fails: {fixes or 'measure more cycles or prompts'}" if final else ""
        )
    if not final:
        return f"undecided: {shown}; the interval still straddles the margin"
    if fixes is not None:
        return (
            f"undecided at the last look, so the gate fails: {shown}, an interval too wide to "
            f"resolve the {margin:g} {unit} margin; {fixes}"
        )
    return (
        f"undecided at the last look, so the gate fails: {shown}, an interval wider than this "
        f"host can resolve at the {margin:g} % margin; run more cycles, widen the margin, or "
        "measure the host's noise floor with `mtpsweep calibrate`"
    )
