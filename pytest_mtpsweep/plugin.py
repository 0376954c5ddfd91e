"""pytest hooks and fixtures; every piece of work is delegated to the modules they name.

Without `--ladder` the plugin registers its options (the shared ones and each shipped
kind's), its marker and each shipped kind's fixture, and nothing else: no third party's kind
is imported, and the rest of the package (and pandas, numpy, scipy, httpx, psutil) is
imported only by a run (`pytestkinds.py` says which kinds a process registers).
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .runner import registration as pytestkinds
from .wishes import options

if TYPE_CHECKING:
    from .interface.kind import Case, EndAnalysis, Kind, Result
    from .protocol.ladderrun import Run
    from .protocol.progress import Progress
    from .runner.distribute import Controller  # noqa: F401 (named in a StashKey)
    from .runner.reruns import Reruns  # noqa: F401 (named in a StashKey)
    from .state.live import LiveSession

RUN = pytest.StashKey["Run"]()
ROLE = pytest.StashKey[str]()  # "worker" or "controller" under pytest-xdist
CONTROLLER = pytest.StashKey["Controller"]()
RERUNS = pytest.StashKey["Reruns"]()  # failed measurements held until their session closes
KIND_FIXTURES_PLUGIN = "mtpsweep-kind-fixtures"


def _table(config: pytest.Config) -> tuple[options.Opt, ...]:
    """Every option this process registered: the shared ones, then its kinds' own."""
    from .base.errors import UserError

    kinds = config.stash.get(pytestkinds.OPTIONED, ())
    try:
        return options.table(tuple(o for k in kinds for o in k.options))
    except UserError as exc:
        raise pytest.UsageError(str(exc)) from None


def _fixtures(config: pytest.Config) -> tuple[str, ...]:
    """The fixture names this process's kinds parametrise over their cases."""
    return tuple(k.fixture for k in config.stash.get(pytestkinds.FIXTURED, ()))


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ladder option and everything that overrides or steers it."""
    options.add_pytest_options(parser, options.OPTIONS)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser
) -> Generator[None, object, object]:
    """The kinds' options, once plugins and initial conftests have theirs: a clash sets the
    kind aside, never breaks the parser; without --ladder only the shipped kinds are read."""
    try:
        return (yield)
    finally:
        pytestkinds.register_options(early_config, parser)


def pytest_configure(config: pytest.Config) -> None:
    """Load and check the ladder named by --ladder and every option, before collection."""
    config.addinivalue_line(
        "markers", "mtpsweep: a measurement of an mtpsweep ladder (select or exclude with -m)"
    )
    if not config.getoption("mtpsweep_ladder", None):
        return
    from .base.errors import UserError
    from .ladder import search_dirs
    from .protocol.ladderrun import Run

    paths = [Path(a.split("::")[0]) for a in config.args]
    table = _table(config)
    try:
        request = options.run_request(
            options.values_from(config.getoption, table),
            search_dirs=search_dirs(paths, config.rootpath, config.invocation_params.dir),
            cwd=config.invocation_params.dir,
            invocation=["pytest", *config.invocation_params.args],
            opts=table,
        )
        run = Run.from_request(request)
    except UserError as exc:
        raise pytest.UsageError(str(exc)) from None
    if run.ladder.measurement_timeout_s is not None and not config.pluginmanager.hasplugin(
        "timeout"
    ):
        raise pytest.UsageError(
            f"ladder {run.ladder.name} sets measurement_timeout_s, which pytest-timeout applies, "
            "but pytest-timeout is not loaded; pip install 'pytest-mtpsweep[timeout]' (or drop "
            "-p no:timeout)."
        )
    config.stash[RUN] = run
    from .runner import distribute, reruns

    role = distribute.role(config)
    if role != "controller":
        config.stash[RERUNS] = reruns.Reruns.of(run)
    if role != "worker":
        config.pluginmanager.register(reruns.FirstAttempts(config), "mtpsweep-first-attempts")
    if role:
        config.stash[ROLE] = role
        controller = distribute.configure(config, run, role)
        if controller is not None:
            config.stash[CONTROLLER] = controller


@pytest.hookimpl(trylast=True)  # after pytest's own has made the fixture manager
def pytest_sessionstart(session: pytest.Session) -> None:
    """Each kind's fixture, where pytest and the other plugins have none of that name; a
    ladder whose kind's fixture is taken is refused before anything starts."""
    config = session.config
    kinds = pytestkinds.fixture_kinds(session)
    if not config.pluginmanager.has_plugin(KIND_FIXTURES_PLUGIN):
        config.pluginmanager.register(_kind_fixtures(kinds), KIND_FIXTURES_PLUGIN)
    run = config.stash.get(RUN, None)
    if run is not None and run.declared.fixture not in _fixtures(config):
        from .base.errors import UserError
        from .interface import registry

        try:
            registry.kind(run.ladder.kind, str(run.ladder.path))
        except UserError as exc:
            raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    """One line naming the ladder and the size of its plan."""
    run = config.stash.get(RUN, None)
    if run is None:
        return []
    lad = run.ladder
    cases = run.cases()
    lines = [
        f"mtpsweep: {lad.kind} ladder {lad.name} ({lad.path}): {len(lad.treatments)} "
        f"treatments x {lad.cycles} cycles, {len(cases)} cases, baseline {lad.baseline}"
    ]
    from .rig.models import machinery_line

    machinery = machinery_line(
        [lad.model or "", *(lad.model_of(t.key) or "" for t in lad.treatments)]
    )
    if machinery:
        lines.append(f"mtpsweep: {machinery}")
    limits = run.item_limits(cases)
    if limits:
        lines.append(
            f"mtpsweep: pytest-timeout limit {lad.measurement_timeout_s:g} s per measurement "
            f"(measurement_timeout_s); an item that opens or closes a session: up to "
            f"{max(limits):.0f} s"
        )
    return lines


