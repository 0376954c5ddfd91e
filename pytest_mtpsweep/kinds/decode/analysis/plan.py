"""`mtpsweep plan RUN --target-width W` for decode runs: the run analysed as `analyse` would,
each headline cell's `CellPlan.by_prompt` (its prompts x cycles matrix from the pairs
table), printed as one table and a summary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ....kindapi import SUBSETS, ExitStatus
from ....kindapi.analysis import CellPlan
from ....kindapi.records import recordlines
from .contraststats import FloatArray
from .io import load_run
from .pipeline import analyse
from .sweepplanning import ArmEstimate, plan_sweep

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from ....kindapi.records import PlanDoc


def plan_command(args: argparse.Namespace, run_dir: Path, plan: PlanDoc) -> int:
    """Analyse the run, plan every headline cell (the pooled row is none), print the plan."""

    run = load_run(run_dir)
    result = analyse([run], baseline=args.baseline, boot=args.boot, seed=args.boot_seed)
    cells = plan_cells(
        result.pairs,
        result.published,
        target=args.target_width,
        max_cycles=args.max_cycles,
        pilot_confidence=result.settings.confidence,
        seed=args.boot_seed,
        skip_subsets=(SUBSETS.pooled,),
    )
    print(
        CellPlan.table(
            cells, run.sessions, run=str(run_dir), target=args.target_width, top=args.max_cycles
        )
    )
    if result.unreadable:  # named as `analyse` names them: the pilot is the lines it could read
        print(recordlines.terminal(result.unreadable))
    if result.sweep is not None:
        cycles_run = max((c.pilot_cycles for c in cells), default=0)
        measured = [s for s in run.sessions if isinstance(s.get("duration_s"), int | float)]
        print("\n".join(sweep_lines(result.sweep, run.plan, cycles_run, measured, args.max_cycles)))
    return ExitStatus.OK


def sweep_lines(
    sweep: Any, plan: PlanDoc, cycles_run: int, measured: list[Any], top: int
) -> list[str]:
    """A sweep's projected sessions and hours against the full grid (`analysis.sweep_planning`)."""

    estimates = [
        ArmEstimate(iv.arm, s.subset, iv.estimate_pct, (iv.high_pct - iv.low_pct) / 2.0)
        for s in sweep.subsets
        if s.faster is not None
        for iv in s.faster.intervals
    ]
    stop = plan.stop
    looks = list(stop.looks) if stop else list(range(2, top + 1, 2))
    levels = list(stop.confidence) if stop else [0.95] * len(looks)
    subsets = tuple(dict.fromkeys(c.partition(":")[2] for c in (stop.cells if stop else ())))
    durations = [float(m["duration_s"]) for m in measured]
    projected = plan_sweep(
        estimates,
        arms=sweep.arms,
        baseline=sweep.baseline,
        pilot_cycles=max(cycles_run, 1),
        looks=looks,
        confidence=levels,
        subsets=subsets,
        session_s=sum(durations) / len(durations) if durations else None,
    )
    return projected.lines(sweep.baseline)


def cell_matrix(pairs: pd.DataFrame, endpoint: str, treatment: str, subset: str) -> FloatArray:
    """The prompts × cycles log ratios of one cell from the pairs table (NaN: no pair)."""
    mine = pairs[
        (pairs["endpoint"] == endpoint)
        & (pairs["treatment"] == treatment)
        & (pairs["subset"] == subset)
    ]
    if mine.empty:
        return np.full((0, 0), np.nan)
    wide = mine.pivot_table(
        index="prompt_id", columns=["run_id", "cycle"], values="log_ratio", aggfunc="mean"
    )
    return np.asarray(wide.to_numpy(dtype=np.float64))


def plan_cells(
    pairs: pd.DataFrame,
    published: pd.DataFrame,
    *,
    target: float,
    max_cycles: int,
    confidence: float = 0.95,
    pilot_confidence: float = 0.95,
    seed: int = 0,
    skip_subsets: Sequence[str] = (),
) -> tuple[CellPlan, ...]:
    """Every published treatment × subset cell's plan (subsets in `skip_subsets` left out:
    the pooled row is no headline cell)."""
    out = []
    for row in published.to_dict(orient="records"):
        if row["subset"] in skip_subsets:
            continue
        matrix = cell_matrix(pairs, str(row["endpoint"]), str(row["treatment"]), str(row["subset"]))
        out.append(
            CellPlan.by_prompt(
                f"{row['treatment']}:{row['subset']}",
                str(row["endpoint"]),
                matrix,
                row,
                target=target,
                max_cycles=max_cycles,
                confidence=confidence,
                pilot_confidence=pilot_confidence,
                seed=seed,
            )
        )
    return tuple(out)
