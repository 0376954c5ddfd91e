"""The load kind's `mtpsweep analyse RUN...`: each run analysed and its gate judged."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ....kindapi import AnalysisError, ExitStatus, Gate
from ..planfields import check_plan
from .gates import treatment_problem, verdicts

if TYPE_CHECKING:
    import argparse

    from ....kindapi.records import PlanDoc

from ....kindapi.records import schema
from .compute import analyse


def analyse_command(
    args: argparse.Namespace, runs: Sequence[Path], plans: Sequence[PlanDoc]
) -> int:
    """`mtpsweep analyse RUN...` of load runs: each run's headline and report again, then each
    --expect gate judged on it as the session-end analysis judges it (exit 1 when one is not
    met)."""

    for run_dir, plan in zip(runs, plans, strict=True):  # every run's, before any is analysed
        check_plan(plan, f"plan file {run_dir / schema.PLAN_FILE}")
    gates: tuple[Gate, ...] = getattr(args, "gates", ())
    for gate in gates:  # refused before anything is written
        check_gate(gate, plans, args.baseline)
    out = getattr(args, "out", None)
    if out is not None and len(runs) > 1:
        raise AnalysisError(
            "load runs are analysed each into its own folder, so --out takes one run; analyse "
            "each run on its own, or drop --out (each run's analysis/)"
        )
    status = ExitStatus.OK
    for run_dir in runs:
        try:
            done = analyse(
                run_dir,
                baseline=args.baseline,
                boot=args.boot,
                seed=args.boot_seed,
                out=Path(out) if out is not None else None,
            )
        except AnalysisError as exc:
            print(f"mtpsweep analyse: error: {run_dir}: {exc}", file=sys.stderr)
            status = ExitStatus.ERROR
            continue
        print("\n".join(done.lines))
        for v in verdicts(gates, done.rows, done.endpoint, done.level, done.ratios):
            if v.passed:
                print(f"gate met: {v.sentence}")
            else:
                print(f"gate FAILED: {run_dir}: {v.sentence}", file=sys.stderr)
                status = max(status, ExitStatus.GATE_FAILED)
    return status


def check_gate(gate: Gate, plans: Sequence[PlanDoc], baseline: str | None) -> None:
    """A gate every run can be judged on: a treatment of each, not its baseline; AnalysisError
    naming the fix else (the session-end analysis refuses the same before a run starts)."""

    for plan in plans:
        problem = treatment_problem(gate, plan.treatment_keys, baseline or plan.analysis.baseline)
        if problem is not None:
            raise AnalysisError(problem)