def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Any:
    """With a ladder, a test asking for another kind's fixture is not collected at all: a run
    of experiments/ shows only the tests of its ladder's kind."""
    run = collector.config.stash.get(RUN, None)
    if run is None or not inspect.isfunction(obj) or not name.startswith("test"):
        return None
    params = inspect.signature(obj).parameters
    theirs = [f for f in _fixtures(collector.config) if f in params and f != run.declared.fixture]
    if run.declared.fixture not in params and any(pytestkinds.owns(collector, f) for f in theirs):
        return []
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise every test that asks for the ladder kind's fixture over the run plan."""
    wanted = [
        f
        for f in _fixtures(metafunc.config)
        if f in metafunc.fixturenames and pytestkinds.owns(metafunc.definition, f)
    ]
    if not wanted:
        return
    run = metafunc.config.stash.get(RUN, None)
    if run is None or run.declared.fixture not in wanted:
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
    """Put measurements in run-plan order after -k deselection; other tests keep theirs, first.
    Each measurement gets the ladder's time limit as a pytest-timeout marker."""
    run = config.stash.get(RUN, None)
    if run is None:
        return
    keyed = [(i, _case(item)) for i, item in enumerate(items)]
    keyed.sort(
        key=lambda t: (0, t[0], 0) if t[1] is None else (1, t[1].slot.ordinal, t[1].position)
    )
    items[:] = [items[i] for i, _ in keyed]
    measured = [(item, case) for item in items if (case := _case(item)) is not None]
    limits = run.item_limits([case for _, case in measured])
    for (item, _), limit in zip(measured, limits or (), strict=False):
        # the ladder's limit wins over a marker on the test function (it is per item)
        item.add_marker(pytest.mark.timeout(limit, method="signal"), append=False)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """Preflight items that pass or skip are not counted in the summary line (it counts
    measurements); a stopped run counts as `1 stopped`, not as a failed test; a measurement
    whose session the protocol re-ran to a full census as `R`, `1 rerun`."""
    if report.outcome == "rerun":  # type: ignore[comparison-overlap]
        from .runner import reruns

        return reruns.teststatus(report)
    if config.stash.get(RUN, None) is None or not report.nodeid.startswith("mtpsweep::"):
        return None
    from .runner import loop as runloop

    return runloop.teststatus(report)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """A measurement runs as pytest runs it, but a failure is logged once its session has
    closed: as a rerun if the protocol re-ran the session and the census completed."""
    reruns = item.config.stash.get(RERUNS, None)
    case = _case(item) if reruns is not None else None
    if reruns is None or case is None:
        return None
    return reruns.protocol(item, nextitem, case.slot.name)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    """Preflight items first (a failure stops the run before any server starts), then the
    measurements; after them, with every server down, the analysis and the --expect items."""
    config = session.config
    run = config.stash.get(RUN, None)
    only = config.getoption("mtpsweep_preflight_only")
    if run is None or (config.option.collectonly and not only):
        return (yield)
    role = config.stash.get(ROLE, "")
    if role == "worker":  # the controller ran preflight and founded the run directory
        try:
            return (yield)
        finally:
            config.stash[RERUNS].flush(everything=True)
    if role == "controller":
        return (yield from _controller_loop(session, run))
    cases = [c for c in (_case(i) for i in session.items) if c is not None]
    if not cases and not only:
        return (yield)
    from .runner import loop as runloop

    runloop.before(session, run, cases, only, _progress(config))
    try:
        result = yield
    except pytest.exit.Exception:
        config.stash[RERUNS].flush(everything=True)  # a held failure is a failure after all
        if run.stopped:
            runloop.report_stopped(config, run.stopped, runloop.run_properties(run))
        raise
    finally:
        config.stash[RERUNS].flush(everything=True)
    runloop.end(config, run)  # the last item's teardown stopped the last server
    runloop.gates(session, run)
    return result


