"""Group-sequential looks: where a stop rule looks, what each look spends, and the level of the
interval published at each look (repeated confidence intervals, Jennison & Turnbull ch. 9).

A ladder with `[stop]` looks after every counterbalanced cycle pair from `min_cycles` to
`max_cycles`. Look k publishes its interval at the nominal level 2Φ(c_k) − 1, where c_1..c_K are
the two-sided group-sequential boundaries of a Lan-DeMets spending function over the information
fractions t_k = cycles_k / max_cycles, for the canonical joint distribution of the look statistics
(corr(Z_i, Z_j) = √(t_i / t_j)). The intervals then hold the truth at *every* look at once with
probability 1 − α, so the one published where the run stops keeps its coverage whatever rule
decided to stop there.

Why this is safe for our statistic: the per-prompt value at k cycles is a_p + mean of k cycles'
noise, so its estimates at two looks are correlated at least √(t_i / t_j) (exactly that with no
prompt-level variance, more with it). More correlated looks cross less often, so boundaries for
the canonical correlation are conservative for ours. Pure and deterministic (a seeded Monte Carlo
of the looks, 2^17 draws: each boundary's spent alpha within ~1e-4).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.constants import INTERVAL
from ..base.errors import RunReadError
from ..ladder.values import SPENDINGS
from ..state.plandoc import StopDesign, stop_design, stop_json
from .decision import Decision

MAX_LOOKS = 32
MC_DRAWS = 1 << 17
MC_SEED = 20261203
# A look that may spend (almost) nothing still publishes a finite interval: at most z = 6.
MAX_Z = 6.0
ALPHA = 0.05  # the 95 % interval: faster / slower
EQUIVALENCE_ALPHA = 0.10  # the 90 % interval: two one-sided 5 % tests against the margin


def _norm_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _norm_ppf(p: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(p))


def spent(t: float, alpha: float, spending: str) -> float:
    """Two-sided alpha spent by information fraction t (0 < t <= 1) under a spending function.

    O'Brien-Fleming-type: 2 − 2Φ(z_{1−α/2} / √t), little early and nearly α at the end;
    Pocock-type: α · ln(1 + (e − 1) t), about evenly per look.
    """
    if spending == "obrien-fleming":
        return 2.0 - 2.0 * _norm_cdf(_norm_ppf(1.0 - alpha / 2.0) / math.sqrt(t))
    if spending == "pocock":
        return alpha * math.log1p((math.e - 1.0) * t)
    raise ValueError(f"unknown spending function {spending!r}; use one of {', '.join(SPENDINGS)}")


@functools.lru_cache(maxsize=64)
def boundaries(fractions: tuple[float, ...], alpha: float, spending: str) -> tuple[float, ...]:
    """Two-sided z boundaries c_k: P(no |Z_j| >= c_j before k, |Z_k| >= c_k) = spent(t_k) −
    spent(t_{k−1}), for the canonical correlation of looks at these information fractions."""
    if not fractions or len(fractions) > MAX_LOOKS:
        raise ValueError(f"between 1 and {MAX_LOOKS} looks, not {len(fractions)}")
    if any(b <= a for a, b in itertools.pairwise(fractions)) or not (
        fractions[0] > 0.0 and fractions[-1] <= 1.0
    ):
        raise ValueError(f"information fractions {fractions} must rise within (0, 1]")
    rng = np.random.default_rng(MC_SEED)
    steps = np.diff(np.array((0.0, *fractions)))
    walk = np.cumsum(rng.standard_normal((MC_DRAWS, len(fractions))) * np.sqrt(steps), axis=1)
    z = np.abs(walk / np.sqrt(np.array(fractions)))
    alive = np.ones(MC_DRAWS, dtype=bool)
    out: list[float] = []
    before = 0.0
    for k, t in enumerate(fractions):
        now = spent(t, alpha, spending)
        increment, before = now - before, now
        if k == 0:
            # The first look is exact: one normal.
            c = _norm_ppf(1.0 - increment / 2.0) if increment > 0 else MAX_Z
        else:
            survivors = np.sort(z[alive, k])[::-1]
            m = round(increment * MC_DRAWS)
            if m <= 0 or survivors.size == 0:
                c = MAX_Z
            elif m >= survivors.size:
                c = 0.0
            else:
                c = float(0.5 * (survivors[m - 1] + survivors[m]))
        c = min(c, MAX_Z)
        out.append(c)
        alive &= z[:, k] < c
    return tuple(out)


def levels(looks: tuple[int, ...], alpha: float, spending: str) -> tuple[float, ...]:
    """The nominal two-sided level of the interval published at each look (cycles)."""
    fractions = tuple(c / looks[-1] for c in looks)
    return tuple(2.0 * _norm_cdf(c) - 1.0 for c in boundaries(fractions, alpha, spending))


def planned_looks(min_cycles: int, max_cycles: int) -> tuple[int, ...]:
    """Cycles after which the rule looks: every counterbalanced pair from min_cycles on."""
    return tuple(range(min_cycles, max_cycles + 1, 2))


@dataclass(frozen=True)
class Design:
    """A pre-registered sequential design, as plan.json's `stop` block carries it."""

    rule: str
    looks: tuple[int, ...]
    spending: str
    confidence: tuple[float, ...]  # the 95 % interval's nominal level at each look
    equivalence_confidence: tuple[float, ...]  # the 90 % interval's
    width_pct: float | None = None
    cells: tuple[str, ...] = ()  # the headline cells the rule waits for (empty: every one)

    @classmethod
    def plan(
        cls,
        rule: str,
        min_cycles: int,
        max_cycles: int,
        spending: str,
        width_pct: float | None,
        cells: tuple[str, ...] = (),
    ) -> Design:
        looks = planned_looks(min_cycles, max_cycles)
        return cls(
            rule,
            looks,
            spending,
            levels(looks, ALPHA, spending),
            levels(looks, EQUIVALENCE_ALPHA, spending),
            width_pct,
            cells,
        )

    def look_at(self, cycles: int) -> int:
        """The 1-based look an analysis of `cycles` cycles is: the first planned look at or
        after them (data between looks spend the next look's alpha, never an earlier one's)."""
        for k, c in enumerate(self.looks, start=1):
            if cycles <= c:
                return k
        return len(self.looks)

    def document(self) -> StopDesign:
        """The design as plan.json's `stop` holds it (its only home)."""
        return StopDesign(
            self.rule,
            self.looks,
            self.spending,
            self.confidence,
            self.equivalence_confidence,
            self.width_pct,
            self.cells,
        )

    def to_json(self) -> dict[str, Any]:
        return stop_json(self.document())

    @classmethod
    def of(cls, stop: StopDesign) -> Design:
        """The design plan.json's `stop` holds (`PlanDoc.stop`, parsed by the run reader)."""
        return cls(
            stop.rule,
            stop.looks,
            stop.spending,
            stop.confidence,
            stop.equivalence_confidence,
            stop.width_pct,
            stop.cells,
        )

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Design:
        """From plan.json's `stop` block; ValueError naming the field when it is malformed."""
        try:
            return cls.of(stop_design(doc))
        except RunReadError as exc:
            raise ValueError(str(exc)) from None


