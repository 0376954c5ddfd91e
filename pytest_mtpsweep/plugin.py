"""pytest hooks and fixtures; every piece of work is delegated to the modules they name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import rowtable, server
from .analysis import ExpectationError, parse_expectation
from .client import Measurement
from .curtailment import DeadlineError
from .experiment import (
    AlreadyDone,
    Case,
    Curtailed,
    Experiment,
    ExperimentError,
    LiveSession,
    PreflightOptions,
    SessionEndAnalysis,
    StopRun,
    analyse_at_end,
)
from .ladder import SUBSETS, LadderError
from .preflight import PreflightError, failures, render_fixes, render_table
from .prompts import PromptError
from .provision import ProvisionError

EXPERIMENT = pytest.StashKey[Experiment]()
ANALYSIS = pytest.StashKey[SessionEndAnalysis]()
_USER_ERRORS = (LadderError, PromptError, ExperimentError, ProvisionError, DeadlineError)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ladder option and the ladder overrides."""
    g = parser.getgroup("mtpsweep", "LLM inference-server experiments (pytest-mtpsweep)")
    g.addoption(
        "--ladder",
        dest="mtpsweep_ladder",
        metavar="NAME|FILE",
        help="run this ladder (a name under ladders/ or a .toml path)",
    )
    g.addoption(
        "--model", dest="mtpsweep_model", metavar="GGUF", help="model file (overrides the ladder)"
    )
    g.addoption(
        "--server-bin",
        dest="mtpsweep_server_bin",
        metavar="PATH",
        help="llama-server executable (before MTPSWEEP_SERVER_BIN and the ladder)",
    )
    g.addoption("--max-tokens", dest="mtpsweep_max_tokens", type=int, metavar="N")
    g.addoption("--seed", dest="mtpsweep_seed", type=int, metavar="N")
    g.addoption("--temperature", dest="mtpsweep_temperature", type=float, metavar="T")
    g.addoption(
        "--cycles",
        dest="mtpsweep_cycles",
        type=int,
        metavar="N",
        help="number of cycles (odd: ladder order, even: reversed)",
    )
    g.addoption("--subset", dest="mtpsweep_subset", choices=SUBSETS)
    g.addoption("--prompts-dir", dest="mtpsweep_prompts_dir", metavar="DIR")
    g.addoption(
        "--port",
        dest="mtpsweep_port",
        type=int,
        metavar="PORT",
        help="server port (0: a free port per session)",
    )
    g.addoption(
        "--run-dir",
        dest="mtpsweep_run_dir",
        metavar="DIR",
        help="run directory to create (must not exist; default runs/<ladder>/<run-id>)",
    )
    g.addoption("--note", dest="mtpsweep_note", metavar="TEXT")
    g.addoption(
        "--placement",
        dest="mtpsweep_placement",
        metavar="TEXT",
        help="how the model is placed on the hardware (a comparability key)",
    )
    g.addoption(
        "--deadline",
        dest="mtpsweep_deadline",
        metavar="HH:MM",
        help="local time by which the run must end; sessions are dropped in the "
        "pre-registered order if it would overrun",
    )
    g.addoption(
        "--time-budget",
        dest="mtpsweep_time_budget",
        metavar="DURATION",
        help="like --deadline, as a duration from the start: 90s, 10m, 1h30m",
    )
    g.addoption(
        "--resume",
        dest="mtpsweep_resume",
        metavar="RUN_DIR",
        help="continue an interrupted run with the same ladder and options",
    )
    g.addoption(
        "--no-warmup",
        dest="mtpsweep_no_warmup",
        action="store_true",
        help="skip the warm-up request at session start",
    )
    g.addoption(
        "--no-calibration",
        dest="mtpsweep_no_calibration",
        action="store_true",
        help="skip the calibration prompt at session start and end",
    )
    g.addoption(
        "--baseline",
        dest="mtpsweep_baseline",
        metavar="TREATMENT",
        help="contrast against this treatment (default: the ladder's baseline)",
    )
    g.addoption(
        "--boot",
        dest="mtpsweep_boot",
        type=int,
        default=2000,
        metavar="N",
        help="bootstrap resamples (default 2000)",
    )
    g.addoption(
        "--boot-seed",
        dest="mtpsweep_boot_seed",
        type=int,
        default=42,
        metavar="N",
        help="bootstrap seed (default 42)",
    )
    g.addoption(
        "--expect",
        dest="mtpsweep_expect",
        action="append",
        default=[],
        metavar="TREATMENT:SUBSET:faster|slower|equivalent",
        help="fail the session unless the analysis supports this (repeatable)",
    )
    g.addoption(
        "--no-analysis",
        dest="mtpsweep_no_analysis",
        action="store_true",
        help="do not analyse at session end",
    )
    g.addoption(
        "--preflight-only",
        dest="mtpsweep_preflight_only",
        action="store_true",
        help="run the preflight checks, print the table, start nothing",
    )
    g.addoption(
        "--waive",
        dest="mtpsweep_waive",
        action="append",
        default=[],
        metavar="ITEM",
        help="let this preflight item fail without stopping the run (recorded)",
    )
    g.addoption(
        "--against",
        dest="mtpsweep_against",
        metavar="RUN_DIR",
        help="say per preflight item whether it is identical to that earlier run's",
    )
    g.addoption(
        "--verify-digests",
        dest="mtpsweep_verify_digests",
        action="store_true",
        help="re-hash model files instead of trusting the digest cache",
    )
    g.addoption(
        "--server-build",
        dest="mtpsweep_server_build",
        metavar="BUILD",
        help="the server build this run must use, e.g. 515e85511 or b11434",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Load and validate the ladder named by --ladder; refuse parallel measurement."""
    config.addinivalue_line(
        "markers", "mtpsweep: a measurement of an mtpsweep ladder (select or exclude with -m)"
    )
    name = config.getoption("mtpsweep_ladder", None)
    if not name:
        return
    if config.getoption("numprocesses", None) or hasattr(config, "workerinput"):
        raise pytest.UsageError(
            "--ladder runs measurements one server at a time; drop -n/--numprocesses (xdist)."
        )
    args_dirs = [Path(a.split("::")[0]) for a in config.args]
    search = [d / "ladders" for d in args_dirs if d.is_dir()]
    search.append(config.rootpath / "experiments" / "ladders")
    try:
        config.stash[EXPERIMENT] = Experiment.from_options(
            name,
            vars(config.option),
            search,
            config.invocation_params.dir,
            ["pytest", *config.invocation_params.args],
        )
    except _USER_ERRORS as exc:
        raise pytest.UsageError(str(exc)) from None
    keys = [t.key for t in config.stash[EXPERIMENT].ladder.treatments]
    for text in config.getoption("mtpsweep_expect"):
        try:
            parse_expectation(text, treatments=keys)
        except ExpectationError as exc:
            raise pytest.UsageError(f"--expect {text}: {exc}") from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    """One line naming the ladder and the size of its plan."""
    exp = config.stash.get(EXPERIMENT, None)
    if exp is None:
        return []
    lad = exp.ladder
    return [
        f"mtpsweep: ladder {lad.name} ({lad.path}): {len(lad.treatments)} treatments x "
        f"{lad.cycles} cycles x {len(exp.prompts)} prompts, baseline {lad.baseline}"
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise every test that asks for `measurement` over the run plan."""
    if "measurement" not in metafunc.fixturenames:
        return
    exp = metafunc.config.stash.get(EXPERIMENT, None)
    if exp is None:
        skip = pytest.mark.skip(
            reason="no --ladder given: run e.g. pytest experiments/ --ladder=cpu-demo"
        )
        metafunc.parametrize(
            ["mtpsweep_server", "mtpsweep_case"],
            [pytest.param(None, None, marks=skip, id="no-ladder")],
        )
        return
    cases = exp.cases()
    metafunc.parametrize(
        ["mtpsweep_server", "mtpsweep_case"],
        [pytest.param(c.slot, c, id=c.id, marks=pytest.mark.mtpsweep) for c in cases],
        indirect=["mtpsweep_server"],
        scope="session",
    )


def _case(item: pytest.Item) -> Case | None:
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("mtpsweep_case") if callspec else None
    return case if isinstance(case, Case) else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put measurements in run-plan order after -k deselection; other tests keep theirs, first."""
    keyed = [(i, _case(item)) for i, item in enumerate(items)]
    keyed.sort(key=lambda t: (0, t[0], 0) if t[1] is None else (1, *t[1].order_key))
    items[:] = [items[i] for i, _ in keyed]


def pytest_runtestloop(session: pytest.Session) -> None:
    """Before the first measurement: preflight, then create the run directory."""
    config = session.config
    exp = config.stash.get(EXPERIMENT, None)
    only = config.getoption("mtpsweep_preflight_only")
    if exp is None or (config.option.collectonly and not only):
        return
    cases = [c for c in (_case(i) for i in session.items) if c is not None]
    if not cases and not only:
        return
    opts = PreflightOptions(
        waive=frozenset(config.getoption("mtpsweep_waive")),
        against=Path(a) if (a := config.getoption("mtpsweep_against")) else None,
        verify_digests=config.getoption("mtpsweep_verify_digests"),
        server_build=config.getoption("mtpsweep_server_build"),
    )
    try:
        run_path = exp.resolve()
        checks = exp.run_preflight(run_path, opts)
    except (*_USER_ERRORS, PreflightError) as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.section("mtpsweep preflight")
        reporter.write_line(render_table(checks))
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
        exp.begin(cases, run_path, checks)
    except ExperimentError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(scope="session")
def mtpsweep_experiment(pytestconfig: pytest.Config) -> Experiment:
    """The running experiment (ladder, plan, run directory)."""
    exp = pytestconfig.stash.get(EXPERIMENT, None)
    if exp is None:
        pytest.skip("no --ladder given")
    return exp


@pytest.fixture(scope="session")
def mtpsweep_server(
    request: pytest.FixtureRequest, mtpsweep_experiment: Experiment
) -> Iterator[LiveSession]:
    """One server per (treatment, cycle): started fresh, warmed up, stopped and checked."""
    slot = request.param
    try:
        mtpsweep_experiment.check_schedule(slot)
        live = mtpsweep_experiment.open_session(slot)
    except (Curtailed, AlreadyDone) as exc:
        pytest.skip(str(exc))
    except server.ServerError as exc:
        pytest.fail(f"session {slot.name}: {exc}", pytrace=False)
    except StopRun as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.INTERRUPTED)
    try:
        yield live
    finally:
        try:
            mtpsweep_experiment.close_session(live)
        except StopRun as exc:  # a stop marker in the one re-run of a partial census
            pytest.exit(str(exc), returncode=pytest.ExitCode.INTERRUPTED)


@pytest.fixture
def measurement(
    mtpsweep_experiment: Experiment, mtpsweep_server: LiveSession, mtpsweep_case: Case
) -> Measurement:
    """One streamed measurement, already recorded; assert `.valid` in the test."""
    try:
        return mtpsweep_experiment.measure(mtpsweep_server, mtpsweep_case)
    except StopRun as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.INTERRUPTED)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """After the last server is down: the row table, the analysis, and the --expect gates."""
    config = session.config
    exp = config.stash.get(EXPERIMENT, None)
    if exp is None:
        return
    run_dir = exp.finish()
    if run_dir is None or config.getoption("mtpsweep_no_analysis"):
        return
    end = analyse_at_end(
        run_dir,
        config.getoption("mtpsweep_baseline"),
        config.getoption("mtpsweep_boot"),
        config.getoption("mtpsweep_boot_seed"),
        config.getoption("mtpsweep_expect"),
    )
    config.stash[ANALYSIS] = end
    if (end.gate_failures or (end.error and config.getoption("mtpsweep_expect"))) and (
        session.exitstatus == pytest.ExitCode.OK
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the row table and where the run directory is."""
    exp = config.stash.get(EXPERIMENT, None)
    if exp is None or exp.run_dir is None:
        return
    tr = terminalreporter
    tr.section("mtpsweep sessions")
    if exp.rows:
        tr.write_line(rowtable.render(exp.rows))
    end = config.stash.get(ANALYSIS, None)
    if end is not None:
        tr.section("mtpsweep analysis")
        if end.error:
            tr.write_line(f"analysis: {end.error}")
        else:
            tr.write_line(end.table)
            tr.write_line(f"report: {end.report}")
        for failure in end.gate_failures:
            tr.write_line(f"--expect not met: {failure}", red=True)
        if end.error and config.getoption("mtpsweep_expect"):
            tr.write_line("--expect not met: the analysis did not run", red=True)
    if exp.stopped:
        tr.write_line(f"STOPPED by a protocol rule: {exp.stopped}")
    for line in exp.memory_lines:
        tr.write_line(line)
    for name, why in exp.dropped.items():
        tr.write_line(f"{name}: {why}")
    tr.write_line(f"run directory: {exp.run_dir.path}")


def pytest_unconfigure(config: pytest.Config) -> None:
    """No server outlives pytest, whatever happened."""
    server.stop_all()
