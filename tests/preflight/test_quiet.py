"""Preflight's host_quiet item (preflight/quiet.py), on faked readings (stand-ins for a busy
and a quiet host: a real busy host cannot be made reliably here)."""

from __future__ import annotations

import pytest

from pytest_mtpsweep.ladder.values import HostRule
from pytest_mtpsweep.preflight import FAIL, PASS, SKIP, QuietCheck
from pytest_mtpsweep.preflight.quiet import check_host_quiet
from pytest_mtpsweep.rig import busyhost

BUSY = busyhost.HostLoad(2.0, 52.0, 61.0, "PSI", (busyhost.Hog(4242, "hog.py", 99.0),))
QUIET = busyhost.HostLoad(2.0, 1.0, 3.0, "PSI", ())


def reads(monkeypatch: pytest.MonkeyPatch, *loads: busyhost.HostLoad) -> None:
    queue = list(loads)

    def measure(*_: object) -> busyhost.HostLoad:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    monkeypatch.setattr(busyhost, "measure", measure)


def test_not_applied_is_skipped_without_a_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(busyhost, "measure", None)  # a read would fail
    item = check_host_quiet(QuietCheck(None, "not applied: MTPSWEEP_HOST_RULE=off"))
    assert item.verdict == SKIP and item.observed == "skipped: not applied: MTPSWEEP_HOST_RULE=off"
    assert check_host_quiet(None).verdict == SKIP


def test_a_quiet_host_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    reads(monkeypatch, QUIET)
    item = check_host_quiet(QuietCheck(HostRule(), roots=(1,)))
    assert item.verdict == PASS and item.stable == "quiet"
    assert item.expected == "others <= 10% of the CPU, CPU stall <= 50% (host rule)"


def test_a_busy_host_fails_in_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    reads(monkeypatch, BUSY)
    item = check_host_quiet(QuietCheck(HostRule(), roots=(1,)))
    assert item.verdict == FAIL and item.stable == "busy"
    assert item.fix.startswith(
        "The host is busy before the run: other processes used 52.0% of the CPU (over "
        "cpu_noise_pct 10); some task waited for a CPU 61.0% of the time, by PSI (over "
        "cpu_stall_pct 50) over 2.0 s; top processes: pid 4242 hog.py (99% of a core); stop"
    )
    assert "CPU stall 61.0% (PSI); top: pid 4242 hog.py" in item.observed


def test_the_ladder_s_thresholds_are_the_ones_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    reads(monkeypatch, BUSY)
    loose = HostRule(cpu_noise_pct=60.0, cpu_stall_pct=70.0)
    assert check_host_quiet(QuietCheck(loose, roots=(1,))).verdict == PASS


def test_a_wait_is_said_and_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    reads(monkeypatch, BUSY, QUIET)
    heard: list[str] = []
    item = check_host_quiet(QuietCheck(HostRule(), wait_s=600.0, on_wait=heard.append, roots=(1,)))
    assert item.verdict == PASS and "for quiet" in item.observed
    assert len(heard) == 1 and heard[0].startswith("waiting for a quiet host (")
