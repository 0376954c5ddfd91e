"""The grader's own report: a pytest plugin loaded in the grader's jail (`-p mtpsweep_grader`).

Standard library only (copied into the grader's jail as `mtpsweep_grader.py`). It writes, at the
end of the session, the test ids collected and each one's outcome to a file descriptor that only
the grader holds (`MTPSWEEP_REPORT_FD`); the parent reads it after the grader exits. The candidate
runs in another process and never holds that descriptor, so it cannot write this report: the
verdict is read from it alone (green when collected == passed > 0), never from text or exit status.
"""

from __future__ import annotations

import json
import os
from typing import Any

_STATE: dict[str, Any] = {"collected": [], "outcomes": {}, "collect_errors": []}


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _STATE["collect_errors"].append(str(report.nodeid))


def pytest_collection_finish(session: Any) -> None:
    _STATE["collected"] = [str(item.nodeid) for item in session.items]


def pytest_runtest_logreport(report: Any) -> None:
    outcomes: dict[str, str] = _STATE["outcomes"]
    node = str(report.nodeid)
    if report.when == "call":
        outcomes.setdefault(node, str(report.outcome))  # passed, failed or skipped
    elif report.failed:  # setup or teardown broke: the test errored
        outcomes[node] = "error"
    elif report.skipped and report.when == "setup":
        outcomes[node] = "skipped"
    if report.when == "teardown" and report.failed:
        outcomes[node] = "error"


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    fd = os.environ.get("MTPSWEEP_REPORT_FD")
    if fd is None:
        return
    outcomes: dict[str, str] = _STATE["outcomes"]
    report = {
        "collected": _STATE["collected"],
        "outcomes": outcomes,
        "collect_errors": _STATE["collect_errors"],
        "exitstatus": int(exitstatus),
        "complete": True,
    }
    data = json.dumps(report).encode("utf-8")
    view = memoryview(data)
    while view:
        view = view[os.write(int(fd), view) :]
    os.close(int(fd))
