"""The authoring kind's own commands: `mtpsweep tasks import humaneval DIR`, and what
`mtpsweep analyse` does with an authoring run directory."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...kindapi import BOOT, AnalysisError, ExitStatus, Gate
from ...kindapi.records import recordlines as rl
from .analysis.gates import verdicts
from .analysis.io import analyse_dir
from .humaneval import register_cli
from .planfields import check_plan

if TYPE_CHECKING:
    import argparse

    from ...kindapi.records import PlanDoc


def register(sub: Any) -> None:

    register_cli(sub)


def analyse(args: argparse.Namespace, runs: Sequence[Path], plans: Sequence[PlanDoc]) -> int:
    """One authoring run, analysed into its analysis/ directory with the settings its plan
    registered (an explicit --boot, --boot-seed or --baseline wins), then each --expect
    `COHORT:SUBJECT:not-slower:M` gate (exit 1 when one is not met)."""
    if len(runs) > 1 or args.pool or args.out:
        raise AnalysisError(
            "an authoring run is analysed on its own, into its analysis/ directory: drop --pool, "
            "--out and the other runs"
        )

    gates: tuple[Gate, ...] = getattr(args, "gates", ())  # parsed before the analysis runs

    plan = plans[0]
    check_plan(plan, f"plan file {runs[0] / 'plan.json'}")
    registered = plan.kind_fields.get("contrast") or {}
    boot = args.boot if args.boot != BOOT.default else registered.get("resamples", args.boot)
    seed = args.boot_seed if args.boot_seed != BOOT.seed else registered.get("seed", args.boot_seed)
    if type(boot) is not int or type(seed) is not int:
        raise AnalysisError(
            f"{runs[0]}: plan.json registers contrast resamples {boot!r} and seed {seed!r}, not "
            "whole numbers; pass --boot and --boot-seed"
        )

    # plan.json is the run's, not the command line's: its count is bounded like --boot's.
    BOOT.check(boot, seed)
    baseline = args.baseline or str(plan.kind_fields.get("baseline_cohort") or "")
    result = analyse_dir(runs[0], baseline, boot, seed, bool(registered.get("pooled")))
    print(result.headline)
    print(f"outputs: {result.out_dir}")
    if result.unreadable_cells:
        print(
            f"mtpsweep analyse: error: {rl.summary(result.unreadable_cells, 3)}: a cell whose "
            "final record is cut is missing from every table; the report names it (repair or "
            "--resume the run to measure that cell again)",
            file=sys.stderr,
        )
        return ExitStatus.ERROR
    if not gates:
        return ExitStatus.OK
    if result.cells is None:
        for gate in gates:
            print(
                f"gate FAILED: {gate} not judged: the run has no cells to judge it on",
                file=sys.stderr,
            )
        return ExitStatus.GATE_FAILED
    judged = verdicts(gates, result.cells, baseline)
    for v in judged:
        if v.passed:
            print(f"gate met: {v.sentence}")
        else:
            print(f"gate FAILED: {v.sentence}", file=sys.stderr)
    return ExitStatus.OK if all(v.passed for v in judged) else ExitStatus.GATE_FAILED
