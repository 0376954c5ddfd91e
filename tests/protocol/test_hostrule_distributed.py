"""The host rule under `-n 2` on one host: the sibling workers and their servers are the run,
never the host's noise (STUB servers, pytest-xdist popen workers).

The machine is made quiet for the test: in each worker, the machine's busy CPU time is what the
run's own processes (the controller's tree) used, as on a host where nothing else runs. So any
other load the rule sees is the run's own, which it must not count.
"""

from __future__ import annotations

import json
import os

import pytest

from pytest_mtpsweep.rig import busyhost
from tests.protocol.test_session import run_stub, stub_project
from tests.sandbox import only_run

QUIET = """
import collections, os
import psutil

Times = collections.namedtuple("Times", "user system idle")
real = psutil.cpu_times


def quiet(percpu=False):
    # a quiet host: busy only with this run, the controller (this worker's parent) and all
    # it started, the ended ones included
    root = psutil.Process(os.getppid())
    busy = 0.0
    for p in [root, *root.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        busy += t.user + t.system + t.children_user + t.children_system
    return Times(busy, 0.0, 0.0)


# Only in the inner run's workers, the children of the test's own process: never in that process
# (it may itself be an outer xdist worker, where a patched psutil would reach later tests).
if os.environ.get("MTPSWEEP_TEST_QUIET_PARENT") == str(os.getppid()):
    psutil.cpu_times = quiet
"""

# Only other processes' share of the CPU can spoil a session here.
RULE = """
[host_rule]
cpu_noise_pct = 10
memory_stall_pct = 100
cpu_stall_pct = 100
major_faults = 1000000000
calibration_drift_pct = 100
"""


def test_two_workers_on_one_host_are_not_each_other_s_noise(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MTPSWEEP_HOST_RULE", "on")
    monkeypatch.setenv("MTPSWEEP_TEST_QUIET_PARENT", str(os.getpid()))
    # preflight's host_quiet reads the host in the controller, this process: a quiet stand-in
    quiet = busyhost.HostLoad(2.0, 0.0, 0.0, "PSI", ())
    monkeypatch.setattr(busyhost, "measure", lambda *_: quiet)
    few = stub_project(pytester, [], prompts=4)
    ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
    ladder.write_text(ladder.read_text() + RULE)
    (pytester.path / "conftest.py").write_text(QUIET)
    result = run_stub(pytester, few, "--cycles", "4", "-n", "2", "--no-calibration")
    result.assert_outcomes(passed=32)
    run = only_run(pytester.path)
    assert not (run / "quarantine").exists() or not any((run / "quarantine").iterdir())
    sessions = [json.loads(p.read_text()) for p in sorted((run / "sessions").glob("*.json"))]
    assert len(sessions) == 8 and {s["worker"] for s in sessions} == {"gw0", "gw1"}
    for s in sessions:  # judged, and none re-run on this quiet host
        assert s["host_rule"]["applied"] is True and "cpu_noise_pct" in s["host_rule"]["checked"]
        assert s["host_rule"]["spoiled"] is None, (s["session"], s["host"])
        assert not s.get("rerun") and not s.get("host_spoiled")
        assert s["host"]["note"].startswith("-n on this host: the sibling workers")
