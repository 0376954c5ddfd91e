"""Session-scoped checks that run once, before any server starts.

Every item records what was expected, what was observed and a verdict (pass, fail, skip or
waived). A failing item stops the run unless the user waives it by name.

Comparison with an earlier run (``against``) compares each item's stable part: the whole
observed value for most items; for ``ram`` and ``disk`` only the total size and whether the
floor was met; for ``gpu`` only the driver, device names, total memory and whether other compute
processes were present; ``run_dir`` is never compared (``same_as_against`` stays None), since
every run has a directory of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import psutil

PASS = "pass"
FAIL = "fail"
SKIP = "skip"
WAIVED = "waived"
VERDICTS = frozenset({PASS, FAIL, SKIP, WAIVED})

VERSION_TIMEOUT_S = 30.0
SYSTEMCTL_TIMEOUT_S = 10.0
GIT_TIMEOUT_S = 30.0
NO_DRIVER = "skipped: no NVIDIA driver"

_NEVER_COMPARED = frozenset({"run_dir"})
_CACHE_FORMAT = 1
# States `systemctl is-active` prints for a unit that is not running (older systemd says
# "unknown" for a unit that does not exist); every other known state means it is running.
_UNIT_STOPPED = frozenset({"inactive", "failed", "unknown"})
_UNIT_RUNNING = frozenset(
    {"active", "activating", "deactivating", "reloading", "refreshing", "maintenance"}
)


class PreflightError(Exception):
    """Preflight cannot run as asked (unknown waiver, unreadable earlier run)."""


@dataclass(frozen=True)
class PreflightInputs:
    """Everything preflight checks; paths are as configured, resolved where needed."""

    run_dir: Path
    server_bin: Path | None
    expected_build: str | None
    ports: tuple[int, ...]
    host: str
    model_files: tuple[Path, ...]
    ram_floor_gb: float | None
    disk_floor_gb: float | None
    must_be_inactive_processes: tuple[str, ...]
    must_be_inactive_units: tuple[str, ...]
    launchers: dict[str, tuple[Path, str | None]]
    experiments_dir: Path
    ladder_file: Path
    prompt_set_digest: str
    package_version: str


@dataclass(frozen=True)
class PreflightItem:
    """One row of the preflight table.

    ``stable`` is the part of ``observed`` compared with an earlier run (None: all of it).
    """

    name: str
    expected: str
    observed: str
    verdict: str
    fix: str = ""
    same_as_against: bool | None = None
    stable: str | None = None


@dataclass(frozen=True)
class ServerVersion:
    """What ``llama-server --version`` says about itself."""

    line: str
    version: str
    build: str | None
    commit: str | None

    @property
    def identity(self) -> str:
        """Release-tag style identity, e.g. ``b11434-515e85511``."""
        if self.build and self.commit:
            return f"b{self.build}-{self.commit}"
        return self.commit or self.build or self.version


class NvmlApi(Protocol):
    """The part of pynvml that the GPU check uses."""

    @property
    def NVMLError(self) -> type[Exception]: ...

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlSystemGetDriverVersion(self) -> str | bytes: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetName(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...
    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any: ...
    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]: ...


# --------------------------------------------------------------------------- running it


def run_preflight(
    inputs: PreflightInputs,
    *,
    waive: frozenset[str] = frozenset(),
    against: Path | None = None,
    verify_digests: bool = False,
    digest_cache: Path | None = None,
) -> list[PreflightItem]:
    """Run every check; ``digest_cache`` None means ``default_digest_cache()``."""
    _check_waivers(waive, item_names(inputs))
    # Read the earlier run first so a bad --against fails before any model is hashed.
    earlier = load_preflight_json(against / "preflight.json") if against is not None else None
    cache = digest_cache if digest_cache is not None else default_digest_cache()
    items = [
        check_gpu(_load_nvml()),
        check_ram(inputs.ram_floor_gb),
        check_disk(inputs.run_dir, inputs.disk_floor_gb),
        check_ports(inputs.host, inputs.ports),
        check_server_processes(inputs.server_bin),
        check_inactive_processes(inputs.must_be_inactive_processes),
        check_inactive_units(inputs.must_be_inactive_units),
        *check_models(inputs.model_files, cache=cache, verify=verify_digests),
        check_server_version(inputs.server_bin, inputs.expected_build),
        *check_launchers(inputs.launchers),
        check_harness(inputs.package_version, inputs.experiments_dir),
        check_prompt_set(inputs.prompt_set_digest),
        check_ladder_file(inputs.ladder_file),
        check_run_dir(inputs.run_dir),
    ]
    items = [_waived(item, waive) for item in items]
    return compare_items(items, earlier) if earlier is not None else items


def item_names(inputs: PreflightInputs) -> list[str]:
    """The item names a run with these inputs produces, in table order."""
    return [
        "gpu",
        "ram",
        "disk",
        "ports",
        "server_processes",
        "inactive_processes",
        "inactive_units",
        *(_model_names(inputs.model_files)),
        "server_version",
        *(f"launcher:{name}" for name in inputs.launchers),
        "harness",
        "prompt_set",
        "ladder_file",
        "run_dir",
    ]


def failures(items: Iterable[PreflightItem]) -> list[PreflightItem]:
    """Items that stop the run (waived ones do not)."""
    return [item for item in items if item.verdict == FAIL]


def compare_items(
    items: Sequence[PreflightItem], earlier: Sequence[PreflightItem]
) -> list[PreflightItem]:
    """Set ``same_as_against`` on each item from the earlier run's item of the same name."""
    by_name = {item.name: item for item in earlier}
    return [replace(item, same_as_against=_same(item, by_name.get(item.name))) for item in items]


