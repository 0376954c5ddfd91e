"""Measurements whose session the protocol re-ran: shown as pytest reruns, not as failures.

A failed measurement's reports are held back until its session has closed (a session closes in
the setup of the next session's first item, or in the last item's teardown), because only then
is it known whether the protocol re-ran the session and the re-run completed the census. If it
did, the failure is reported as `rerun` (`R`, "1 rerun" in the summary line, like
pytest-rerunfailures): it does not count as failed, so a recovered run exits 0. The JUnit file
keeps the first attempt: its message as a `<rerunFailure>` (the Surefire element CI servers show
as a flaky test) and as properties. This module is pytest's edge, like runloop.py; it is
imported only when a run uses --ladder.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest
from _pytest.runner import runtestprotocol  # public in all but name; pytest-rerunfailures's too

if TYPE_CHECKING:
    from ..protocol.ladderrun import Run

RERUN = "rerun"


@dataclass
class Held:
    """One failed measurement item, its reports not yet logged."""

    item: pytest.Item
    session: str
    reports: list[pytest.TestReport]


@dataclass
class Reruns:
    """The failed measurements held back, per session, until that session has closed."""

    closed: Callable[[str], bool]  # whether the protocol has closed this session (re-run too)
    recovered: Callable[[str], bool]  # whether its re-run completed the census
    held: list[Held] = field(default_factory=list)

    @classmethod
    def of(cls, run: Run) -> Reruns:
        """Asks the run's sessions (made once the loop starts) what became of a session."""

        def closed(name: str) -> bool:
            return run.sessions is None or name in run.sessions.closed

        def recovered(name: str) -> bool:
            return run.sessions is not None and name in run.sessions.recovered

        return cls(closed, recovered)

    def protocol(self, item: pytest.Item, nextitem: pytest.Item | None, session: str) -> bool:
        """pytest's runtest protocol for one measurement, its logging in our hands."""
        ihook = item.ihook
        ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if any(r.failed for r in reports):
            self.held.append(Held(item, session, reports))  # logged by flush once it closed
        else:
            _log(item, reports)
        self.flush()
        return True

    def flush(self, everything: bool = False) -> None:
        """Log the held items whose session has closed (all of them at the end of the loop)."""
        keep = []
        for held in self.held:
            if not (everything or self.closed(held.session)):
                keep.append(held)
                continue
            if self.recovered(held.session):
                _as_rerun(held.reports, held.session)
            _log(held.item, held.reports)
        self.held = keep


def _log(item: pytest.Item, reports: list[pytest.TestReport]) -> None:
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def _as_rerun(reports: list[pytest.TestReport], session: str) -> None:
    """Failed reports become reruns; the first attempt rides along for JUnit (the teardown
    report's properties are the ones JUnit writes)."""
    first = ""
    for report in reports:
        if report.failed:
            first = first or f"{report.when} failed: {_message(report)}"
            report.__dict__["mtpsweep_first_attempt"] = (_message(report), report.longreprtext)
            report.outcome = RERUN  # type: ignore[assignment]  # what pytest-rerunfailures does
    last = reports[-1]
    # a report's user_properties may be the item's own list, shared by all its reports
    props = [p for p in last.user_properties if p[0] not in ("first_attempt", RERUN)]
    props.append(("first_attempt", first))
    props.append((RERUN, f"session {session} was re-run by the protocol; its census completed"))
    last.user_properties = props


def _message(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or report.longreprtext
    return " ".join(str(text).split())[:500]


def teststatus(report: pytest.TestReport) -> tuple[str, str, Any] | None:
    """How the terminal shows a rerun: `R`, RERUN, and `1 rerun` in the summary line."""
    if report.outcome == RERUN:
        return RERUN, "R", ("RERUN", {"yellow": True})
    return None


class FirstAttempts:
    """A plugin object: the first attempt of a rerun measurement, into the JUnit test case as
    `<rerunFailure>` (with --junitxml); its properties already say the same."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        first = report.__dict__.get("mtpsweep_first_attempt")
        if first is None or report.outcome != RERUN:
            return
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        if xml is None:
            return
        message, text = first
        node = ET.Element("rerunFailure", message=message, type="mtpsweep.rerun")
        node.text = text
        xml.node_reporter(report).append(node)