@dataclass(frozen=True)
class CellState:
    """One headline cell at a look: its decision and the half-width of its 95 % interval (a
    kind's word for the decision is read as a `Decision`)."""

    cell: str
    decision: Decision
    half_width_pct: float
    gated: bool = False  # a not-slower gate decides it: the rule waits for it too

    def __post_init__(self) -> None:
        object.__setattr__(self, "decision", Decision.of(self.decision))


# the words the `decided` rule counts, for readers of a table's `decision` column; a cell a
# not-slower gate names counts the moment it is shown non-inferior (`pass`) or inferior (`fail`)
DECIDED: tuple[str, ...] = tuple(d.value for d in Decision if d.decided)


def rule_met(design: Design, cells: tuple[CellState, ...]) -> tuple[bool, str]:
    """Whether the pre-registered rule says stop, and the sentence that says why (or why not)."""
    if design.cells:  # only the cells the rule was registered to wait for
        named = {c.cell: c for c in cells}
        absent = [c for c in design.cells if c not in named]
        if absent:
            return False, f"no interval yet for {', '.join(absent)}"
        # and a cell a not-slower gate decides: stopping before it is decided would fail it
        gated = [c.cell for c in cells if c.gated and c.cell not in design.cells]
        cells = tuple(named[c] for c in (*design.cells, *gated))
    if not cells:
        return False, "no headline cell has an interval yet"
    if design.rule == "decided":
        open_cells = [c.cell for c in cells if not c.decision.decided]
        if open_cells:
            return False, f"not decided yet: {', '.join(open_cells)}"
        which = "every cell the rule waits for" if design.cells else "every headline cell"
        return True, f"{which} is decided (" + ", ".join(
            f"{c.cell} {c.decision}" for c in cells
        ) + ")"
    width = design.width_pct if design.width_pct is not None else math.inf
    wide = [
        f"{c.cell} ±{c.half_width_pct:.1f} %"
        for c in cells
        if not (math.isfinite(c.half_width_pct) and c.half_width_pct <= width)
    ]
    if wide:
        return False, f"wider than ±{width:g} %: {', '.join(wide)}"
    which = "every cell the rule waits for" if design.cells else "every headline cell"
    return True, f"{which}'s 95 % interval is within ±{width:g} %"