def _same(item: PreflightItem, old: PreflightItem | None) -> bool | None:
    if item.name in _NEVER_COMPARED:
        return None
    if old is None:
        return False
    return _stable_part(item) == _stable_part(old)


def _stable_part(item: PreflightItem) -> str:
    return item.observed if item.stable is None else item.stable


def _check_waivers(waive: frozenset[str], names: Sequence[str]) -> None:
    unknown = sorted(waive - set(names))
    if unknown:
        raise PreflightError(
            f"--waive names no preflight item: {', '.join(unknown)}; "
            f"use one of: {', '.join(names)}."
        )


def _waived(item: PreflightItem, waive: frozenset[str]) -> PreflightItem:
    if item.verdict == FAIL and item.name in waive:
        return replace(item, verdict=WAIVED)
    return item


def _item(name: str, expected: str, observed: str, verdict: str, **kw: Any) -> PreflightItem:
    # Table cells are one line; subprocess output may carry newlines.
    return PreflightItem(name, expected, _one_line(observed), verdict, **kw)


def _one_line(text: str) -> str:
    return " / ".join(part.strip() for part in text.strip().splitlines() if part.strip())


# --------------------------------------------------------------------------- GPU


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as NVML reports it."""

    index: int
    name: str
    used_mib: int
    total_mib: int
    util_pct: int | None
    processes: tuple[str, ...]


def _load_nvml() -> NvmlApi | None:
    try:
        import pynvml
    except ImportError:
        return None
    nvml: NvmlApi = pynvml
    return nvml


def check_gpu(nvml: NvmlApi | None) -> PreflightItem:
    """GPU name, memory, utilisation and other compute processes, via NVML."""
    expected = "no other compute processes on the GPU"
    if nvml is None:
        return _item("gpu", expected, "skipped: pynvml is not installed", SKIP)
    try:
        nvml.nvmlInit()
    except nvml.NVMLError:
        return _item("gpu", expected, NO_DRIVER, SKIP)
    try:
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        gpus = [_read_gpu(nvml, i) for i in range(nvml.nvmlDeviceGetCount())]
    except nvml.NVMLError as exc:
        return _item(
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
        return _item("gpu", expected, f"skipped: driver {driver} sees no GPU", SKIP)
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
        return _item("gpu", expected, observed, PASS, stable=stable)
    holders = ", ".join(p for gpu in busy for p in gpu.processes)
    fix = f"Stop the other processes using the GPU ({holders}) before the run."
    return _item("gpu", expected, observed, FAIL, fix=fix, stable=stable)


def _read_gpu(nvml: NvmlApi, index: int) -> GpuInfo:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    return GpuInfo(
        index=index,
        name=_text(nvml.nvmlDeviceGetName(handle)),
        used_mib=int(memory.used) // 2**20,
        total_mib=int(memory.total) // 2**20,
        util_pct=_gpu_util(nvml, handle),
        processes=tuple(
            _describe_pid(int(p.pid))
            for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            if int(p.pid) != os.getpid()
        ),
    )


def _gpu_util(nvml: NvmlApi, handle: Any) -> int | None:
    # Some boards do not report utilisation; that alone is no reason to stop a run.
    try:
        return int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
    except nvml.NVMLError:
        return None


def _describe_gpu(gpu: GpuInfo) -> str:
    util = "n/a" if gpu.util_pct is None else f"{gpu.util_pct}%"
    procs = ", ".join(gpu.processes) if gpu.processes else "none"
    return (
        f"GPU{gpu.index} {gpu.name}: {gpu.used_mib}/{gpu.total_mib} MiB used, "
        f"util {util}, compute processes: {procs}"
    )


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _describe_pid(pid: int) -> str:
    try:
        return f"pid {pid} ({psutil.Process(pid).name()})"
    except psutil.Error:
        return f"pid {pid}"


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


def check_disk(run_dir: Path, floor_gb: float | None) -> PreflightItem:
    """Free space on the file system that will hold the run directory."""
    where = _nearest_existing(run_dir)
    usage = psutil.disk_usage(str(where))
    return _floor_item(
        "disk",
        floor_gb,
        free=usage.free,
        total=usage.total,
        observed=f"{_gb(usage.free)} free at {where} (of {_gb(usage.total)})",
        fix=lambda gb: f"Free space at {where} until {gb:g} GB are free, or lower the disk floor.",
    )


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
        return _item(name, "no floor", observed, PASS, stable=f"{_gb(total)} total; no floor")
    ok = free >= floor_gb * 1e9
    state = "floor met" if ok else "below floor"
    return _item(
        name,
        f">= {floor_gb:g} GB",
        observed,
        PASS if ok else FAIL,
        fix="" if ok else fix(floor_gb),
        stable=f"{_gb(total)} total; {state}",
    )


def _gb(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:.1f} GB"


def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


# --------------------------------------------------------------------------- ports


def check_ports(host: str, ports: Sequence[int]) -> PreflightItem:
    """Every port the ladder will bind can actually be bound now."""
    wanted = list(dict.fromkeys(ports))
    expected = f"free on {host}: {', '.join(map(str, wanted))}" if wanted else "no ports"
    problems = [(port, err) for port in wanted if (err := _bind_error(host, port)) is not None]
    if not problems:
        return _item("ports", expected, "all free" if wanted else "none to check", PASS)
    observed = "; ".join(f"{port}: {err}{_port_owner(port)}" for port, err in problems)
    busy = ", ".join(str(port) for port, _ in problems)
    fix = f"Stop whatever holds port {busy} on {host}, or give the ladder other ports."
    return _item("ports", expected, observed, FAIL, fix=fix)


def _bind_error(host: str, port: int) -> str | None:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        return f"cannot resolve {host}: {exc.strerror}"
    with socket.socket(family, kind, proto) as sock:
        # llama-server (cpp-httplib) binds with SO_REUSEADDR, so only a listener stops it; a
        # TIME_WAIT socket left by the previous run's last connection must not fail preflight.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


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
    return f" (held by {', '.join(_describe_pid(pid) for pid in pids)})"


# --------------------------------------------------------------------------- processes


def check_server_processes(server_bin: Path | None) -> PreflightItem:
    """No process already runs the configured server executable (exact match, not cmdline)."""
    if server_bin is None:
        return _item("server_processes", "none", "skipped: external launcher", SKIP)
    target = os.path.realpath(server_bin)
    expected = f"no process running {target}"
    pids = _pids_running(target, _is_script(Path(target)))
    if not pids:
        return _item("server_processes", expected, "none running", PASS)
    return _item(
        "server_processes",
        expected,
        "running: " + ", ".join(_describe_pid(pid) for pid in pids),
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
        return _item("inactive_processes", "none listed", "none listed", PASS)
    expected = f"not running: {', '.join(names)}"
    found = _running_by_name(frozenset(names))
    if not found:
        return _item("inactive_processes", expected, "none running", PASS)
    observed = "; ".join(f"{name} (pid {', '.join(map(str, pids))})" for name, pids in found)
    listed = ", ".join(name for name, _ in found)
    return _item(
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
        return _item("inactive_units", "none listed", "none listed", PASS)
    expected = f"inactive: {', '.join(units)}"
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return _item("inactive_units", expected, "skipped: systemctl not found", SKIP)
    states = {unit: _unit_state(systemctl, unit) for unit in units}
    running = [unit for unit, state in states.items() if state in _UNIT_RUNNING]
    observed = "; ".join(f"{unit} {state}" for unit, state in states.items())
    if running:
        fix = f"Stop {', '.join(running)} (systemctl stop) before the run."
        return _item("inactive_units", expected, observed, FAIL, fix=fix)
    unknown = [state for state in states.values() if state not in _UNIT_STOPPED]
    if unknown:
        return _item("inactive_units", expected, f"skipped: {unknown[0]}", SKIP)
    return _item("inactive_units", expected, observed, PASS)


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
    reason = _one_line(done.stderr) or f"unrecognised answer {state!r}"
    return f"systemctl could not query {unit}: {reason}"


# --------------------------------------------------------------------------- files


def check_models(
    paths: Sequence[Path], *, cache: Path | None, verify: bool = False
) -> list[PreflightItem]:
    """Size, mtime and sha256 of each model file, one item each."""
    unique = list(dict.fromkeys(paths))
    return [
        _model_item(name, path, cache, verify)
        for name, path in zip(_model_names(unique), unique, strict=True)
    ]


def _model_names(paths: Sequence[Path]) -> list[str]:
    unique = list(dict.fromkeys(paths))
    # Two files of the same name in different folders would share a waiver name otherwise.
    counts = Counter(path.name for path in unique)
    return [f"model:{p.name}" if counts[p.name] == 1 else f"model:{p}" for p in unique]


def _model_item(name: str, path: Path, cache: Path | None, verify: bool) -> PreflightItem:
    expected = "readable file; size, mtime, sha256 recorded"
    if not path.is_file():
        fix = f"Put the model file at {path}, or correct the model path in the ladder."
        return _item(name, expected, f"missing: {path}", FAIL, fix=fix)
    try:
        info = path.stat()
        digest = file_digest(path, cache=cache, verify=verify)
    except OSError as exc:
        fix = f"Make {path} readable by this user."
        return _item(name, expected, f"unreadable: {path}: {exc.strerror}", FAIL, fix=fix)
    observed = f"{info.st_size:,} bytes, mtime {_iso_utc(info.st_mtime_ns)}, sha256 {digest}"
    return _item(name, expected, observed, PASS)


def _iso_utc(mtime_ns: int) -> str:
    # Microseconds, so a touch within the same second still reads as a change.
    stamp = datetime.fromtimestamp(mtime_ns // 10**9, UTC).replace(
        microsecond=(mtime_ns // 1000) % 10**6
    )
    return stamp.isoformat(timespec="microseconds").replace("+00:00", "Z")


def check_launchers(launchers: dict[str, tuple[Path, str | None]]) -> list[PreflightItem]:
    """Each launcher script's sha256 against its pinned digest, one item each."""
    return [_launcher_item(name, path, pin) for name, (path, pin) in launchers.items()]


