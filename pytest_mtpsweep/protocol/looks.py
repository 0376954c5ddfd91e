"""The stop rule at run time: after each counterbalanced cycle pair the kind's interim analysis
is looked at, and once the pre-registered rule is met the sessions left are not run.

Every look, taken or resumed, is appended to stop.json (one writer: the run directory); the
analysis reads it to say where the run stopped and why. A look is deterministic (the same
records give the same decisions), so `--resume` re-takes the looks it reaches and continues the
sequence where it left off.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..analysis.sequential import Design, rule_met
from ..base import schema
from ..base.constants import SUBSETS
from ..base.errors import LadderError, OptionError
from ..interface import registry
from ..ladder import Ladder, SessionSlot
from ..report.analysisresult import AnalysisResult
from ..state.rundocs import Look, LookCell, StopDoc

if TYPE_CHECKING:
    from pathlib import Path

    from ..analysis.sequential import CellState, Design
    from ..interface.kind import Case, InterimFn, Kind, KindRun
    from ..report.analysisresult import AnalysisResult
    from .sweeplooks import SweepLooks


def check_supported(ladder: Ladder, kind: Kind) -> None:
    """A `[stop]` ladder of a kind without an `interim` part is refused in one line."""
    if ladder.stop is not None and kind.interim is None:
        raise OptionError(
            f"ladder {ladder.name} ({ladder.path}) has a [stop] rule, and the {ladder.kind} "
            "kind cannot look at its results between cycles yet; drop [stop] and set cycles."
        )


def check_cells(ladder: Ladder, kind: KindRun, cases: Sequence[Case], selected: bool) -> None:
    """Every `[stop] cells` entry is a headline cell these cases can give, or the rule would
    wait the whole budget for it: refused in one line before anything starts. `selected`: the
    cases are what `-k` left of the ladder's."""
    if ladder.stop is None or not ladder.stop.cells:
        return
    can = kind.stop_cells(cases)
    if can is None:
        return
    for cell in ladder.stop.cells:
        if cell in can:
            continue
        if cell.rpartition(":")[2] == SUBSETS.pooled:
            raise LadderError(
                f"{ladder.path}: stop.cells names {cell!r}, the analysis' pooled row, which is no "
                f"headline cell; name the cells themselves ({', '.join(sorted(can)) or 'none'})."
            )
        if selected:
            raise OptionError(
                f"stop.cells of ladder {ladder.name} names {cell!r}, and the selection (-k or "
                f"node ids) leaves none of its cases, so the rule would wait for it to the "
                f"last cycle; select its cases, or run without the selection (cells left: "
                f"{', '.join(sorted(can)) or 'none'})."
            )
        raise LadderError(
            f"{ladder.path}: stop.cells names {cell!r}, which this ladder never measures, so "
            f"the rule would wait for it to the last cycle; name one of its headline cells "
            f"({', '.join(sorted(can)) or 'none'})."
        )


def interim_of(kind: Kind) -> InterimFn:
    """The kind's `interim` part, imported now (a KindError in one line if it does not load)."""
    got: InterimFn = registry.part(kind, "interim")
    return got


def saver(run_dir: Path) -> Callable[[AnalysisResult], object]:
    """How a look saves the interim result it took: RUN/analysis/ through the one writer."""

    def save(result: AnalysisResult) -> object:

        return result.save(run_dir / schema.ANALYSIS_DIR, run_dir)

    return save


def describe(ladder: Ladder) -> str:
    """The plan's size as lint and the terminal say it: at most N cycles under a stop rule."""
    if ladder.stop is None:
        return f"{ladder.cycles} cycles"
    looks = range(ladder.stop.min_cycles, ladder.stop.max_cycles + 1, 2)
    if ladder.sweep is not None:
        return (
            f"{ladder.cycles} cycles at most (a sweep: arms surely not the best leave at the "
            f"looks after {', '.join(map(str, looks))}; it stops once one arm is left or the "
            f"best set is within ±{ladder.analysis.margin_pct:g} %)"
        )
    on = f" on {', '.join(ladder.stop.cells)}" if ladder.stop.cells else ""
    return (
        f"{ladder.cycles} cycles at most (stop rule {ladder.stop.rule}{on}, looks after "
        f"{', '.join(map(str, looks))})"
    )