def _controller_loop(session: pytest.Session, run: Run) -> Generator[None, object, object]:
    """pytest-xdist's controller: preflight for every worker, the loop (the run directory is
    founded once the first worker has collected), then the analysis, once."""
    from .runner import distribute
    from .runner import loop as runloop

    config = session.config
    state = config.stash[CONTROLLER]
    distribute.before(session, run, state)
    result = yield
    distribute.settle(run)
    runloop.end(config, run)
    runloop.gates(session, run)
    return result


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, controller: a worker starts; hand it the run directory and its device."""
    state = node.config.stash.get(CONTROLLER, None)
    if state is not None:
        from .runner import distribute

        distribute.configure_node(state, node.config.stash[RUN], node)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist, controller: each counterbalanced block goes to one worker, whole."""
    if config.stash.get(CONTROLLER, None) is None:
        return None
    from .runner import distribute

    return distribute.scheduler(config, log, config.stash[RUN])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist, controller: a worker is gone; its replacement takes its place."""
    state = node.config.stash.get(CONTROLLER, None)
    if state is not None:
        from .runner import distribute

        distribute.node_down(state, node)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """pytest-xdist, controller: the first collection is the selection; found the run."""
    state = node.config.stash.get(CONTROLLER, None)
    if state is not None:
        from .runner import distribute

        distribute.found(node.config, node.config.stash[RUN], state, ids)


def _progress(config: pytest.Config) -> Progress | None:
    """Live status lines on pytest's terminal, unless -q asks for quiet."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.get_verbosity() < 0:
        return None
    from .runner.terminal import TerminalProgress

    capture = config.pluginmanager.get_plugin("capturemanager")
    return TerminalProgress(reporter, capture, config.get_terminal_writer().fullwidth)