def _launcher_item(name: str, path: Path, pin: str | None) -> PreflightItem:
    item_name = f"launcher:{name}"
    expected = f"sha256 {pin}" if pin else "any (no pinned sha256)"
    if not path.is_file():
        fix = f"Put launcher {name} back at {path}, or correct its path."
        return _item(item_name, expected, f"missing: {path}", FAIL, fix=fix)
    digest = file_digest(path, cache=None)
    observed = f"sha256 {digest}"
    if pin is None or pin.strip().lower() == digest:
        return _item(item_name, expected, observed, PASS)
    fix = (
        f"Restore {path} to the pinned version, or pin sha256 {digest} if the change is deliberate."
    )
    return _item(item_name, expected, observed, FAIL, fix=fix)


def check_ladder_file(path: Path) -> PreflightItem:
    """The ladder definition's sha256."""
    expected = "readable ladder file"
    if not path.is_file():
        fix = f"Create the ladder at {path}, or name an existing ladder."
        return _item("ladder_file", expected, f"missing: {path}", FAIL, fix=fix)
    digest = file_digest(path, cache=None)
    return _item("ladder_file", expected, f"{path}: sha256 {digest}", PASS, stable=digest)


def check_prompt_set(digest: str) -> PreflightItem:
    """The prompt set's digest, recorded for comparison."""
    return _item("prompt_set", "recorded", f"digest {digest}" if digest else "no digest", PASS)


