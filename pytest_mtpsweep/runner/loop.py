"""What the plugin's `pytest_runtestloop` wrapper does around pytest's own loop, as test items.

Before the loop, preflight: each item is an `mtpsweep::preflight[<item>]` that passes, fails or
is skipped with what was observed, and a failure stops the run before any server starts. After
it (the last server is down): the row table and the analysis, whose headline goes into the
JUnit suite's properties, then each `--expect` as an `mtpsweep::expect[<gate>]`. Items run
through pytest's own runtest protocol, so JUnit XML, the exit status and every reporting
plugin see them like any test. A run a protocol rule stops gets one `mtpsweep::stopped` report.
This module is pytest's edge, like plugin.py; it is imported only when a run uses --ladder.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pytest

if TYPE_CHECKING:
    from pathlib import Path

    from ..interface.kind import Case
    from ..preflight import PreflightItem
    from ..protocol.ladderrun import Run
    from ..protocol.progress import Progress
    from ..wishes.gate import GateVerdict

PREFIX = "mtpsweep::"
PREFLIGHT = "preflight"
EXPECT = "expect"
STOPPED = "stopped"
Outcome = Literal["passed", "failed", "skipped"]


class CheckItem(pytest.Item):
    """A session-level check whose verdict is known when the item is made."""

    def __init__(
        self,
        *,
        outcome: str,
        message: str,
        properties: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.outcome = outcome
        self.message = message
        props = (properties or {}).items()
        self.user_properties.extend((k, v) for k, v in props if v not in (None, ""))

    def runtest(self) -> None:
        if self.outcome == "failed":
            pytest.fail(self.message, pytrace=False)
        if self.outcome == "skipped":
            pytest.skip(self.message)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, self.name


def _item(session: pytest.Session, name: str, **kwargs: Any) -> CheckItem:
    item: CheckItem = CheckItem.from_parent(session, name=name, nodeid=f"{PREFIX}{name}", **kwargs)
    return item


def preflight_items(session: pytest.Session, checks: Iterable[PreflightItem]) -> list[CheckItem]:
    """One item per preflight row: pass, fail (with its fix) or skip; waived is a skip."""
    out = []
    for check in checks:
        message = f"{check.name}: observed {check.observed}; expected {check.expected}"
        if check.verdict == "fail":
            outcome, message = "failed", f"{message}. Fix: {check.fix}" if check.fix else message
        elif check.verdict == "waived":
            outcome, message = "skipped", f"waived by --waive {check.name}: {message}"
        elif check.verdict == "skip":
            outcome = "skipped"
        else:
            outcome = "passed"
        props = {
            "verdict": check.verdict,
            "expected": check.expected,
            "observed": check.observed,
            "fix": check.fix,
            "same_as_against": check.same_as_against,
        }
        out.append(
            _item(
                session,
                f"{PREFLIGHT}[{check.name}]",
                outcome=outcome,
                message=message,
                properties=props,
            )
        )
    return out


def gate_items(session: pytest.Session, verdicts: Sequence[GateVerdict]) -> list[CheckItem]:
    """One item per `--expect` gate: passed when it passed, failed with the reason when it
    failed or was never judged (a gate nobody judged must not pass CI)."""
    out = []
    for v in verdicts:
        outcome = "passed" if v.passed else "failed"
        met = v.passed if v.judged else None
        props: dict[str, Any] = {
            "expectation": v.gate.text,
            "met": met,
            "detail": v.sentence,
            "decided": v.decided,
        }
        if v.figures is not None:  # the JUnit case carries the numbers a CI dashboard reads
            f = v.figures
            props |= {
                "metric": f.metric,
                "estimate_pct": f.estimate_pct,
                "lower_pct": f.lower_pct,
                "upper_pct": f.upper_pct,
                "confidence": f.confidence,
                "margin_pct": f.margin_pct,
            }
        out.append(
            _item(
                session,
                f"{EXPECT}[{v.gate.text}]",
                outcome=outcome,
                message=v.sentence,
                properties=props,
            )
        )
    return out


def run_items(items: Sequence[pytest.Item], after: pytest.Item | None) -> None:
    """Run items through pytest's runtest protocol; `after` is the item that comes next."""
    for i, item in enumerate(items):
        nextitem = items[i + 1] if i + 1 < len(items) else after
        item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)


