"""`mtpsweep plan`'s text: the header, one row per headline cell, the summary lines (shared by
every kind that plans; the numbers come from `planning`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..base.textwidth import render as table
from .planning import CellPlan, cycle_seconds


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
    session_facts: Sequence[Mapping[str, object]],
    *,
    run: str,
    target: float,
    top: int,
) -> str:
    """The plan as the terminal shows it: the header, one row per cell, the summary lines.
    The pilot's cycles are its cells' most; a cycle's wall time and the sessions it is taken
    over come from the pilot's session files (`session_facts`)."""
    cycles_run = max((c.pilot_cycles for c in cells), default=0)
    per_cycle = cycle_seconds(session_facts)
    sessions = sum(1 for s in session_facts if isinstance(s.get("duration_s"), int | float))
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
        rows.append(
            [c.cell, c.endpoint, str(c.n_prompts or "-"), now, best, span, duration(wall), c.note]
        )
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
        if more == 0:
            lines.append(f"every reachable cell: {need} cycles, which this run has")
        else:
            extra = f", about {duration(per_cycle * more)} more" if per_cycle is not None else ""
            lines.append(f"every reachable cell: {need} cycles, {more} more than this run{extra}")
    missed = [c for c in cells if c.cycles is None and math.isfinite(c.width_at_max)]
    if missed:
        said = ", ".join(f"{c.cell} (±{c.width_at_max:.1f} % at {top})" for c in missed)
        lines.append(f"cannot reach ±{target:g} % within {top} cycles: {said}")
    return "\n".join(lines)