@dataclass(frozen=True)
class LookState:
    """Where an analysed run stands in its design: the look its data are, and the stop.

    Recomputed from the records, never read from stop.json: the rule is met at a look when the
    published cells of the data that reached it meet it (`judged`), so a missing, damaged or
    hand-edited stop.json cannot change what the report says about why the run stopped."""

    design: Design
    look: int  # 1-based: the look whose levels the published intervals use
    cycles: int  # the cycles the run reached
    stopped_at: int | None  # the look at which the rule was met (None: it was not)
    why: str  # the rule's sentence at this look (why it stopped, or what was still open)
    met: bool = False  # the rule holds for the data at this look

    @classmethod
    def at(cls, plan_stop: StopDesign | None, cycles: int) -> LookState | None:
        """The look of a run that reached `cycles` cycles, from plan.json's `stop` design
        (`PlanDoc.stop`), not yet judged (`judged` applies the rule to the analysed cells);
        None for a fixed design."""
        if plan_stop is None:
            return None
        design = Design.of(plan_stop)
        return cls(design, design.look_at(max(cycles, 1)), cycles, None, "")

    @property
    def confidence(self) -> float:
        return self.design.confidence[self.look - 1]

    @property
    def equivalence_confidence(self) -> float:
        return self.design.equivalence_confidence[self.look - 1]

    def judged(self, cells: Sequence[CellState]) -> LookState:
        """This look with the rule applied to the cells the run's records give at it. Only a
        run whose data end at a look cycle was looked at there; one between looks (cut short)
        is not judged. The last look stops nothing: the run ends there anyway."""
        if self.cycles != self.design.looks[self.look - 1]:
            return self
        met, why = rule_met(self.design, tuple(cells))
        stopped = self.look if met and self.look < len(self.design.looks) else None
        return dataclasses.replace(self, stopped_at=stopped, why=why, met=met)

    def sentence(self) -> str:
        """One line for the report: the rule, the look, why it stopped, the levels."""
        d = self.design
        rule = "decided" if d.rule == "decided" else f"width ±{d.width_pct:g} %"
        where = f"look {self.look} of {len(d.looks)} (after cycle {d.looks[self.look - 1]})"
        if self.stopped_at is not None:
            how = f"stopped at {where}: {self.why}"
        elif self.cycles >= d.looks[-1]:
            meeting = "meeting" if self.met else "without meeting"
            how = f"ran to its maximum, {where}, {meeting} the rule ({self.why})"
        else:
            how = f"ended at {where} without meeting the rule" + (
                f" ({self.why})" if self.why else ""
            )
        early = ""
        if d.looks[0] < INTERVAL.session_cycles:
            early = (
                f" Its first look came after cycle {d.looks[0]}, before the "
                f"{INTERVAL.session_cycles} cycles whose own interval carries the session level, "
                "as stop.allow_early_looks asked: a contrast there borrows the session level "
                "from the run's other arms (their arm × cycle interaction, assuming their "
                "sessions vary alike), and one with no other arm beside it speaks for its "
                "sessions only."
            )
        return (
            f"Sequential design (stop rule {rule}, {d.spending}-type alpha spending, looks after "
            f"cycles {', '.join(map(str, d.looks))}): {how}. The 95 % and 90 % intervals are "
            f"repeated confidence intervals, here at nominal {100 * self.confidence:.2f} % and "
            f"{100 * self.equivalence_confidence:.2f} %.{early}"
        )
