"""Host noise: how much of the machine something other than the run (the server and the
harness, and with -n on one host the sibling workers and their servers) used while a session
measured, the load average, throttling where the kernel reports it, the
memory and CPU stalls (Linux PSI) and the server's major page faults."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from ..base.schema import HostNoise

CGROUP_CPU_STAT = Path("/sys/fs/cgroup/cpu.stat")
THERMAL_GLOB = "cpu*/thermal_throttle/core_throttle_count"
CPU_ROOT = Path("/sys/devices/system/cpu")
PRESSURE_ROOT = Path("/proc/pressure")
PSI_RESOURCES = ("memory", "cpu")


@dataclass(frozen=True)
class CpuSample:
    """One reading of the machine's CPU use and of ours."""

    t: float  # time.monotonic()
    busy_s: float  # non-idle CPU seconds since boot, all cores
    ours_s: float  # CPU seconds of the harness and the server process trees
    load: tuple[float, float, float]
    throttle: dict[str, int] = field(default_factory=dict)
    # PSI `some` total stall in microseconds per resource; None: the kernel does not say
    psi_us: dict[str, int | None] = field(default_factory=dict)
    major_faults: int | None = None  # the server process's, since it started


def _tree_cpu_s(pids: Iterable[int]) -> float:
    """CPU seconds of these process trees, their children that have ended and been waited for
    included: a sibling worker's server that stops mid-span is still the run's, not noise."""
    total, seen = 0.0, set()
    for pid in pids:
        try:
            procs = [psutil.Process(pid)]
            procs += procs[0].children(recursive=True)
        except psutil.Error:
            continue
        for p in procs:
            if p.pid in seen:
                continue
            seen.add(p.pid)
            try:
                t = p.cpu_times()
            except psutil.Error:
                continue
            total += t.user + t.system + t.children_user + t.children_system
    return total


def throttle_counters() -> dict[str, int]:
    """cgroup CPU throttling and thermal throttle counts, where the kernel exposes them."""
    out: dict[str, int] = {}
    try:
        for line in CGROUP_CPU_STAT.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key in ("nr_throttled", "throttled_usec"):
                out[f"cgroup_{key}"] = int(value)
    except (OSError, ValueError):
        pass
    thermal = 0
    found = False
    for path in CPU_ROOT.glob(THERMAL_GLOB):
        try:
            thermal += int(path.read_text())
            found = True
        except (OSError, ValueError):
            continue
    if found:
        out["thermal_core_throttle_count"] = thermal
    return out


def pressure_total_us(resource: str, root: Path | None = None) -> int | None:
    """The `some` line's `total=` of /proc/pressure/<resource>: microseconds some task stalled
    on it since boot; None where PSI is missing (not Linux, disabled, a container without it)."""
    try:
        text = ((root or PRESSURE_ROOT) / resource).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind != "some":
            continue
        for item in rest.split():
            key, _, value = item.partition("=")
            if key == "total" and value.isdigit():
                return int(value)
    return None


def major_faults(pid: int) -> int | None:
    """A process's major page faults so far (`majflt`, /proc/<pid>/stat); None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        # after the command in parentheses: state ppid pgrp session tty tpgid flags minflt
        # cminflt majflt
        return int(stat.rsplit(")", 1)[1].split()[9])
    except (OSError, IndexError, ValueError):
        return None


def sample(server_pids: Iterable[int] = (), run_roots: Iterable[int] = ()) -> CpuSample:
    """The machine's busy CPU time, the run's (the harness's and the server's, and the process
    trees of `run_roots`: with -n on one host, the controller's, so the sibling workers and
    their servers are the run, not noise), the load average, the PSI stall totals and the
    (first) server's major page faults."""
    pids = list(server_pids)
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    busy = sum(times) - idle
    ours = _tree_cpu_s([*run_roots, os.getpid(), *pids])
    psi = {r: pressure_total_us(r) for r in PSI_RESOURCES}
    faults = major_faults(pids[0]) if pids else None
    return CpuSample(
        time.monotonic(), busy, ours, os.getloadavg(), throttle_counters(), psi, faults
    )


def stall_pct(start: CpuSample, end: CpuSample, resource: str) -> float | None:
    """The % of the span between two samples some task stalled on `resource` (Linux PSI)."""
    span = max(end.t - start.t, 1e-9)
    a, b = start.psi_us.get(resource), end.psi_us.get(resource)
    if a is None or b is None:
        return None
    return min(100.0 * max(b - a, 0) / (span * 1e6), 100.0)


def others(start: CpuSample, end: CpuSample) -> tuple[float, float]:
    """Other processes' CPU seconds between two samples, and their % of all cores."""
    span = max(end.t - start.t, 1e-9)
    cores = psutil.cpu_count() or 1
    other = max((end.busy_s - start.busy_s) - (end.ours_s - start.ours_s), 0.0)
    # the samples themselves take a moment: clamp the share to what cores can give
    return other, min(100.0 * other / (span * cores), 100.0)


def noise(start: CpuSample, end: CpuSample) -> HostNoise:
    """What others used between two samples: CPU seconds and % of all cores, load, throttling."""
    span = max(end.t - start.t, 1e-9)
    other, other_pct = others(start, end)
    throttled = {
        k: end.throttle[k] - start.throttle.get(k, 0)
        for k in end.throttle
        if end.throttle[k] - start.throttle.get(k, 0)
    }
    not_available: dict[str, str] = {}
    stalls: dict[str, float | None] = {}
    for resource in PSI_RESOURCES:
        stalls[resource] = stall_pct(start, end, resource)
        if stalls[resource] is None:
            not_available[f"{resource}_stall_pct"] = (
                f"not available: no Linux PSI here ({PRESSURE_ROOT / resource} cannot be read)"
            )
    faults = None
    if start.major_faults is not None and end.major_faults is not None:
        faults = max(end.major_faults - start.major_faults, 0)
    else:
        not_available["major_faults"] = (
            "not available: no server process of ours here (/proc/<pid>/stat cannot be read)"
        )
    return {
        "span_s": span,
        "other_cpu_s": other,
        "other_cpu_pct": other_pct,
        "load_avg_start": list(start.load),
        "load_avg_end": list(end.load),
        "throttled": throttled,
        "memory_stall_pct": stalls["memory"],
        "cpu_stall_pct": stalls["cpu"],
        "major_faults": faults,
        "not_available": not_available,
    }


def busy_pct(interval_s: float = 2.0) -> float:
    """How busy the whole machine is now, over a short interval (for preflight)."""
    return float(psutil.cpu_percent(interval=interval_s))


def cpus_allowed(pid: int) -> str | None:
    """The CPU list a process may run on, as the kernel holds it (`/proc/<pid>/status`)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None
