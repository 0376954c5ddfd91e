"""`mtpsweep plan RUN --target-width W` for decode runs: the run analysed as `analyse` would,
each headline cell's plan from `analysis.planning`, printed as one table and a summary."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...kindapi import EXIT_OK

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from ...analysis.planning import CellPlan


def duration(seconds: float | None) -> str:
    """A wall time as a person reads it: 40 s, 12 min, 3.4 h; '-' when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _cycles(c: CellPlan, top: int) -> tuple[str, str]:
    if not math.isfinite(c.floor):  # no components: the note says why
        return "-", "-"
    best = str(c.cycles) if c.cycles is not None else f">{top}"
    low = str(c.low) if c.low is not None else f">{top}"
    high = str(c.high) if c.high is not None else f">{top}"
    return best, (low if low == high else f"{low}-{high}")


def render(
    cells: Sequence[CellPlan],
    *,
    run: str,
    target: float,
    top: int,
    cycles_run: int,
    per_cycle: float | None,
    sessions: int,
) -> str:
    """The plan as the terminal shows it: the header, one row per cell, the summary lines."""
    from ...textwidth import render as table

    head = (
        f"mtpsweep plan {run}: cycles for a 95 % half-width of ±{target:g} % "
        f"(at most {top} cycles; {cycles_run} cycle(s) run; range: the central 80 % over the "
        "components' chi-square uncertainty and a run's own chance)"
    )
    rows = [["cell", "endpoint", "prompts", "now", "cycles", "range", "wall time", "note"]]
    for c in cells:
        best, span = _cycles(c, top)
        wall = per_cycle * c.cycles if per_cycle is not None and c.cycles is not None else None
        now = f"±{c.now:.1f} %" if math.isfinite(c.now) else "-"
        rows.append([c.cell, c.endpoint, str(c.n_prompts), now, best, span, duration(wall),
                     c.note])  # fmt: skip
    lines = [head, table(rows)]
    if per_cycle is None:
        lines.append("wall time: no session file of this run records duration_s")
    else:
        lines.append(
            f"wall time: a cycle took {duration(per_cycle)} here (mean duration_s per treatment "
            f"over {sessions} session(s), summed)"
        )
    reached = [c.cycles for c in cells if c.cycles is not None]
    if reached:
        need = max(reached)
        more = max(0, need - cycles_run)
        extra = f", about {duration(per_cycle * more)} more" if per_cycle is not None else ""
        lines.append(f"every reachable cell: {need} cycles, {more} more than this run{extra}")
    missed = [c for c in cells if c.cycles is None and math.isfinite(c.width_at_max)]
    if missed:
        said = ", ".join(f"{c.cell} (±{c.width_at_max:.1f} % at {top})" for c in missed)
        lines.append(f"cannot reach ±{target:g} % within {top} cycles: {said}")
    return "\n".join(lines)


def plan_command(args: argparse.Namespace, run_dir: Path, plan: Mapping[str, Any]) -> int:
    """Analyse the run, plan every headline cell (the pooled row is none), print the plan."""
    from ...analysis.io import load_run
    from ...analysis.pipeline import analyse
    from ...analysis.planning import cycle_seconds, plan_cells
    from ...constants import POOLED

    run = load_run(run_dir)
    result = analyse([run], baseline=args.baseline, boot=args.boot, seed=args.boot_seed)
    cells = plan_cells(
        result.pairs,
        result.published,
        target=args.target_width,
        max_cycles=args.max_cycles,
        pilot_confidence=result.settings.confidence,
        seed=args.boot_seed,
        skip_subsets=(POOLED,),
    )
    cycles_run = max((c.pilot_cycles for c in cells), default=0)
    measured = [s for s in run.sessions if isinstance(s.get("duration_s"), int | float)]
    print(
        render(
            cells,
            run=str(run_dir),
            target=args.target_width,
            top=args.max_cycles,
            cycles_run=cycles_run,
            per_cycle=cycle_seconds(run.sessions),
            sessions=len(measured),
        )
    )
    return EXIT_OK
