"""The `mtpsweep` command: provision, preflight, lint, analyse, compare, view, cleanup, kinds,
history, new-kind.

Each subcommand imports what it needs when it runs, so `mtpsweep analyse` pays for the
analysis and nothing else.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..base.errors import UserError
from ..interface.kind import PARTS
from ..wishes import options


def _provision(args: argparse.Namespace) -> int:
    from ..base.errors import ProvisionError
    from ..rig import build, models, provision
    from ..rig.buildprogress import minutes
    from ..rig.version import build_id

    t0 = time.monotonic()
    named = provision.named_server_bin(args.server_bin)
    if named is None:  # ours: the build made for this CPU (rebuilt when it is not)
        build.ensure(build.LLAMA_SERVER, rebuild=args.rebuild)
    if args.second_server:
        build.ensure(build.SECOND_SERVER, rebuild=args.rebuild)
    binary = provision.resolve_server_bin(args.server_bin)
    version = provision.server_version(binary.path)
    print(f"server:  {binary.path}  (from {binary.source})")
    print(f"build:   {version}")
    build_name = build_id(version)
    if build_name is None or build_name.endswith("-unknown") or build_name.startswith("b0-"):
        print(f"warning: this build does not identify itself; rebuild with: {provision.REBUILD}")
    smoke_model = None
    if not args.no_model:
        for name in args.model or [provision.EMBEDDED_MODEL]:
            embedded = models.lookup(name)
            if embedded is None and Path(name).is_file():  # a GGUF to prove the server on
                smoke_model = smoke_model or Path(name)
                print(f"model:   {name}  (given: the smoke test's model)")
                continue
            if embedded is None:
                raise ProvisionError(
                    f"--model {name}: not an embedded model nor a file; use a GGUF path or "
                    f"one of {', '.join(models.PREFIX + n for n in models.MODELS)}."
                )
            t1 = time.monotonic()
            path = provision.model_path(embedded)
            smoke_model = smoke_model or path
            print(
                f"model:   {path}  ({path.stat().st_size:,} bytes, sha256 checked, "
                f"{time.monotonic() - t1:.1f} s; {embedded.upstream}; {embedded.licence})"
            )
    if smoke_model is not None and not args.no_smoke:
        print(f"smoke:   {provision.prove(binary, smoke_model)}")
    print(f"ready in {minutes(time.monotonic() - t0)}")
    return 0


def _preflight(args: argparse.Namespace) -> int:
    from ..ladder import search_dirs
    from ..preflight import failures, render_fixes, render_table
    from ..protocol.ladderrun import Run

    cwd = Path.cwd()
    values = options.values_from(lambda dest: getattr(args, dest, None))
    request = options.run_request(
        values,
        search_dirs=search_dirs([], cwd, cwd),
        cwd=cwd,
        invocation=["mtpsweep", "preflight", *(args.argv or [])],
    )
    run = Run.from_request(request)
    run.resolve()
    checks = run.preflight(on_wait=lambda line: print(line, file=sys.stderr, flush=True))
    print(render_table(checks, width=shutil.get_terminal_size().columns))
    failed = failures(checks)
    if failed:
        print("\n" + render_fixes(failed), file=sys.stderr)
    return 1 if failed else 0


def _lint(args: argparse.Namespace) -> int:
    from ..interface import registry
    from ..ladder import search_dirs
    from ..ladder.find import named_kind
    from ..runner.registration import as_pytest_sees_them
    from .lint import ladder_files, lint

    cwd = Path.cwd()
    paths, missing = ladder_files(args.ladders, search_dirs([], cwd, cwd))
    named = [named_kind(p) for p in paths]  # None: the default kind, a shipped one
    if any(n is not None and not registry.is_shipped(n) for n in named):
        as_pytest_sees_them()  # a third party's kind may take what pytest has: as a run would
    for problem in missing:
        print(problem)
    results = lint(paths)
    for linted in results:
        if linted.problems:
            for problem in linted.problems:
                print(problem)
        elif not args.quiet:
            print(f"{linted.path}: ok ({linted.summary})")
        for warning in linted.warnings:
            print(f"{linted.path}: warning: {warning}")
    return 1 if missing or any(r.problems for r in results) else 0


def _kinds(args: argparse.Namespace) -> int:
    """Every installed kind, its distribution, and whether it is usable (one line each)."""
    from ..interface import registry
    from ..runner.registration import as_pytest_sees_them

    broken = {**as_pytest_sees_them(), **args.kind_commands}
    usable = {k.name: k for k in registry.kinds()}
    for name, found in registry.entries().items():
        if name in broken:
            print(f"{name}: {broken[name]}")
            continue
        kind = usable[name]
        problem = None
        for part in PARTS:
            if getattr(kind, part) is not None:
                try:
                    registry.part(kind, part)
                except UserError as exc:
                    problem = str(exc)
                    break
        if problem is not None:
            broken[name] = problem
            print(f"{name}: {problem}")
            continue
        flags = ", ".join(o.flag for o in kind.options) or "none"
        print(f"{name}: ok ({found[0].provider}; fixture {kind.fixture}; options {flags})")
    if broken:
        print(
            f"{len(broken)} of {len(registry.entries())} installed kinds cannot be used; each line says the fix."
        )
    return 1 if broken else 0


def _kind_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], scope: str = "all"
) -> dict[str, str]:
    """Each kind's own subcommands on `sub` (`scope` as registry.command_registrars); a kind
    whose commands do not load, fail to register or take a command name already taken is left
    out, with its one-line reason."""
    from ..interface import registry
    from ..interface.kindcheck import exception_text, guarded

    registrars, broken = registry.command_registrars(scope)
    for kind, register in registrars:
        scratch = argparse.ArgumentParser(prog="mtpsweep").add_subparsers()
        _, failed = guarded(lambda: register(scratch))  # noqa: B023 (called at once)
        taken = sorted(set(scratch.choices) & set(sub.choices))
        why: str | None = None
        if failed is not None:
            why = f"registering its commands raised {exception_text(failed)}"
        elif taken:
            why = f"its command {taken[0]!r} is one mtpsweep or another kind already has"
        else:
            _, failed = guarded(lambda: register(sub))  # noqa: B023
            why = (
                None
                if failed is None
                else f"registering its commands raised {exception_text(failed)}"
            )
        if why is not None:
            broken[kind.name] = registry.refusal(kind.name, f"its commands are left out: {why}")
    return broken


REPORT_HTML = "report.html"  # as report/document.py writes it into analysis/


def _view(args: argparse.Namespace) -> int:
    """Open a run's report.html in a browser, or serve the run directory on loopback."""
    from ..base.schema import ANALYSIS_DIR, PLAN_FILE
    from ..state.runread import RunReader

    run = Path(args.run)
    report = run / ANALYSIS_DIR / REPORT_HTML
    read = RunReader(run)
    if not read.has(PLAN_FILE):
        raise UserError(
            f"{run} is not a run directory (no {PLAN_FILE}); name one like runs/<ladder>/<id>."
        )
    if not read.has(report.relative_to(run)):
        raise UserError(f"{run} has no report yet (no {report}); write it: mtpsweep analyse {run}")
    if args.serve:
        from .view import serve

        return serve(run, f"{ANALYSIS_DIR}/{REPORT_HTML}", args.port)
    import webbrowser

    try:
        opened = webbrowser.get().open(report.resolve().as_uri())
    except webbrowser.Error:
        opened = False
    print(f"opened {report}" if opened else f"no browser found here; open {report.resolve()}")
    return 0


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535; 0: a free one)")
    return int(text)