@pytest.fixture(scope="session")
def mtpsweep_run(request: pytest.FixtureRequest, pytestconfig: pytest.Config) -> Run:
    """The running experiment (ladder, kind, plan, run directory)."""
    run = pytestconfig.stash.get(RUN, None)
    if run is not None and run.sessions is None and pytestconfig.stash.get(ROLE, "") == "worker":
        from .runner import distribute

        distribute.join(pytestconfig, run, request.session.items)
    if run is None or run.sessions is None:
        pytest.skip("no --ladder given")
    return run


@pytest.fixture(scope="session")
def mtpsweep_server(request: pytest.FixtureRequest, mtpsweep_run: Run) -> Iterator[LiveSession]:
    """One server per session slot: started fresh, warmed up, stopped and checked."""
    from .base.errors import ServerError, SkipSession, StopRun, UserError

    slot, sessions = request.param, mtpsweep_run.sessions
    assert sessions is not None
    failure = None
    try:
        if request.config.stash.get(ROLE, "") == "worker":
            from .runner.distribute import before_session

            before_session(mtpsweep_run, slot)
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


def _measured(request: pytest.FixtureRequest, run: Run, live: LiveSession, case: Case) -> Result:
    from .base.errors import SkipCase, StopRun

    assert run.sessions is not None
    try:
        result = run.sessions.measure(live, case)
    except SkipCase as exc:  # recorded as not run (e.g. the token budget): say so, go on
        pytest.skip(str(exc))
    except StopRun as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.INTERRUPTED)
    # JUnit <properties> of this test case (what record_property records)
    request.node.user_properties.extend(run.properties(live, case, result).items())
    return result


def _kind_fixtures(kinds: tuple[Kind, ...]) -> types.ModuleType:
    """A plugin with each kind's fixture, named as the kind declares it (`measurement`,
    `cell`, ...): the case measured on its session, already recorded; the test asserts
    `.valid`. Every kind's fixture is the same function under its own name."""
    holder = types.ModuleType(KIND_FIXTURES_PLUGIN)
    for kind in kinds:

        def measured(
            request: pytest.FixtureRequest,
            mtpsweep_run: Run,
            mtpsweep_server: LiveSession,
            mtpsweep_case: Case,
        ) -> Result:
            return _measured(request, mtpsweep_run, mtpsweep_server, mtpsweep_case)

        measured.__doc__ = kind.summary or f"One case of a {kind.name} ladder, recorded."
        setattr(measured, pytestkinds.OURS, kind.name)
        setattr(holder, kind.fixture, pytest.fixture(name=kind.fixture)(measured))
    return holder


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """After a stop or an interruption, once the last server is down: the row table and the
    analysis (a run that went to the end had them before its --expect items)."""
    run = session.config.stash.get(RUN, None)
    role = session.config.stash.get(ROLE, "")
    if run is not None and role != "worker":
        from .runner import loop as runloop

        if role == "controller":  # after an interruption; xdist has stopped every worker
            from .runner.distribute import settle

            settle(run)
        runloop.end(session.config, run)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the row table, the analysis headline and where the run directory is."""
    run = config.stash.get(RUN, None)
    if run is None or run.run_dir is None or config.stash.get(ROLE, "") == "worker":
        return
    tr = terminalreporter
    tr.section("mtpsweep sessions")
    summary = run.summary
    if summary is not None and summary.rows:
        tr.write_line(summary.table(width=config.get_terminal_writer().fullwidth))
    end: EndAnalysis | None = run.analysis
    gates = run.request.analysis.gates
    if end is not None:
        tr.section("mtpsweep analysis")
        if end.error:
            tr.write_line(f"analysis: {end.error}")
        else:
            tr.write_line(end.table)
            tr.write_line(f"report: {end.report}")
        for v in () if end.error else end.verdicts(gates):
            if not v.passed:
                tr.write_line(f"--expect not met: {v.sentence}", red=True)
        if end.error and gates:
            tr.write_line("--expect not met: the analysis did not run", red=True)
    for line in summary.kind_lines if summary else []:
        tr.write_line(line)
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
