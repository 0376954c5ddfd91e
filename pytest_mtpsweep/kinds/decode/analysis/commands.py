"""Decode's commands: `mtpsweep analyse RUN...` (the published contrasts and each gate) and
`mtpsweep compare RUN_A RUN_B` (two runs' contrasts side by side, never pooled)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ....kindapi import ExitStatus, Gate
from ....kindapi.records import recordlines
from ..report.sections import headline_table
from .compare import compare_table
from .gates import check_treatment
from .gates import judge as judged
from .io import AnalyseOptions, analyse_run, load_and_analyse

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from ....kindapi.records import PlanDoc
    from .runvalues import DecodeAnalysis


def analyse_command(
    args: argparse.Namespace, runs: Sequence[Path], plans: Sequence[PlanDoc]
) -> int:
    """`mtpsweep analyse RUN...` of decode runs: the published contrasts, then each --expect
    gate (exit 1 when one is not met)."""

    gates: tuple[Gate, ...] = getattr(args, "gates", ())

    def judgeable(result: DecodeAnalysis) -> None:  # refused before anything is written
        for gate in gates:
            check_treatment(gate, result.known_treatments, result.settings.baseline)

    out = Path(args.out) if args.out else None
    asked = AnalyseOptions(
        baseline=args.baseline,
        boot=args.boot,
        seed=args.boot_seed,
        out=out,
        pool=args.pool,
        endpoint=args.endpoint,
        draw=True,
    )
    result = analyse_run(list(runs), asked, check=judgeable)
    print(headline_table(result))
    if result.unreadable:
        print(recordlines.terminal(result.unreadable))
    print(f"outputs: {result.out_dir}")
    verdicts = [judged(result, gate) for gate in gates]
    for v in verdicts:
        if v.passed:
            print(f"gate met: {v.gate}")
    for v in verdicts:
        if not v.passed:
            print(f"gate FAILED: {v.sentence}", file=sys.stderr)
    return ExitStatus.OK if all(v.passed for v in verdicts) else ExitStatus.GATE_FAILED


def compare_command(args: argparse.Namespace, runs: Sequence[Path]) -> int:
    """`mtpsweep compare RUN_A RUN_B` of decode runs: each run analysed on its own, their
    published contrasts side by side, never pooled; nothing is written."""

    asked = AnalyseOptions(baseline=args.baseline, boot=args.boot, seed=args.boot_seed)
    results = [load_and_analyse([run], asked) for run in runs]
    print(compare_table(results))
    for run, result in zip(runs, results, strict=True):
        if result.unreadable:  # left out of that run's contrasts: say so beside the table
            print(f"{run}: {recordlines.terminal(result.unreadable)}")
    return ExitStatus.OK