def teststatus(report: pytest.TestReport) -> tuple[str, str, Any] | None:
    """How the terminal counts our reports: a preflight item that passed or was skipped is
    shown (a letter, or a word with -v) but not counted in the summary line, which counts
    measurements; a stopped run counts as `stopped`; the rest as pytest does."""
    if report.nodeid.startswith(f"{PREFIX}{PREFLIGHT}[") and report.when == "call":
        if report.passed:
            return "", ".", "PASSED"
        if report.skipped:
            return "", "s", ("SKIPPED", {"yellow": True})
    if report.nodeid == f"{PREFIX}{STOPPED}" and report.when == "call":
        return STOPPED, "!", ("STOPPED", {"red": True})
    return None


def report_stopped(config: pytest.Config, marker: str, properties: Mapping[str, Any]) -> None:
    """A failed `mtpsweep::stopped` case for a run a protocol rule stopped.

    The rule interrupts pytest inside a fixture, where no item can run any more, so the
    reports are made here and go through the same hooks an item's would.
    """
    nodeid = f"{PREFIX}{STOPPED}"
    location = (".", None, STOPPED)
    props = [(k, v) for k, v in properties.items() if v not in (None, "")]
    hook = config.hook
    hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
    now = time.time()
    phases: tuple[tuple[Literal["setup", "call", "teardown"], Outcome, str | None], ...] = (
        ("setup", "passed", None),
        ("call", "failed", f"STOPPED by a protocol rule: {marker}"),
        ("teardown", "passed", None),
    )
    for when, outcome, longrepr in phases:
        report = pytest.TestReport(
            nodeid,
            location,
            {STOPPED: 1},
            outcome,
            longrepr,
            when,
            duration=0.0,
            start=now,
            stop=now,
            user_properties=props,
        )
        hook.pytest_runtest_logreport(report=report)
    hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)


def suite_properties(config: pytest.Config, properties: Mapping[str, Any]) -> None:
    """Properties of the JUnit <testsuite> (what record_testsuite_property records)."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # a pytest without it: the properties are in the terminal and report
        return
    xml = config.stash.get(xml_key, None)
    if xml is None:  # no --junitxml
        return
    for name, value in properties.items():
        if value not in (None, ""):
            xml.add_global_property(name, value)


def gate_preflight(
    session: pytest.Session,
    checks: list[PreflightItem],
    only: bool,
    next_item: pytest.Item | None,
) -> None:
    """Print the preflight table, run each item as a test item, and stop the run (nothing
    started) on `--preflight-only` or when an item failed."""
    from ..preflight import HOST_QUIET, SERVER_RUNS, failures, render_fixes, render_table

    config = session.config
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.section("mtpsweep preflight")
        reporter.write_line(render_table(checks, width=config.get_terminal_writer().fullwidth))
    run_items(preflight_items(session, checks), next_item)
    failed = failures(checks)
    if only:
        pytest.exit(
            f"preflight only: {len(failed)} item(s) failed"
            if failed
            else "preflight only: all items pass",
            returncode=pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK,
        )
    if failed:
        # A server that cannot run here, or a host too busy to measure on, is the run's end,
        # not a failed check among others: exit 2, as when the run stops on a server that
        # crashes at load twice or a re-run meets the same busy host.
        broken = any(item.name in (SERVER_RUNS, HOST_QUIET) for item in failed)
        pytest.exit(
            "preflight failed, so no server was started:\n" + render_fixes(failed),
            returncode=pytest.ExitCode.INTERRUPTED if broken else pytest.ExitCode.TESTS_FAILED,
        )


def wait_line(config: pytest.Config) -> Callable[[str], None]:
    """A line on pytest's terminal, capturing suspended, while preflight waits for quiet."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")

    def say(line: str) -> None:
        if reporter is None:
            return
        quiet = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
        with quiet:
            reporter.write_line(f"mtpsweep preflight: {line}")

    return say


def before(
    session: pytest.Session, run: Run, cases: list[Case], only: bool, progress: Progress | None
) -> None:
    """Preflight as test items; stop before anything starts if an item fails; then begin."""
    from ..base.errors import UserError

    config = session.config
    try:
        run.check_selection(cases)
        run.resolve()
        checks: list[PreflightItem] = run.preflight(on_wait=wait_line(config))
    except UserError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    session.testscollected += len(checks)  # so the progress percentages count them
    gate_preflight(session, checks, only, session.items[0] if session.items else None)
    try:
        run.begin(cases, checks, progress)
    except UserError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    suite_properties(config, run_properties(run))


