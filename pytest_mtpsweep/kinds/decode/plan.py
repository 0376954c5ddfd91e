"""`mtpsweep plan RUN --target-width W` for decode runs: the run analysed as `analyse` would,
each headline cell's plan from `analysis.planning`, printed as one table and a summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...kindapi import EXIT_OK

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping
    from pathlib import Path


def plan_command(args: argparse.Namespace, run_dir: Path, plan: Mapping[str, Any]) -> int:
    """Analyse the run, plan every headline cell (the pooled row is none), print the plan."""
    from ...analysis.planning import cycle_seconds, plan_cells
    from ...analysis.planning_text import render
    from ...constants import POOLED
    from ...recordlines import terminal
    from .analysis.io import load_run
    from .analysis.pipeline import analyse

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
    if result.unreadable:  # named as `analyse` names them: the pilot is the lines it could read
        print(terminal(result.unreadable))
    return EXIT_OK
