"""pytest hooks and fixtures; every piece of work is delegated to the modules they name.

Without `--ladder` the plugin registers its options and its marker and nothing else: the
rest of the package (and pandas, numpy, scipy, httpx, psutil) is imported only by a run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import options

if TYPE_CHECKING:
    from .kinds import Case, EndAnalysis, Result
    from .protocol.lifecycle import LiveSession
    from .protocol.run import Run

RUN = pytest.StashKey["Run"]()
END = pytest.StashKey["EndAnalysis"]()
KIND_FIXTURES = ("measurement", "cell")  # kinds.FIXTURES' values, without importing kinds


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ladder option and everything that overrides or steers it."""
    options.add_pytest_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Load and check the ladder named by --ladder and every option, before collection."""
    config.addinivalue_line(
        "markers", "mtpsweep: a measurement of an mtpsweep ladder (select or exclude with -m)"
    )
    if not config.getoption("mtpsweep_ladder", None):
        return
    if config.getoption("numprocesses", None) or hasattr(config, "workerinput"):
        raise pytest.UsageError(
            "--ladder runs measurements one server at a time; drop -n/--numprocesses (xdist)."
        )
    from .errors import UserError
    from .ladder import search_dirs
    from .protocol.run import Run

    paths = [Path(a.split("::")[0]) for a in config.args]
    try:
        request = options.run_request(
            options.values_from(config.getoption),
            search_dirs=search_dirs(paths, config.rootpath, config.invocation_params.dir),
            cwd=config.invocation_params.dir,
            invocation=["pytest", *config.invocation_params.args],
        )
        config.stash[RUN] = Run.from_request(request)
    except UserError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    """One line naming the ladder and the size of its plan."""
    run = config.stash.get(RUN, None)
    if run is None:
        return []
    lad = run.ladder
    return [
        f"mtpsweep: {lad.kind} ladder {lad.name} ({lad.path}): {len(lad.treatments)} "
        f"treatments x {lad.cycles} cycles, {len(run.cases())} cases, baseline {lad.baseline}"
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise every test that asks for the ladder kind's fixture over the run plan."""
    wanted = [f for f in KIND_FIXTURES if f in metafunc.fixturenames]
    if not wanted:
        return
    run = metafunc.config.stash.get(RUN, None)
    if run is None or run.kind.fixture not in wanted:
        why = (
            "no --ladder given: run e.g. pytest experiments/ --ladder=cpu-demo"
            if run is None
            else f"not a {run.ladder.kind} experiment (it asks for {wanted[0]!r})"
        )
        metafunc.parametrize(
            ["mtpsweep_server", "mtpsweep_case"],
            [pytest.param(None, None, marks=pytest.mark.skip(reason=why), id="no-ladder")],
        )
        return
    metafunc.parametrize(
        ["mtpsweep_server", "mtpsweep_case"],
        [pytest.param(c.slot, c, id=c.id, marks=pytest.mark.mtpsweep) for c in run.cases()],
        indirect=["mtpsweep_server"],
        scope="session",
    )


