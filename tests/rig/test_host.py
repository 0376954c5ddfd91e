"""Host noise: what others used of the machine, apart from the harness and the server."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from pytest_mtpsweep.rig import hostnoise as host


def spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_our_own_cpu_is_not_others() -> None:
    start = host.sample()
    spin(0.4)
    end = host.sample()
    assert end.ours_s - start.ours_s >= 0.35
    noise = host.noise(start, end)
    # everything busy that was not ours; ours is the spin above
    assert noise["other_cpu_s"] <= (end.busy_s - start.busy_s) - 0.35 + 1e-6


def test_a_process_outside_our_tree_counts_as_other() -> None:
    # setsid + background: the spinner is re-parented away from us, as another job would be.
    out = subprocess.run(
        ["sh", "-c", "setsid sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    spinner = psutil.Process(int(out.stdout.strip()))
    try:
        assert spinner.pid not in {p.pid for p in psutil.Process().children(recursive=True)}
        t0 = spinner.cpu_times()
        start = host.sample()
        time.sleep(1.0)
        end = host.sample()
        t1 = spinner.cpu_times()
    finally:
        spinner.kill()
    spun = (t1.user + t1.system) - (t0.user + t0.system)
    assert spun > 0.2
    noise = host.noise(start, end)
    assert noise["other_cpu_s"] >= 0.8 * spun
    assert 0 <= noise["other_cpu_pct"] <= 100 and len(noise["load_avg_end"]) == 3


def test_noise_arithmetic() -> None:
    a = host.CpuSample(0.0, 100.0, 10.0, (0.1, 0.2, 0.3), {"cgroup_nr_throttled": 5})
    b = host.CpuSample(10.0, 112.0, 14.0, (1.0, 0.5, 0.3), {"cgroup_nr_throttled": 7})
    n = host.noise(a, b)
    assert n["other_cpu_s"] == pytest.approx(8.0)
    cores = psutil.cpu_count() or 1
    assert n["other_cpu_pct"] == pytest.approx(100 * 8.0 / (10.0 * cores))
    assert n["throttled"] == {"cgroup_nr_throttled": 2}


def test_cpus_allowed_of_ourselves() -> None:
    allowed = host.cpus_allowed(psutil.Process().pid)
    assert allowed is not None and allowed[0].isdigit()
    assert host.cpus_allowed(2**22 + 12345) is None


# A stand-in controller: it starts two workers that burn CPU; it waits for the first (so its
# CPU time is the controller's reaped children's) and leaves the second alive until told.
CONTROLLER = """
import subprocess, sys
burn = "import time\\nend = time.process_time() + 0.3\\nwhile time.process_time() < end: pass\\n"
sys.stdin.readline()
subprocess.run([sys.executable, "-c", burn], check=True)
alive = subprocess.Popen([sys.executable, "-c", burn + "import sys; print('done', flush=True); sys.stdin.readline()"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
alive.stdout.readline()
print("burnt", flush=True)
sys.stdin.readline()
alive.communicate("")
"""


def test_the_run_s_process_trees_are_ours_ended_workers_included() -> None:
    # with -n on one host the sibling workers and their servers are the run: their CPU, while
    # they run and after they ended, is never the host's noise
    controller = subprocess.Popen(
        [sys.executable, "-c", CONTROLLER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert controller.stdin is not None and controller.stdout is not None
    try:
        start = host.sample((), [controller.pid])
        controller.stdin.write("go\n")
        controller.stdin.flush()
        assert controller.stdout.readline() == "burnt\n"
        end = host.sample((), [controller.pid])
        # both workers' 0.3 s each, the ended one's too (rusage rounds to clock ticks)
        assert end.ours_s - start.ours_s >= 0.55
    finally:
        controller.stdin.write("end\n")
        controller.stdin.flush()
        controller.wait(60)
