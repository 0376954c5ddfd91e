"""What the run's server would compete with: other processes' CPU, the stall, the top processes,
the run's own trees left out, and the bounded wait for quiet (rig/busyhost.py).

The busy host here is a stand-in: one child that spins one core for at most 30 s and is
killed in a `finally`; the thresholds are judged on faked `HostLoad` readings.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest

from pytest_mtpsweep.ladder.values import HostRule
from pytest_mtpsweep.rig import busyhost

SPIN = "import time\nend = time.time() + 30\nwhile time.time() < end: pass\n"
# Starts the spinner and leaves it an orphan (outside this test's process tree), as a job of
# another user's would be; prints its pid.
ORPHAN = (
    "import subprocess, sys\n"
    f"p = subprocess.Popen([sys.executable, '-c', {SPIN!r}], stdout=subprocess.DEVNULL,"
    " stderr=subprocess.DEVNULL)\n"
    "print(p.pid, flush=True)\n"
)


@contextlib.contextmanager
def spinner(ours: bool) -> Iterator[int]:
    """One core spinning, as this process's child (`ours`) or as an orphan; killed after."""
    pid = None
    child = None
    try:
        if ours:
            child = subprocess.Popen([sys.executable, "-c", SPIN])
            pid = child.pid
        else:
            out = subprocess.run(
                [sys.executable, "-c", ORPHAN], capture_output=True, text=True, timeout=30
            )
            pid = int(out.stdout.split()[0])
        yield pid
    finally:
        if child is not None:
            child.kill()
            child.wait()
        elif pid is not None:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


def test_a_process_outside_the_run_is_counted_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(busyhost, "TOP", 1000)  # a busy CI host has other hogs too
    with spinner(ours=False) as pid:
        load = busyhost.measure(1.0)
    hog = next((h for h in load.top if h.pid == pid), None)
    assert hog is not None, load.describe()
    assert hog.cpu_pct > 5 and hog.name.startswith("python")
    cores = psutil.cpu_count() or 1
    # its CPU is in the others' share (two reads of one window: a few points apart on a busy host)
    assert load.other_cpu_pct >= hog.cpu_pct / cores - 5.0
    assert f"pid {pid} " in load.describe()


def test_the_run_s_own_tree_is_not_other_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child of this process (a server, an xdist worker) is the run's, never named."""
    monkeypatch.setattr(busyhost, "TOP", 1000)
    with spinner(ours=True) as pid:
        load = busyhost.measure(1.0)
    assert pid not in {h.pid for h in load.top}, load.describe()


def test_the_roots_climb_the_same_python_ancestors() -> None:
    roots = busyhost.run_roots((123456789,))
    assert roots[:2] == (os.getpid(), 123456789)
    parent = psutil.Process().parent()
    same = parent is not None and parent.exe() == psutil.Process().exe()
    assert (parent is not None and parent.pid in roots) == same


def load(other: float, stall: float | None = 0.0) -> busyhost.HostLoad:
    """A faked reading (a stand-in for a busy or quiet host)."""
    top = (busyhost.Hog(4242, "hog.py", 99.4), busyhost.Hog(7, "cc1plus", 12.0))
    return busyhost.HostLoad(2.0, other, stall, "PSI" if stall is not None else "", top)


@pytest.mark.parametrize(
    ("other", "stall", "over"),
    [(10.0, 50.0, []), (10.1, 0.0, ["cpu_noise_pct"]), (0.0, 50.1, ["cpu_stall_pct"]),
     (66.3, 80.0, ["cpu_noise_pct", "cpu_stall_pct"]), (0.0, None, [])],
)  # fmt: skip
def test_the_host_rule_s_thresholds_decide(
    other: float, stall: float | None, over: list[str]
) -> None:
    said = busyhost.over(load(other, stall), HostRule())  # the defaults: 10 and 50, strictly
    assert [next(n for n in ("cpu_noise_pct", "cpu_stall_pct") if n in s) for s in said] == over


def test_the_sentence_names_the_top_processes_and_the_fix() -> None:
    reading = load(66.3)
    text = busyhost.sentence(reading, busyhost.over(reading, HostRule()))
    assert text == (
        "the host is busy before the run: other processes used 66.3% of the CPU (over "
        "cpu_noise_pct 10) over 2.0 s; top processes: pid 4242 hog.py (99% of a core), pid 7 "
        "cc1plus (12% of a core); stop them, or pass --wait-for-quiet=SECONDS to wait for a "
        "quiet host, or raise [host_rule] cpu_noise_pct and cpu_stall_pct in the ladder."
    )
    assert text.count(".") == 4  # one sentence: the decimals and its full stop


def test_without_psi_the_load_average_stands_in() -> None:
    assert busyhost._load_stall(0.0) == 0.0
    cores = psutil.cpu_count() or 1
    assert busyhost._load_stall(float(cores)) == 0.0
    assert busyhost._load_stall(4.0 * cores) == pytest.approx(75.0)


def fake_reads(monkeypatch: pytest.MonkeyPatch, *loads: busyhost.HostLoad) -> list[float]:
    queue, now = list(loads), [0.0]

    def measure(window_s: float, roots: object) -> busyhost.HostLoad:
        now[0] += window_s
        return queue.pop(0) if len(queue) > 1 else queue[0]

    monkeypatch.setattr(busyhost, "measure", measure)
    return now


def test_waiting_for_quiet_says_so_and_runs_once_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    now = fake_reads(monkeypatch, load(66.3), load(40.0), load(2.0))
    heard: list[str] = []
    quiet = busyhost.wait_for_quiet(HostRule(), 60.0, (1,), heard.append, 2.0, lambda: now[0])
    assert quiet.reasons == () and quiet.waited_s == 6.0
    assert heard[0].startswith("waiting for a quiet host (2 of 60 s): other processes used 66.3%")
    assert "top: pid 4242 hog.py" in heard[0] and len(heard) == 2


def test_the_wait_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    now = fake_reads(monkeypatch, load(66.3))
    heard: list[str] = []
    quiet = busyhost.wait_for_quiet(HostRule(), 7.0, (1,), heard.append, 2.0, lambda: now[0])
    assert quiet.reasons and quiet.waited_s == 8.0  # the read that passed the bound is the last
    assert len(heard) == 3
    # no wait asked: one read, no word
    now = fake_reads(monkeypatch, load(66.3))
    assert busyhost.wait_for_quiet(HostRule(), 0.0, (1,), heard.append, 2.0, lambda: now[0])
    assert len(heard) == 3
    # a wait past the bound is cut to it
    now = fake_reads(monkeypatch, load(66.3))
    quiet = busyhost.wait_for_quiet(HostRule(), 1e12, (1,), None, 1e4, lambda: now[0])
    assert quiet.waited_s <= busyhost.MAX_WAIT_S + 1e4