def run_properties(run: Run) -> dict[str, Any]:
    sessions = run.sessions
    return {
        "mtpsweep.ladder": run.ladder.name,
        "mtpsweep.run_id": sessions.ctx.run_id if sessions else None,
        "mtpsweep.run_dir": run.run_dir.path if run.run_dir else None,
    }


def end(config: pytest.Config, run: Run) -> None:
    """The row table and the session-end analysis, once, after the last server is down."""
    if run.run_dir is None or run.summary is not None:
        return
    try:
        summary = run.finish()
        end_analysis = run.analyse()
    except KeyboardInterrupt:  # pytest would print a traceback from inside the analysis
        pytest.exit(
            f"interrupted before the analysis ended; run `mtpsweep analyse {run.run_dir.path}`",
            returncode=pytest.ExitCode.INTERRUPTED,
        )
    rows = summary.rows if summary else []
    valid, measured = sum(r["valid"] for r in rows), sum(r["measured"] for r in rows)
    props: dict[str, Any] = {"mtpsweep.measurements": f"{valid} valid of {measured}"}
    if end_analysis is not None:
        props |= {
            "mtpsweep.report": end_analysis.report,
            "mtpsweep.analysis_error": end_analysis.error,
        }
        props |= dict(end_analysis.headline or {})
    suite_properties(config, props)


def gates(session: pytest.Session, run: Run) -> None:
    """Each --expect gate as a test item `mtpsweep::expect[...]`, judged on the analysis."""
    gates = run.request.analysis.gates
    if not gates:
        return
    from ..wishes.gate import GateVerdict

    verdicts = (
        run.analysis.verdicts(gates)
        if run.analysis is not None
        else [GateVerdict.unjudged(g, "--no-analysis; drop it, or drop --expect") for g in gates]
    )
    items = gate_items(session, verdicts)
    session.testscollected += len(items)
    run_items(items, None)
    if run.request.analysis.history is not None:
        record_history(session, run, verdicts, run.request.analysis.history)


def record_history(
    session: pytest.Session, run: Run, verdicts: Sequence[GateVerdict], path: Path
) -> None:
    """Each verdict appended to `--history`; a write that fails is one failed item,
    `mtpsweep::history`, so the lost entry is seen (the verdicts stand)."""
    from ..state import history

    ctx = run.sessions.ctx if run.sessions else None
    keyed = ctx.keyed if ctx else {}
    model = f"{keyed.get('model_id') or ''}@{str(keyed.get('model_sha256') or '')[:12]}"
    build = str(keyed.get("server_build") or "")
    # builds as treatments key each arm's build (`key=build@sha12,…`); else one for every arm
    arms = dict(p.split("=", 1) for p in build.split(",") if "=" in p)
    baseline = run.request.analysis.baseline or run.ladder.baseline
    host, now = history.host_fingerprint(), history.now_utc()
    try:
        entries = []
        for v in verdicts:
            gate, f = v.gate, v.figures  # a gate whose interval could not be formed records none
            if f and not all(map(math.isfinite, (f.estimate_pct, f.lower_pct, f.upper_pct))):
                f = None
            entries.append(
                history.GateEntry(
                    time=now,
                    run=ctx.run_id if ctx else "",
                    gate=gate.text,
                    treatment=gate.treatment,
                    baseline=baseline,
                    subset=gate.cell,
                    metric=f.metric if f else "",
                    margin_pct=f.margin_pct if f and f.margin_pct is not None else gate.margin,
                    estimate_pct=f.estimate_pct if f else None,
                    lower_pct=f.lower_pct if f else None,
                    upper_pct=f.upper_pct if f else None,
                    confidence=f.confidence if f else 0.95,
                    decision=v.decided,
                    host=host,
                    model=model,
                    treatment_build=arms.get(gate.treatment, build),
                    baseline_build=arms.get(baseline, build),
                )
            )
        history.append(path, entries)
    except history.HistoryError as exc:
        item = _item(session, "history", outcome="failed", message=str(exc))
        session.testscollected += 1
        run_items([item], None)