def _cleanup(args: argparse.Namespace) -> int:
    from ..base.errors import RunDirError
    from ..base.schema import LIVE_SERVERS_FILE, PLAN_FILE, PREFLIGHT_FILE
    from ..rig import liveset

    run = Path(args.run)
    is_run = any((run / f).is_file() for f in (PLAN_FILE, PREFLIGHT_FILE, LIVE_SERVERS_FILE))
    if not run.is_dir() or not is_run:
        raise RunDirError(
            f"{run} is not a run directory (no {PLAN_FILE}); name one like runs/<ladder>/<id>."
        )
    live = run / LIVE_SERVERS_FILE
    if not live.exists() and not live.is_symlink():  # anything else there: read, or refused
        print(f"{run}: no {LIVE_SERVERS_FILE}, so no server of this run is listed")
        return 0
    lines = liveset.cleanup(run)
    print("\n".join(lines) or f"{run}: no server of this run is listed as running")
    return 1 if any("STILL RUNNING" in line for line in lines) else 0


def _root_parser() -> argparse.ArgumentParser:
    """`mtpsweep` itself: its description and `--version`, in the words preflight's `harness`
    item and the report use, so a user can match them."""
    from .._version import __version__

    parser = argparse.ArgumentParser(
        prog="mtpsweep", description="LLM inference-server experiments: provision and analyse."
    )
    parser.add_argument("--version", action="version", version=f"pytest-mtpsweep {__version__}")
    return parser


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `mtpsweep` parser; given the command line, a command of the package or a shipped
    kind imports no third party's kind."""
    from . import analyse as analysis_cli
    from . import history_cmd as historycli
    from . import newkind

    parser = _root_parser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("provision", help="locate llama-server and assemble the default model")
    p.add_argument("--server-bin", help="an explicit llama-server executable")
    p.add_argument("--no-model", action="store_true", help="do not assemble any model")
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="build llama-server for this CPU again, even if built",
    )
    p.add_argument(
        "--second-server",
        action="store_true",
        help="also build llama-cpp-python (a second server implementation, for the tests)",
    )
    p.add_argument(
        "--no-smoke", action="store_true", help="do not start the server to decode a few tokens"
    )
    p.add_argument(
        "--model",
        action="append",
        metavar="embedded:NAME|GGUF",
        help="assemble this embedded model, or prove the server on this GGUF file (repeatable; "
        "default: the embedded default)",
    )
    p.set_defaults(func=_provision)
    analysis_cli.register(sub)
    p = sub.add_parser("preflight", help="run a ladder's preflight checks; start nothing")
    options.add_argparse_options(p, options.PREFLIGHT_CLI)
    p.set_defaults(func=_preflight)
    p = sub.add_parser(
        "lint",
        help="check ladder files without a server or a model (exit 1 on any problem)",
        description="Check ladder files as a run would load them, plus their kind's inputs and "
        "server arguments; start nothing. One line per problem; exit 0 when all pass, 1 if not.",
    )
    p.add_argument(
        "ladders", nargs="+", metavar="LADDER", help="a ladder name, a .toml path or a directory"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print problems only")
    p.set_defaults(func=_lint)
    p = sub.add_parser(
        "view",
        help="open a run's analysis/report.html in a browser (--serve: on loopback)",
        description="Open the run's self-contained HTML report in a browser, or print its path "
        "where no browser is found. --serve serves the run directory on 127.0.0.1 instead (on a "
        "remote machine: ssh -L PORT:127.0.0.1:PORT HOST, then open the printed URL).",
    )
    p.add_argument("run", metavar="RUN", help="the run directory")
    p.add_argument("--serve", action="store_true", help="serve the run directory on 127.0.0.1")
    p.add_argument(
        "--port", type=_port, default=0, help="the port to serve on (default: a free one)"
    )
    p.set_defaults(func=_view)
    p = sub.add_parser(
        "cleanup",
        help="stop the servers a run left running (servers/live.json): stop scripts, pids",
    )
    p.add_argument("run", metavar="RUN", help="the run directory")
    p.set_defaults(func=_cleanup)
    p = sub.add_parser(
        "kinds",
        help="list the installed experiment kinds, their distributions, and any that cannot be used",
        description="One line per installed kind (entry-point group pytest_mtpsweep.kinds): its "
        "distribution, fixture and options, or why it cannot be used and the fix; every part "
        "of each kind is imported to check it. Exit 0 when all are usable, 1 if not.",
    )
    p.set_defaults(func=_kinds)
    historycli.register(sub)
    newkind.register(sub)
    parser.set_defaults(kind_commands=_all_kind_commands(sub, argv))  # each kind's own
    return parser


def _all_kind_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], argv: Sequence[str] | None
) -> dict[str, str]:
    """The kinds' own subcommands: the shipped kinds', then the third parties' only when the
    command line names none of those (a third party's command, an unknown one, or help)."""
    broken = _kind_commands(sub, "shipped" if argv is not None else "all")
    first = next((a for a in argv or () if not a.startswith("-")), None)
    if argv is not None and first not in sub.choices:
        broken.update(_kind_commands(sub, "third"))
    return broken


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(list(argv) if argv is not None else sys.argv[1:])
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error: a kind's command may be missing for a reason
        if exc.code == 2:
            for line in parser.get_default("kind_commands").values():
                print(f"mtpsweep: note: {line}", file=sys.stderr)
        raise
    args.argv = list(argv) if argv is not None else sys.argv[1:]
    try:
        code: int = args.func(args)
    except UserError as exc:
        print(f"mtpsweep: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mtpsweep: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
