"""Preflight items about the machine: GPU, memory, disk, ports, processes, units."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import psutil

from ..rig.gpu import GpuInfo, NvmlApi, describe_pid, read_gpu, text
from ..rig.hostnoise import busy_pct
from ..rig.net import bind_error
from .items import FAIL, PASS, SKIP, PreflightItem, make_item, nearest_existing, one_line

SYSTEMCTL_TIMEOUT_S = 10.0
# How long host_idle watches the machine before a run: 1 s unless this names another window
# (0.05 to 60 s). The project's own test suite sets 0.1 s: it starts hundreds of runs, each of
# which would otherwise wait a second, and the window is recorded in the item either way.
IDLE_WINDOW_ENV = "MTPSWEEP_HOST_IDLE_S"
IDLE_WINDOW_S = 1.0
IDLE_WINDOW_BOUNDS = (0.05, 60.0)
NO_DRIVER = "skipped: no NVIDIA driver"
# States `systemctl is-active` prints for a unit that is not running (older systemd says
# "unknown" for a unit that does not exist); every other known state means it is running.
_UNIT_STOPPED = frozenset({"inactive", "failed", "unknown"})
_UNIT_RUNNING = frozenset(
    {"active", "activating", "deactivating", "reloading", "refreshing", "maintenance"}
)


# --------------------------------------------------------------------------- GPU


def check_gpu(nvml: NvmlApi | None) -> PreflightItem:
    """GPU name, memory, utilisation and other compute processes, via NVML."""
    expected = "no other compute processes on the GPU"
    if nvml is None:
        return make_item("gpu", expected, "skipped: pynvml is not installed", SKIP)
    try:
        nvml.nvmlInit()
    except nvml.NVMLError:
        return make_item("gpu", expected, NO_DRIVER, SKIP)
    try:
        driver = text(nvml.nvmlSystemGetDriverVersion())
        gpus = [read_gpu(nvml, i) for i in range(nvml.nvmlDeviceGetCount())]
    except nvml.NVMLError as exc:
        return make_item(
            "gpu",
            expected,
            f"NVML query failed: {exc}",
            FAIL,
            fix="Check the GPU with nvidia-smi and restart the driver if it reports an error.",
        )
    finally:
        nvml.nvmlShutdown()
    return _gpu_item(expected, driver, gpus)


def _gpu_item(expected: str, driver: str, gpus: list[GpuInfo]) -> PreflightItem:
    if not gpus:
        return make_item("gpu", expected, f"skipped: driver {driver} sees no GPU", SKIP)
    busy = [gpu for gpu in gpus if gpu.processes]
    observed = "; ".join([f"driver {driver}", *(_describe_gpu(gpu) for gpu in gpus)])
    stable = "; ".join(
        [
            f"driver {driver}",
            *(f"GPU{g.index} {g.name} {g.total_mib} MiB" for g in gpus),
            "other compute processes present" if busy else "no other compute processes",
        ]
    )
    if not busy:
        return make_item("gpu", expected, observed, PASS, stable=stable)
    holders = ", ".join(p for gpu in busy for p in gpu.processes)
    fix = f"Stop the other processes using the GPU ({holders}) before the run."
    return make_item("gpu", expected, observed, FAIL, fix=fix, stable=stable)


def _describe_gpu(gpu: GpuInfo) -> str:
    util = "n/a" if gpu.util_pct is None else f"{gpu.util_pct}%"
    procs = ", ".join(gpu.processes) if gpu.processes else "none"
    return (
        f"GPU{gpu.index} {gpu.name}: {gpu.used_mib}/{gpu.total_mib} MiB used, "
        f"util {util}, compute processes: {procs}"
    )


# --------------------------------------------------------------------------- host


def check_ram(floor_gb: float | None) -> PreflightItem:
    """Available host memory against the floor."""
    memory = psutil.virtual_memory()
    return _floor_item(
        "ram",
        floor_gb,
        free=memory.available,
        total=memory.total,
        observed=f"{_gb(memory.available)} available of {_gb(memory.total)}",
        fix=lambda gb: f"Free host memory until {gb:g} GB are available, or lower the RAM floor.",
    )


def check_disk(run_dir: Path, floor_gb: float | None, need_bytes: int = 0) -> PreflightItem:
    """Free space on the file system that will hold the run directory: the floor, and room
    for what the run is expected to write (records, server logs, analysis)."""
    where = nearest_existing(run_dir)
    usage = psutil.disk_usage(str(where))
    observed = f"{_gb(usage.free)} free at {where} (of {_gb(usage.total)})"
    if need_bytes and usage.free < need_bytes:
        floor = f">= {floor_gb:g} GB; " if floor_gb is not None else ""
        return make_item(
            "disk",
            f"{floor}room for the run (~{_mb(need_bytes)})",
            observed,
            FAIL,
            fix=f"Free at least {_mb(need_bytes)} at {where}, or pass --run-dir on a disk with "
            "room; a full disk mid-run stops it.",
            stable=f"{_gb(usage.total)} total; no room for the run",
        )
    item = _floor_item(
        "disk",
        floor_gb,
        free=usage.free,
        total=usage.total,
        observed=observed,
        fix=lambda gb: f"Free space at {where} until {gb:g} GB are free, or lower the disk floor.",
    )
    if need_bytes:
        item = replace(item, expected=f"{item.expected}; room for the run (~{_mb(need_bytes)})")
    return item


def _mb(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:.1f} MB"


def _floor_item(
    name: str,
    floor_gb: float | None,
    *,
    free: int,
    total: int,
    observed: str,
    fix: Callable[[float], str],
) -> PreflightItem:
    # Free space moves from run to run; the machine's size and meeting the floor do not.
    if floor_gb is None:
        return make_item(name, "no floor", observed, PASS, stable=f"{_gb(total)} total; no floor")
    ok = free >= floor_gb * 1e9
    state = "floor met" if ok else "below floor"
    return make_item(
        name,
        f">= {floor_gb:g} GB",
        observed,
        PASS if ok else FAIL,
        fix="" if ok else fix(floor_gb),
        stable=f"{_gb(total)} total; {state}",
    )


def _gb(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:.1f} GB"


# --------------------------------------------------------------------------- ports


def check_ports(host: str, ports: Sequence[int]) -> PreflightItem:
    """Every port the ladder will bind can actually be bound now."""
    wanted = list(dict.fromkeys(ports))
    if not wanted:
        # A free port per session: the host must still resolve and take a listener.
        err = bind_error(host, 0)
        if err is None:
            return make_item("ports", "any free port", f"{host} can listen", PASS)
        fix = f"Set server.host to an address of this machine (e.g. 127.0.0.1), not {host}."
        return make_item("ports", "any free port", f"{host}: {err}", FAIL, fix=fix)
    expected = f"free on {host}: {', '.join(map(str, wanted))}"
    problems = [(port, err) for port in wanted if (err := bind_error(host, port)) is not None]
    if not problems:
        return make_item("ports", expected, "all free", PASS)
    observed = "; ".join(f"{port}: {err}{_port_owner(port)}" for port, err in problems)
    busy = ", ".join(str(port) for port, _ in problems)
    fix = f"Stop whatever holds port {busy} on {host}, or give the ladder other ports."
    return make_item("ports", expected, observed, FAIL, fix=fix)


def _port_owner(port: int) -> str:
    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.Error:
        return ""
    pids = sorted({c.pid for c in conns if c.laddr and c.laddr.port == port and c.pid})
    if not pids:
        # No visible owner: another user's socket we may not inspect, or a connection that
        # closed moments ago and lingers in TIME_WAIT for up to a minute.
        return " (no owner visible: another user's process, or a just-closed connection)"
    return f" (held by {', '.join(describe_pid(pid) for pid in pids)})"


# --------------------------------------------------------------------------- processes


def check_server_processes(
    server_bin: Path | None, leftovers: Sequence[tuple[Path, str]] = ()
) -> PreflightItem:
    """No process already runs the configured server executable (exact match, not cmdline),
    and no server an earlier run listed in its servers/live.json still runs."""
    if leftovers:
        runs = sorted({str(run) for run, _ in leftovers})
        return make_item(
            "server_processes",
            "no server left by an earlier run",
            "left running: " + "; ".join(f"{what} of {run.name}" for run, what in leftovers),
            FAIL,
            fix=" and ".join(f"mtpsweep cleanup {run}" for run in runs)
            + " (runs each stop script and stops what the run started).",
        )
    if server_bin is None:
        return make_item(
            "server_processes", "no server left by an earlier run", "none left running", PASS
        )
    target = os.path.realpath(server_bin)
    expected = f"no process running {target}"
    pids = _pids_running(target, _is_script(Path(target)))
    if not pids:
        return make_item("server_processes", expected, "none running", PASS)
    return make_item(
        "server_processes",
        expected,
        "running: " + ", ".join(describe_pid(pid) for pid in pids),
        FAIL,
        fix=f"Stop the server that is already running (kill {' '.join(map(str, pids))}).",
    )


def _pids_running(target: str, script: bool) -> list[int]:
    pids: list[int] = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            if _runs(proc, target, script):
                pids.append(proc.pid)
        except psutil.Error:
            # Gone, or not ours to inspect: neither can be the server we are about to start.
            continue
    return pids


def _runs(proc: psutil.Process, target: str, script: bool) -> bool:
    exe = proc.exe()
    if exe and os.path.realpath(exe) == target:
        return True
    if not script:
        return False
    # A script runs as its interpreter; the kernel puts the script's path at argv[1] (or
    # argv[2] after one interpreter option). Compare those whole arguments only, so a shell
    # whose command text merely mentions the path never matches.
    args = proc.cmdline()[1:3]
    return any(os.path.isabs(arg) and os.path.realpath(arg) == target for arg in args)


def _is_script(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(2) == b"#!"
    except OSError:
        return False


def check_inactive_processes(names: Sequence[str]) -> PreflightItem:
    """None of the listed process names runs (exact name or executable basename)."""
    if not names:
        return make_item("inactive_processes", "none listed", "none listed", PASS)
    expected = f"not running: {', '.join(names)}"
    found = _running_by_name(frozenset(names))
    if not found:
        return make_item("inactive_processes", expected, "none running", PASS)
    observed = "; ".join(f"{name} (pid {', '.join(map(str, pids))})" for name, pids in found)
    listed = ", ".join(name for name, _ in found)
    return make_item(
        "inactive_processes",
        expected,
        "running: " + observed,
        FAIL,
        fix=f"Stop {listed} before the run, or drop it from the must-be-inactive list.",
    )


def _running_by_name(wanted: frozenset[str]) -> list[tuple[str, list[int]]]:
    found: dict[str, list[int]] = {}
    for proc in psutil.process_iter(["name", "exe"]):
        if proc.pid == os.getpid():
            continue
        name, exe = proc.info["name"], proc.info["exe"]
        for hit in {name, os.path.basename(exe) if exe else None} & wanted:
            found.setdefault(str(hit), []).append(proc.pid)
    return sorted(found.items())


def check_inactive_units(units: Sequence[str]) -> PreflightItem:
    """None of the listed systemd units is active."""
    if not units:
        return make_item("inactive_units", "none listed", "none listed", PASS)
    expected = f"inactive: {', '.join(units)}"
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return make_item("inactive_units", expected, "skipped: systemctl not found", SKIP)
    states = {unit: _unit_state(systemctl, unit) for unit in units}
    running = [unit for unit, state in states.items() if state in _UNIT_RUNNING]
    observed = "; ".join(f"{unit} {state}" for unit, state in states.items())
    if running:
        fix = f"Stop {', '.join(running)} (systemctl stop) before the run."
        return make_item("inactive_units", expected, observed, FAIL, fix=fix)
    unknown = [state for state in states.values() if state not in _UNIT_STOPPED]
    if unknown:
        return make_item("inactive_units", expected, f"skipped: {unknown[0]}", SKIP)
    return make_item("inactive_units", expected, observed, PASS)


def _unit_state(systemctl: str, unit: str) -> str:
    try:
        done = subprocess.run(
            [systemctl, "is-active", "--", unit],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=SYSTEMCTL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"systemctl could not query {unit}: {exc}"
    state = done.stdout.strip()
    if state in _UNIT_STOPPED | _UNIT_RUNNING:
        return state
    reason = one_line(done.stderr) or f"unrecognised answer {state!r}"
    return f"systemctl could not query {unit}: {reason}"


def idle_window_s(environ: Mapping[str, str] = os.environ) -> float | str:
    """The seconds host_idle watches the host, or why MTPSWEEP_HOST_IDLE_S cannot say."""
    text = environ.get(IDLE_WINDOW_ENV)
    if text is None:
        return IDLE_WINDOW_S
    low, high = IDLE_WINDOW_BOUNDS
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if low <= value <= high:  # NaN fails both
        return value
    return f"{IDLE_WINDOW_ENV}={text[:40]!r} is not a number of seconds from {low:g} to {high:g}"


def check_host_idle(floor_pct: float | None, interval_s: float | None = None) -> PreflightItem:
    """How busy the machine is before anything starts (another job would skew every rate)."""

    window = idle_window_s() if interval_s is None else interval_s
    if isinstance(window, str):
        fix = f"Set {IDLE_WINDOW_ENV} to seconds from 0.05 to 60, or unset it for 1 s."
        return make_item("host_idle", "a window to watch", window, FAIL, fix=fix)
    interval_s = window
    busy = busy_pct(interval_s)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    observed = f"{busy:.0f}% busy over {interval_s:g} s; load average {load}"
    if floor_pct is None:
        return make_item("host_idle", "recorded (no floor)", observed, PASS, stable="no floor")
    ok = busy <= floor_pct
    fix = f"Wait until other jobs finish (the machine is {busy:.0f}% busy), or raise host_idle_pct."
    return make_item(
        "host_idle",
        f"<= {floor_pct:g}% busy",
        observed,
        PASS if ok else FAIL,
        fix="" if ok else fix,
        stable="floor met" if ok else "busy",
    )