def check_run_dir(run_dir: Path) -> PreflightItem:
    """The run directory does not exist yet and can be created."""
    expected = "does not exist yet"
    if run_dir.exists() or run_dir.is_symlink():
        fix = f"Choose a new run id or move {run_dir} away; a run directory is never reused."
        return _item("run_dir", expected, f"exists: {run_dir}", FAIL, fix=fix)
    parent = _nearest_existing(run_dir)
    if not os.access(parent, os.W_OK | os.X_OK):
        fix = f"Make {parent} writable, or put the runs somewhere writable."
        return _item("run_dir", expected, f"cannot create under {parent}", FAIL, fix=fix)
    return _item("run_dir", expected, f"new: {run_dir}", PASS)


# --------------------------------------------------------------------------- server version


def parse_server_version(text: str) -> ServerVersion | None:
    """Parse ``--version`` output (either the build/commit form or the older ``N (hash)``)."""
    match = re.search(r"^\s*version:\s*(\S+)\s*\(([^)]*)\)", text, re.MULTILINE)
    if match is None:
        return None
    version, inner = match.group(1), match.group(2).strip()
    line = match.group(0).strip()
    fields = dict(re.findall(r"\b(build|commit)\s+([^\s,]+)", inner))
    if fields:
        return ServerVersion(line, version, fields.get("build"), fields.get("commit"))
    # The older form prints the build number where the version goes, the commit in brackets.
    build = version if version.isdigit() else None
    return ServerVersion(line, version, build, inner or None)


