"""The `analyse`, `compare` and `plan` subcommands, registered onto the `mtpsweep` parser.

`analyse` reads each run's kind from its plan.json and hands the runs to that kind's own
`analyse` (`kindapi.Kind.analyse`); `compare` sets two runs' contrasts side by side; `plan`
hands a pilot run to its kind's `plan` (`kindapi.Kind.plan`) once the options are checked.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..base import schema
from ..base.constants import BOOT
from ..base.errors import AnalysisError, ExpectationError, KindError, LadderError
from ..base.fileio import ANALYSIS_FOLDER, folder_problem, output_dir_problem
from ..interface import registry
from ..interface.kind import ExitStatus, Kind
from ..report.save import AN_ANALYSIS, written_here
from ..state.plandoc import PlanDoc
from ..state.runread import RunReader
from ..wishes.gate import parse_gates


def _guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    # Users get one sentence on stderr and exit 2, never a traceback, for anything foreseeable.
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except (AnalysisError, ExpectationError, KindError, LadderError) as exc:
            print(f"mtpsweep {args.command}: error: {exc}", file=sys.stderr)
        except OSError as exc:
            print(
                f"mtpsweep {args.command}: error: cannot access {exc.filename or 'a file'} "
                f"({exc.strerror}); check the path and its permissions",
                file=sys.stderr,
            )
        return ExitStatus.ERROR

    return run


def _plan(run: Path) -> PlanDoc:
    """A run's plan.json, read by the run reader's rule (empty when it has none: the kind's
    analysis says; a malformed one, or one of a later format, is refused in one line)."""
    return RunReader(run).plan


def _analyse(args: argparse.Namespace) -> int:
    # Check options before reading the run or spending time on the bootstrap.
    BOOT.check(args.boot, args.boot_seed)
    runs = [Path(p) for p in args.runs]
    if args.out is not None:  # before any run is read: a bad target never costs an analysis
        out = Path(args.out)
        why = output_dir_problem(out, looks_right=written_here, what=AN_ANALYSIS)
        parent = out.absolute().parent  # a typo never makes a tree; a run's analysis/ is made
        made = parent.name == ANALYSIS_FOLDER and (parent.parent / schema.PLAN_FILE).is_file()
        if why is None and not (parent.is_dir() or made):
            why = f"is in {parent}, which is not a folder that exists"
        if why is not None:
            raise AnalysisError(
                f"--out {args.out} {why}; name a new folder, an empty one or an earlier analysis"
            )
    for run in runs if args.out is None else ():  # the run's own folder, where it goes
        why = folder_problem(run / ANALYSIS_FOLDER)
        if why is not None:
            raise AnalysisError(
                f"{run / ANALYSIS_FOLDER} {why}; move it aside (the analysis is written there) "
                "or pass --out with a new folder"
            )
    plans = [_plan(run) for run in runs]
    names = list(dict.fromkeys(p.kind or registry.default_name() for p in plans))
    if len(names) > 1:
        raise AnalysisError(
            f"the runs are of different kinds ({', '.join(names)}); analyse each kind's runs "
            "on their own"
        )
    kind = registry.kind(names[0])
    if kind.analyse is None:
        raise AnalysisError(
            f"the {kind.name} kind has no `mtpsweep analyse`; its session-end analysis is in "
            "RUN/analysis"
        )
    # each gate parsed once, by the kind's grammar, as the session-end analysis parses it
    args.gates = parse_gates(args.expect or (), kind.gates, kind.name)
    status: int = registry.part(kind, "analyse")(args, runs, plans)
    return status


def _compare(args: argparse.Namespace) -> int:
    BOOT.check(args.boot, args.boot_seed)
    if Path(args.run_a).resolve() == Path(args.run_b).resolve():
        raise AnalysisError(
            f"compare was given the same run twice ({args.run_a}); name two different run directories."
        )
    runs = [Path(args.run_a), Path(args.run_b)]
    kind = _comparable(runs)
    status: int = registry.part(kind, "compare")(args, runs)
    return status


def _comparable(runs: Sequence[Path]) -> Kind:
    """The kind whose `compare` sets these runs side by side; refused, in one sentence naming
    the run and its kind, for a kind without one, or for two runs of different kinds."""
    kinds = [_plan(run).kind or registry.default_name() for run in runs]
    for run, name in zip(runs, kinds, strict=True):
        if not registry.kind(name).compare:
            able = [k.name for k in registry.kinds() if k.compare]  # every kind, to say so
            raise AnalysisError(
                f"run {run} is of the {name} kind, which compare cannot set side by side (it "
                f"compares runs of the {', '.join(able) or 'no'} kind); read each run's own "
                f"report instead: mtpsweep analyse {run}"
            )
    if len(set(kinds)) > 1:
        raise AnalysisError(
            f"run {runs[0]} is of the {kinds[0]} kind and run {runs[1]} of the {kinds[1]} kind; "
            "compare two runs of one kind"
        )
    return registry.kind(kinds[0])


MAX_TARGET_PCT = 100.0  # a half-width beyond ±100 % answers no question a run is for


def _plan_run(args: argparse.Namespace) -> int:
    from ..analysis.planning import MAX_PLAN_CYCLES

    BOOT.check(args.boot, args.boot_seed)
    width, top = args.target_width, args.max_cycles
    if not (0.0 < width <= MAX_TARGET_PCT):  # NaN fails this too
        raise AnalysisError(
            f"--target-width {width:g} is not a half-width to plan for; give a percent above 0 "
            f"and at most {MAX_TARGET_PCT:g}, e.g. --target-width 5"
        )
    if not (2 <= top <= MAX_PLAN_CYCLES and top % 2 == 0):
        raise AnalysisError(
            f"--max-cycles {top} is not a cycle budget a ladder can run; give an even number "
            f"from 2 to {MAX_PLAN_CYCLES} (whole counterbalanced pairs)"
        )
    run = Path(args.run)
    if not RunReader(run).has(schema.PLAN_FILE):
        raise AnalysisError(
            f"{run} is not a run directory (no {schema.PLAN_FILE}); name one like "
            "runs/<ladder>/<run-id>"
        )
    plan = _plan(run)
    kind = registry.kind(plan.kind or registry.default_name())
    if kind.plan is None:
        able = ", ".join(k.name for k in registry.kinds() if k.plan) or "none"
        raise AnalysisError(
            f"the {kind.name} kind cannot plan from a pilot yet (kinds that can: {able}); "
            "size its run from the report's intervals instead"
        )
    status: int = registry.part(kind, "plan")(args, run, plan)
    return status


def _bootstrap_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline",
        default=None,
        help="baseline treatment (default: plan.json analysis.baseline)",
    )
    parser.add_argument(
        "--boot",
        type=int,
        default=BOOT.default,
        help=f"resamples, {BOOT.min} to {BOOT.max} (default {BOOT.default})",
    )
    parser.add_argument(
        "--boot-seed",
        type=int,
        default=BOOT.seed,
        help=f"bootstrap seed, 0 or more (default {BOOT.seed})",
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
        metavar="TREATMENT:SUBSET:faster|slower|equivalent|not-slower:M",
        help="gate: exit 1 unless the published decision matches, or for not-slower:M unless "
        "the treatment is shown no more than M %% slower (repeatable)",
    )
    analyse.set_defaults(func=_guarded(_analyse), command="analyse")

    compare = subparsers.add_parser(
        "compare",
        help="side-by-side of two runs' own contrasts (secondary, descriptive: different runs)",
        description="Analyse each run separately and show their contrasts side by side; the "
        "runs are never pooled into one bootstrap.",
    )
    compare.add_argument("run_a", metavar="RUN_A")
    compare.add_argument("run_b", metavar="RUN_B")
    _bootstrap_options(compare)
    compare.set_defaults(func=_guarded(_compare), command="compare")

    from ..analysis.planning import MAX_PLAN_CYCLES

    plan = subparsers.add_parser(
        "plan",
        help="from a pilot run: the cycles each headline cell needs to reach a 95 %% half-width",
        description="Estimate each headline cell's variance components from a finished or "
        "partial run and predict the cycles its published 95 % interval needs to reach "
        "±PCT %, with a range, the wall time from the run's sessions, and the cells that "
        "cannot reach it within --max-cycles.",
    )
    plan.add_argument("run", metavar="RUN", help="the pilot run directory")
    plan.add_argument(
        "--target-width",
        type=float,
        required=True,
        metavar="PCT",
        help="the 95 %% interval half-width to reach, in percent (e.g. 5 for ±5 %%)",
    )
    plan.add_argument(
        "--max-cycles",
        type=int,
        default=MAX_PLAN_CYCLES,
        metavar="N",
        help=f"the most cycles to plan, even, 2 to {MAX_PLAN_CYCLES} (default {MAX_PLAN_CYCLES}, "
        "a ladder's bound)",
    )
    _bootstrap_options(plan)
    plan.set_defaults(func=_guarded(_plan_run), command="plan")


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run `analyse` or `compare` on their own (the `mtpsweep` command embeds them)."""
    parser = argparse.ArgumentParser(prog="mtpsweep")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status
