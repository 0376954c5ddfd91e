"""The `mtpsweep` command: provision, analyse, compare, preflight."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from . import provision
from .analysis import cli as analysis_cli
from .curtailment import DeadlineError
from .experiment import ExperimentError
from .ladder import LadderError
from .preflight import PreflightError
from .prompts import PromptError

USER_ERRORS = (
    provision.ProvisionError,
    LadderError,
    PromptError,
    ExperimentError,
    PreflightError,
    DeadlineError,
)


def _provision(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    binary = provision.resolve_server_bin(args.server_bin)
    version = provision.server_version(binary.path)
    print(f"server:  {binary.path}  (from {binary.source})")
    print(f"build:   {version}")
    build = provision.build_id(version)
    if build is None or build.endswith("-unknown") or build.startswith("b0-"):
        print(
            "warning: this build does not identify itself; rebuild with: "
            f"{provision.INSTALL_COMMAND}"
        )
    if not args.no_model:
        model = provision.default_model_path()
        print(f"model:   {model}  ({model.stat().st_size:,} bytes, sha256 checked)")
    print(f"ready in {time.monotonic() - t0:.2f} s")
    return 0


def _preflight(args: argparse.Namespace) -> int:
    from .experiment import Experiment, PreflightOptions
    from .preflight import failures, render_fixes, render_table

    cwd = Path.cwd()
    options = {
        "mtpsweep_model": args.model,
        "mtpsweep_server_bin": args.server_bin,
        "mtpsweep_port": args.port,
    }
    exp = Experiment.from_options(
        args.ladder,
        options,
        [cwd / "experiments" / "ladders", cwd / "ladders"],
        cwd,
        ["mtpsweep", "preflight", "--ladder", args.ladder],
    )
    run_path = exp.resolve()
    checks = exp.run_preflight(
        run_path,
        PreflightOptions(
            waive=frozenset(args.waive),
            against=args.against,
            verify_digests=args.verify_digests,
            server_build=args.server_build,
        ),
    )
    print(render_table(checks))
    failed = failures(checks)
    if failed:
        print("\n" + render_fixes(failed), file=sys.stderr)
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mtpsweep", description="LLM inference-server experiments: provision and analyse."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("provision", help="locate llama-server and assemble the default model")
    p.add_argument("--server-bin", help="an explicit llama-server executable")
    p.add_argument("--no-model", action="store_true", help="do not assemble the default model")
    p.set_defaults(func=_provision)
    analysis_cli.register(sub)
    p = sub.add_parser("preflight", help="run a ladder's preflight checks; start nothing")
    p.add_argument(
        "--ladder", required=True, help="a name under experiments/ladders/ or a .toml path"
    )
    p.add_argument("--model", help="model file (overrides the ladder)")
    p.add_argument("--server-bin", help="an explicit llama-server executable")
    p.add_argument("--port", type=int, help="server port to check")
    p.add_argument("--server-build", help="the build the server must be, e.g. 515e85511")
    p.add_argument("--waive", action="append", default=[], metavar="ITEM")
    p.add_argument("--against", type=Path, metavar="RUN_DIR")
    p.add_argument("--verify-digests", action="store_true")
    p.set_defaults(func=_preflight)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except USER_ERRORS as exc:
        print(f"mtpsweep: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