def _case(item: pytest.Item) -> Case | None:
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("mtpsweep_case") if callspec else None
    return case if getattr(case, "slot", None) is not None else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put measurements in run-plan order after -k deselection; other tests keep theirs, first."""
    if config.stash.get(RUN, None) is None:
        return
    keyed = [(i, _case(item)) for i, item in enumerate(items)]
    keyed.sort(
        key=lambda t: (0, t[0], 0) if t[1] is None else (1, t[1].slot.ordinal, t[1].position)
    )
    items[:] = [items[i] for i, _ in keyed]


def pytest_runtestloop(session: pytest.Session) -> None:
    """Before the first measurement: preflight, then create the run directory."""
    config = session.config
    run = config.stash.get(RUN, None)
    only = config.getoption("mtpsweep_preflight_only")
    if run is None or (config.option.collectonly and not only):
        return
    cases = [c for c in (_case(i) for i in session.items) if c is not None]
    if not cases and not only:
        return
    from .errors import UserError
    from .preflight import failures, render_fixes, render_table

    try:
        run.resolve()
        checks = run.preflight()
    except UserError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.section("mtpsweep preflight")
        reporter.write_line(render_table(checks, width=config.get_terminal_writer().fullwidth))
    failed = failures(checks)
    if only:
        pytest.exit(
            f"preflight only: {len(failed)} item(s) failed"
            if failed
            else "preflight only: all items pass",
            returncode=pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK,
        )
    if failed:
        pytest.exit(
            "preflight failed, so no server was started:\n" + render_fixes(failed),
            returncode=pytest.ExitCode.TESTS_FAILED,
        )
    try:
        run.begin(cases, checks)
    except UserError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(scope="session")
def mtpsweep_run(pytestconfig: pytest.Config) -> Run:
    """The running experiment (ladder, kind, plan, run directory)."""
    run = pytestconfig.stash.get(RUN, None)
    if run is None or run.sessions is None:
        pytest.skip("no --ladder given")
    return run


@pytest.fixture(scope="session")
def mtpsweep_server(request: pytest.FixtureRequest, mtpsweep_run: Run) -> Iterator[LiveSession]:
    """One server per session slot: started fresh, warmed up, stopped and checked."""
    from .errors import ServerError, SkipSession, StopRun, UserError

    slot, sessions = request.param, mtpsweep_run.sessions
    assert sessions is not None
    failure = None
    try:
        mtpsweep_run.check_schedule(slot)
        live = sessions.open(slot)
    except SkipSession as exc:
        pytest.skip(str(exc))
    except ServerError as exc:
        failure = f"session {slot.name}: {exc}"
    except (StopRun, UserError) as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.INTERRUPTED)
    if failure is not None:  # failed outside the except, so pytest shows no exception chain
        pytest.fail(failure, pytrace=False)
    try:
        yield live
    finally:
        try:
            sessions.close(live)
        except (StopRun, UserError) as exc:  # a stop in the one re-run, a failed write
            pytest.exit(str(exc), returncode=pytest.ExitCode.INTERRUPTED)


def _measured(run: Run, live: LiveSession, case: Case) -> Result:
    from .errors import StopRun

    assert run.sessions is not None
    try:
        return run.sessions.measure(live, case)
    except StopRun as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.INTERRUPTED)


@pytest.fixture
def measurement(mtpsweep_run: Run, mtpsweep_server: LiveSession, mtpsweep_case: Case) -> Result:
    """One streamed measurement (decode kind), already recorded; assert `.valid` in the test."""
    return _measured(mtpsweep_run, mtpsweep_server, mtpsweep_case)


@pytest.fixture
def cell(mtpsweep_run: Run, mtpsweep_server: LiveSession, mtpsweep_case: Case) -> Result:
    """One conversation to its outcome (authoring kind), recorded; assert `.valid` in the test."""
    return _measured(mtpsweep_run, mtpsweep_server, mtpsweep_case)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """After the last server is down: the row table, the analysis, and the --expect gates."""
    config = session.config
    run = config.stash.get(RUN, None)
    if run is None or run.run_dir is None:
        return
    request = run.request.analysis
    try:
        run.finish()
        if not request.enabled:
            return
        end = run.kind.analyse(run.run_dir.path, request)
    except KeyboardInterrupt:  # pytest would print a traceback from inside the analysis
        pytest.exit(
            f"interrupted before the analysis ended; run `mtpsweep analyse {run.run_dir.path}`",
            returncode=pytest.ExitCode.INTERRUPTED,
        )
    config.stash[END] = end
    if (end.gate_failures or (end.error and request.expect)) and (
        session.exitstatus == pytest.ExitCode.OK
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the row table, the analysis headline and where the run directory is."""
    run = config.stash.get(RUN, None)
    if run is None or run.run_dir is None:
        return
    tr = terminalreporter
    tr.section("mtpsweep sessions")
    summary = run.summary
    if summary is not None and summary.rows:
        tr.write_line(summary.table(width=config.get_terminal_writer().fullwidth))
    end: EndAnalysis | None = config.stash.get(END, None)
    expect = run.request.analysis.expect
    if end is not None:
        tr.section("mtpsweep analysis")
        if end.error:
            tr.write_line(f"analysis: {end.error}")
        else:
            tr.write_line(end.table)
            tr.write_line(f"report: {end.report}")
        for failure in end.gate_failures:
            tr.write_line(f"--expect not met: {failure}", red=True)
        if end.error and expect:
            tr.write_line("--expect not met: the analysis did not run", red=True)
    if run.stopped:
        tr.write_line(f"STOPPED by a protocol rule: {run.stopped}")
    for line in summary.notes if summary else []:
        tr.write_line(line)
    if run.schedule is not None:
        for name, why in run.schedule.dropped.items():
            tr.write_line(f"{name}: {why}")
    tr.write_line(f"run directory: {run.run_dir.path}")


def pytest_unconfigure(config: pytest.Config) -> None:
    """No server outlives pytest, whatever happened."""
    server = sys.modules.get("pytest_mtpsweep.rig.server")
    if server is not None:
        server.stop_all()
    interrupts = sys.modules.get("pytest_mtpsweep.protocol.interrupts")
    if interrupts is not None:
        interrupts.restore()