def build_matches(version: ServerVersion, expected: str) -> bool:
    """Whether ``expected`` names this build: build number, commit, or ``b<build>-<commit>``.

    Whole tokens only (``1`` does not match build ``11434``); commits match when one hash is
    a prefix of the other and both have at least 7 hex digits (short versus full hash).
    """
    want = expected.strip().lower()
    tagged = re.fullmatch(r"b?(\d+)-([0-9a-f]+)", want)
    if tagged:
        return tagged.group(1) == version.build and _commit_matches(version, tagged.group(2))
    by_build = re.fullmatch(r"b?(\d+)", want) is not None and want.lstrip("b") == version.build
    return by_build or _commit_matches(version, want)


def _commit_matches(version: ServerVersion, want: str) -> bool:
    have = (version.commit or "").lower()
    if min(len(have), len(want)) < 7 or not re.fullmatch(r"[0-9a-f]+", want):
        return False
    return have.startswith(want) or want.startswith(have)


def check_server_version(server_bin: Path | None, expected_build: str | None) -> PreflightItem:
    """``server_bin --version`` parses and names the expected build."""
    expected = f"build {expected_build}" if expected_build else "any build (none pinned)"
    if server_bin is None:
        return _item("server_version", expected, "skipped: external launcher", SKIP)
    problem = _unrunnable(server_bin)
    if problem is not None:
        fix = f"Build or install llama-server at {server_bin}, or point the run at the right one."
        return _item("server_version", expected, problem, FAIL, fix=fix)
    output = _version_output(server_bin)
    version = parse_server_version(output)
    if version is None:
        fix = f"Check that {server_bin} is llama-server (it should print 'version: ...')."
        observed = f"unrecognised --version output: {output[:200]}"
        return _item("server_version", expected, observed, FAIL, fix=fix)
    if expected_build and not build_matches(version, expected_build):
        fix = (
            f"Install build {expected_build} at {server_bin}, or set the expected build "
            f"to {version.commit or version.identity} if this build is the one you mean."
        )
        return _item("server_version", expected, version.line, FAIL, fix=fix)
    return _item("server_version", expected, version.line, PASS)


