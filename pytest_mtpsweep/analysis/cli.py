"""The `analyse` and `compare` subcommands, registered onto the `mtpsweep` parser."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_mtpsweep import schema
from pytest_mtpsweep.analysis.compare import COMPARE_LABEL, compare_table
from pytest_mtpsweep.analysis.errors import AnalysisError, ExpectationError
from pytest_mtpsweep.analysis.gates import evaluate_expectations, parse_expectation
from pytest_mtpsweep.analysis.io import analyse_run, load_and_analyse
from pytest_mtpsweep.analysis.model import DEFAULT_BOOT, DEFAULT_SEED, MIN_BOOT, AnalysisSettings
from pytest_mtpsweep.analysis.report import headline_table

EXIT_OK, EXIT_GATE_FAILED, EXIT_ERROR = 0, 1, 2


def _guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    # Users get one sentence on stderr and exit 2, never a traceback, for anything foreseeable.
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except (AnalysisError, ExpectationError) as exc:
            print(f"mtpsweep {args.command}: error: {exc}", file=sys.stderr)
        except OSError as exc:
            print(
                f"mtpsweep {args.command}: error: cannot access {exc.filename or 'a file'} "
                f"({exc.strerror}); check the path and its permissions",
                file=sys.stderr,
            )
        return EXIT_ERROR

    return run


def _authoring(args: argparse.Namespace) -> int | None:
    """An authoring run has its own analysis; None when the run is not one."""
    runs = [Path(p) for p in args.runs]
    kinds = []
    for run in runs:
        try:
            kinds.append(json.loads((run / schema.PLAN_FILE).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            kinds.append({})
    if not any(k.get("kind") == "authoring" for k in kinds):
        return None
    if len(runs) > 1 or args.pool or args.expect or args.out:
        raise AnalysisError(
            "an authoring run is analysed on its own, into its analysis/ directory: drop --pool, "
            "--expect, --out and the other runs"
        )
    from pytest_mtpsweep.analysis.authoring import analyse_dir

    plan = kinds[0]
    registered = plan.get("contrast") or {}
    boot = args.boot if args.boot != DEFAULT_BOOT else registered.get("resamples", args.boot)
    seed = (
        args.boot_seed if args.boot_seed != DEFAULT_SEED else registered.get("seed", args.boot_seed)
    )
    baseline = args.baseline or plan.get("baseline_cohort") or ""
    result = analyse_dir(runs[0], baseline, int(boot), int(seed), bool(registered.get("pooled")))
    print(result.headline)
    print(f"outputs: {result.out_dir}")
    if result.unreadable_cells:
        print(
            f"mtpsweep analyse: error: {'; '.join(result.unreadable_cells)}: a cell whose final "
            "record is cut is missing from every table; the report names it (repair or --resume "
            "the run to measure that cell again)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return EXIT_OK


def _analyse(args: argparse.Namespace) -> int:
    # Check options and gate syntax before reading the run or spending time on the bootstrap.
    AnalysisSettings.check_resampling(args.boot, args.boot_seed)
    authoring = _authoring(args)
    if authoring is not None:
        return authoring
    gates = [parse_expectation(text) for text in args.expect]
    result = analyse_run(
        [Path(p) for p in args.runs],
        baseline=args.baseline,
        boot=args.boot,
        seed=args.boot_seed,
        out=Path(args.out) if args.out else None,
        pool=args.pool,
        endpoint=args.endpoint,
    )
    print(headline_table(result))
    print(f"outputs: {result.out_dir}")
    if not gates:
        return EXIT_OK
    failures = evaluate_expectations(result, gates)
    for gate in gates:
        if not any(f.startswith(f"{gate} ") for f in failures):
            print(f"gate met: {gate}")
    for failure in failures:
        print(f"gate FAILED: {failure}", file=sys.stderr)
    return EXIT_GATE_FAILED if failures else EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    AnalysisSettings.check_resampling(args.boot, args.boot_seed)
    if Path(args.run_a).resolve() == Path(args.run_b).resolve():
        raise AnalysisError(
            f"compare was given the same run twice ({args.run_a}); name two different run directories."
        )
    results = [
        load_and_analyse([Path(p)], baseline=args.baseline, boot=args.boot, seed=args.boot_seed)
        for p in (args.run_a, args.run_b)
    ]
    print(compare_table(results))
    return EXIT_OK


def _bootstrap_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline",
        default=None,
        help="baseline treatment (default: plan.json analysis.baseline)",
    )
    parser.add_argument(
        "--boot",
        type=int,
        default=DEFAULT_BOOT,
        help=f"resamples, at least {MIN_BOOT} (default {DEFAULT_BOOT})",
    )
    parser.add_argument(
        "--boot-seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"bootstrap seed, 0 or more (default {DEFAULT_SEED})",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `analyse` and `compare` to an argparse subparsers object."""
    analyse = subparsers.add_parser(
        "analyse",
        help="analyse a run directory: contrasts, census, report",
        description="Paired cluster-bootstrap contrasts of every treatment against a baseline.",
    )
    analyse.add_argument("runs", nargs="+", metavar="RUN", help="run directory")
    _bootstrap_options(analyse)
    analyse.add_argument("--out", default=None, help="output directory (default: RUN/analysis)")
    analyse.add_argument(
        "--endpoint",
        choices=("primary", "interval"),
        default=None,
        help="publish this endpoint instead of the registered one (default output: "
        "RUN/analysis_<endpoint>_basis)",
    )
    analyse.add_argument(
        "--pool",
        action="store_true",
        help="pool several run directories (only when their keyed fields match)",
    )
    analyse.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="TREATMENT:SUBSET:faster|slower|equivalent",
        help="gate: exit 1 unless the published decision matches (repeatable)",
    )
    analyse.set_defaults(func=_guarded(_analyse), command="analyse")

    compare = subparsers.add_parser(
        "compare",
        help=f"side-by-side of two runs' own contrasts ({COMPARE_LABEL})",
        description="Analyse each run separately and show their contrasts side by side; the "
        "runs are never pooled into one bootstrap.",
    )
    compare.add_argument("run_a", metavar="RUN_A")
    compare.add_argument("run_b", metavar="RUN_B")
    _bootstrap_options(compare)
    compare.set_defaults(func=_guarded(_compare), command="compare")


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run `analyse` or `compare` on their own (the `mtpsweep` command embeds them)."""
    parser = argparse.ArgumentParser(prog="mtpsweep")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status