def design_of(ladder: Ladder) -> Design | None:
    """The ladder's `[stop]` as a design with its per-look levels (None: fixed cycles)."""
    if ladder.stop is None:
        return None

    s = ladder.stop
    return Design.plan(s.rule, s.min_cycles, s.max_cycles, s.spending, s.width_pct, s.cells)


def prereg_lines(design: Design | None) -> list[str]:
    """preregistration.md's "Stopping rule" section (empty for a fixed design)."""
    if design is None:
        return []
    which = f"each of {', '.join(design.cells)}" if design.cells else "every headline cell"
    rule = (
        f"{which} is faster, slower or equivalent (a cell an --expect not-slower gate names: "
        "pass or fail)"
        if design.rule == "decided"
        else f"{which}'s 95 % interval is within ±{design.width_pct:g} %"
    )
    if design.cells:
        rule += " (the rule waits for these; the other cells are reported as they stand)"
    levels = ", ".join(
        f"after cycle {c}: {100 * a:.2f} % / {100 * b:.2f} %"
        for c, a, b in zip(
            design.looks, design.confidence, design.equivalence_confidence, strict=True
        )
    )
    return [
        "## Stopping rule",
        "",
        f"- Stop once {rule}; looks after cycles {', '.join(map(str, design.looks))} "
        f"(at most {design.looks[-1]} cycles).",
        f"- Alpha spending: {design.spending}-type (Lan-DeMets), two-sided 5 % for the 95 % "
        "interval and 10 % for the 90 % (equivalence) interval; the published intervals are "
        "repeated confidence intervals, valid at whichever look the run stops.",
        f"- Nominal levels of the 95 % / 90 % intervals at each look: {levels}.",
        "",
    ]


@dataclass
class Looks:
    """The looks of one run: due before the first session of the cycle after a look."""

    design: Design
    # the kind's analysis of the run directory now (it writes nothing)
    interim: Callable[[], AnalysisResult | Sequence[CellState]]
    write: Callable[[StopDoc], object]  # run_dir.write_stop
    save: Callable[[AnalysisResult], object] | None = None  # after the look is in stop.json
    taken: list[Look] = field(default_factory=list)
    stopped: Look | None = None
    sweep: SweepLooks | None = None  # a [sweep]: arms leave at looks; settled stops the run

    def due(self, slot: SessionSlot) -> int | None:
        """The look (1-based) to take before this session, if one is due and not yet taken."""
        after = slot.cycle - 1
        if after not in self.design.looks[:-1] or self.stopped is not None:
            return None
        k = self.design.looks.index(after) + 1
        return None if any(t.look == k for t in self.taken) else k

    def take(self, k: int) -> bool:
        """Look k: the kind's interim analysis against the rule; True when the rule is met."""

        result: AnalysisResult | None = None
        cells: tuple[CellState, ...] = ()
        try:
            got = self.interim()
        except Exception as exc:  # an interim that cannot analyse says so and the run goes on
            error = f"the interim analysis failed: {exc}"
        else:
            result = got if isinstance(got, AnalysisResult) else None
            cells, error = tuple(got.cells if isinstance(got, AnalysisResult) else got), ""
        met, why = rule_met(self.design, cells)
        if self.sweep is not None:  # a sweep stops when settled, not on its cells' rule
            alpha = 1.0 - self.design.confidence[k - 1]
            met, why = self.sweep.look(k, self.design.looks[k - 1], alpha)
        entry = Look(
            k,
            self.design.looks[k - 1],
            schema.utc_now_iso(),
            met,
            error or why,
            tuple(LookCell(c.cell, c.decision.value, c.half_width_pct) for c in cells),
        )
        self.taken.append(entry)
        if met:
            self.stopped = entry
        self.write(self.document())
        if result is not None and self.save is not None:
            self._save(result)
        return met

    def _save(self, result: AnalysisResult) -> None:
        """The look's result into RUN/analysis/, after its record is in stop.json, so the
        report never speaks of a look stop.json lacks."""
        # a report that cannot be written now is the end analysis' to say (it writes it again)
        with contextlib.suppress(Exception):
            if self.save is not None:
                self.save(result)

    def document(self) -> StopDoc:
        """stop.json: every look taken and the look that stopped the run (the design is
        plan.json's `stop`, written once when the run was founded)."""
        return StopDoc(
            looks=tuple(self.taken),
            stopped_at=self.stopped.look if self.stopped else None,
            dropped=tuple(self.sweep.dropped) if self.sweep is not None else None,
        )