def _unrunnable(server_bin: Path) -> str | None:
    if not server_bin.is_file():
        return f"missing: {server_bin}"
    if not os.access(server_bin, os.X_OK):
        return f"not executable: {server_bin}"
    return None


def _version_output(server_bin: Path) -> str:
    try:
        done = subprocess.run(
            [str(server_bin), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=VERSION_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"no answer within {VERSION_TIMEOUT_S:g} s"
    except OSError as exc:
        return f"could not run it: {exc.strerror}"
    # llama-server prints its version to stderr; read stdout too in case a build changes that.
    return f"{done.stderr}\n{done.stdout}".strip()


# --------------------------------------------------------------------------- harness


def check_harness(package_version: str, experiments_dir: Path) -> PreflightItem:
    """Package version plus the experiments directory's git commit and dirty flag."""
    observed = f"pytest-mtpsweep {package_version}; experiments {_git_state(experiments_dir)}"
    return _item("harness", "recorded", observed, PASS)


def _git_state(directory: Path) -> str:
    if not directory.is_dir():
        return f"directory missing: {directory}"
    inside = _git(directory, "rev-parse", "--is-inside-work-tree")
    if inside is None:
        return "git not found"
    if inside.returncode != 0:
        if "not a git repository" in inside.stderr:
            return "not a git repository"
        return f"git failed: {_one_line(inside.stderr)}"
    head = _git(directory, "rev-parse", "--verify", "--quiet", "HEAD")
    if head is None or head.returncode != 0:
        return "no commits yet"
    status = _git(directory, "status", "--porcelain", "--", ".")
    dirty = status is None or status.returncode != 0 or bool(status.stdout.strip())
    return f"commit {head.stdout.strip()} ({'dirty' if dirty else 'clean'})"


def _git(directory: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    git = shutil.which("git")
    if git is None:
        return None
    # LC_ALL=C keeps the messages we match on in English; GIT_OPTIONAL_LOCKS=0 stops
    # `git status` from rewriting the index of a repository someone else is working in.
    env = {**os.environ, "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}
    try:
        return subprocess.run(
            [git, "-C", str(directory), *args],
            capture_output=True,
            text=True,
            errors="replace",
            env=env,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


# --------------------------------------------------------------------------- digests


def default_digest_cache() -> Path:
    """Where model digests are cached: ``$XDG_CACHE_HOME`` (or ``~/.cache``)/pytest-mtpsweep."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "pytest-mtpsweep" / "digests.json"


def file_digest(path: Path, *, cache: Path | None, verify: bool = False) -> str:
    """sha256 of a file, reused from ``cache`` while (realpath, size, mtime_ns, inode) hold.

    ``cache`` None hashes every time; ``verify`` re-hashes and refreshes the cache entry.
    """
    real = os.path.realpath(path)
    before = _stat_key(real)
    if cache is not None and not verify:
        entry = _read_cache(cache).get(real)
        if isinstance(entry, dict) and _key_of(entry) == before:
            return str(entry["sha256"])
    digest = _sha256_file(real)
    # A file written to while we hashed it would cache a digest of neither version.
    if cache is not None and _stat_key(real) == before:
        _write_cache_entry(cache, real, before, digest)
    return digest


def _sha256_file(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _stat_key(path: str) -> tuple[int, int, int]:
    info = os.stat(path)
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def _key_of(entry: dict[str, Any]) -> tuple[Any, Any, Any]:
    return (entry.get("size"), entry.get("mtime_ns"), entry.get("inode"))


def _read_cache(cache: Path) -> dict[str, Any]:
    # The cache only saves time: an unreadable or foreign file is treated as empty.
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != _CACHE_FORMAT:
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _write_cache_entry(cache: Path, real: str, key: tuple[int, int, int], digest: str) -> None:
    # Re-read just before writing so entries added by a concurrent session survive; drop
    # entries for files that no longer exist so the cache does not grow forever.
    files = {k: v for k, v in _read_cache(cache).items() if os.path.exists(k)}
    size, mtime_ns, inode = key
    files[real] = {"size": size, "mtime_ns": mtime_ns, "inode": inode, "sha256": digest}
    try:
        _atomic_write(cache, json.dumps({"format": _CACHE_FORMAT, "files": files}, indent=1))
    except OSError as exc:
        warnings.warn(
            f"cannot write the digest cache {cache}: {exc.strerror}; models will be re-hashed "
            "next run, so make that folder writable.",
            stacklevel=2,
        )


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", delete=False
    ) as handle:
        handle.write(text)
    os.replace(handle.name, path)


# --------------------------------------------------------------------------- output


def render_table(items: Sequence[PreflightItem], *, against_label: str = "against") -> str:
    """Aligned plain-text table; a "same as" column appears when items were compared."""
    header = ["item", "expected", "observed", "verdict"]
    compared = any(item.same_as_against is not None for item in items)
    if compared:
        header.append(f"same as {against_label}")
    rows = [header]
    for item in items:
        row = [item.name, item.expected, item.observed, item.verdict]
        if compared:
            row.append(_yes_no(item.same_as_against))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def render_fixes(items: Sequence[PreflightItem]) -> str:
    """One line per failing item: its fix, and how to waive it instead."""
    return "\n".join(
        f"{item.name}: {item.fix} (Or waive it: --waive {item.name}.)" for item in failures(items)
    )


def write_preflight_json(items: Sequence[PreflightItem], path: Path) -> None:
    """Write the items as a JSON list; refuses to replace an existing file."""
    text = json.dumps([asdict(item) for item in items], indent=2) + "\n"
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise PreflightError(
            f"{path} already exists; a run's preflight record is never overwritten, "
            "so start a new run directory."
        ) from None


def load_preflight_json(path: Path) -> list[PreflightItem]:
    """Read a preflight.json written by ``write_preflight_json``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PreflightError(
            f"cannot read {path} ({exc.strerror}); name a run directory that holds preflight.json."
        ) from None
    except ValueError as exc:
        raise PreflightError(f"{path} is not valid JSON ({exc}); name another run.") from None
    if not isinstance(data, list):
        raise PreflightError(f"{path} holds no list of items; name another run's directory.")
    return [_item_from_json(entry, path) for entry in data]


def _item_from_json(entry: object, path: Path) -> PreflightItem:
    keys = ("name", "expected", "observed", "verdict")
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in keys):
        raise PreflightError(
            f"{path} has an item without string {', '.join(keys)}; name another run's directory."
        )
    if entry["verdict"] not in VERDICTS:
        raise PreflightError(
            f"{path} item {entry['name']} has unknown verdict {entry['verdict']!r}; "
            "name another run's directory."
        )
    same = entry.get("same_as_against")
    stable = entry.get("stable")
    return PreflightItem(
        name=entry["name"],
        expected=entry["expected"],
        observed=entry["observed"],
        verdict=entry["verdict"],
        fix=str(entry.get("fix") or ""),
        same_as_against=same if isinstance(same, bool) else None,
        stable=stable if isinstance(stable, str) else None,
    )
