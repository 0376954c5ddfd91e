"""servers/live.json: every server a run has started and not yet seen gone, kept current.

A server started by a rig's launcher is not our child: after a `kill -9` of pytest it lives on.
This file is the way out: `mtpsweep cleanup RUN` runs the stop script for each server listed
and kills the pids the run itself started; preflight names the servers earlier runs left.
A pid counts as the same process only while its start time matches (pids are reused).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import math
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from ..base.errors import RunDirError, ServerError
from ..base.fileio import BadFile, atomic_write_json, load_json_bounded, read_bounded
from ..base.schema import LIVE_SERVERS_FILE, launcher_dir

STOP_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class LiveServer:
    """One server as the run started it."""

    session: str
    treatment: str
    pid: int
    started: float  # the process's create_time: a reused pid has another
    host: str
    port: int
    # {"stop": path, "session_dir": path, "stop_sha256": hex} when launched: `stop` is the copy
    # of the rig's stop script the run kept in the session's folder (`keep_stop`)
    launcher: dict[str, str] | None
    argv0: str = ""

    def running(self) -> bool:
        """Whether this very process still runs (a zombie or a reused pid does not count)."""
        try:
            proc = psutil.Process(self.pid)
            same = abs(proc.create_time() - self.started) < 0.5
            return bool(same and proc.status() != psutil.STATUS_ZOMBIE)
        except psutil.Error:
            return False

    def describe(self) -> str:
        how = "launched" if self.launcher else "spawned"
        return f"pid {self.pid} ({self.session}, {how}, port {self.port})"


def started_at(pid: int) -> float:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return 0.0


def read(path: Path) -> list[LiveServer]:
    """The servers a live.json lists (an unreadable or foreign file lists none)."""
    try:
        return _servers(path)
    except ValueError:
        return []


MAX_SERVERS = 4096  # a run's sessions at most (cycles x treatments, each one server)


def _servers(path: Path) -> list[LiveServer]:
    """live.json read bounded (`fileio.load_json_bounded`: no FIFO, device, huge or deep file)
    and each entry checked to be one the run wrote: ValueError (its clause) otherwise."""
    if path.is_symlink():  # the run replaces the file whole, never through a link
        raise ValueError("is a link, which the run never writes")
    data = load_json_bounded(path)
    listed = data.get("servers") if isinstance(data, dict) else None
    if not isinstance(listed, list) or len(listed) > MAX_SERVERS:
        raise ValueError(f"does not list at most {MAX_SERVERS} servers")
    out = []
    for i, entry in enumerate(listed):
        try:
            server = LiveServer(**entry)
        except TypeError:
            raise ValueError(f"entry {i} is not a server the run listed") from None
        why = _wrong(server, path.parent.parent)
        if why is not None:
            raise ValueError(f"entry {i}: {why}")
        out.append(server)
    return out


def _wrong(s: LiveServer, run_dir: Path) -> str | None:
    """Why an entry is none the run wrote (None: it may be): a pid no server has, a port
    past 65535, a launcher's session folder outside the run or a stop script no file."""
    typed = (
        type(s.pid) is int
        and 1 < s.pid < 1 << 31
        and type(s.port) is int
        and 0 < s.port < 65536
        and isinstance(s.started, int | float)
        and not isinstance(s.started, bool)
        and math.isfinite(s.started)
        and all(isinstance(v, str) for v in (s.session, s.treatment, s.host, s.argv0))
    )
    if not typed:
        return "a pid, port or start time of the wrong type or out of range"
    if s.session in ("", ".", "..") or "/" in s.session or "\0" in s.session:
        return f"its session {s.session!r} is not a session's name"
    if s.launcher is None:
        return None
    if not isinstance(s.launcher, dict) or not all(
        isinstance(s.launcher.get(k), str) for k in ("stop", "session_dir", "stop_sha256")
    ):
        return "a launcher without its stop script, its sha256 and session folder"
    folder = Path(os.path.abspath(run_dir / launcher_dir(s.session)))
    if Path(os.path.abspath(s.launcher["session_dir"])) != folder:
        return f"its session folder {s.launcher['session_dir']} is not the run's {folder}"
    if Path(os.path.abspath(s.launcher["stop"])) != folder / KEPT_STOP:
        return f"its stop script {s.launcher['stop']} is not the copy the run keeps"
    return None


KEPT_STOP = "stop"  # the copy of the rig's stop script in a session's folder, the one cleanup runs


def keep_stop(stop: Path, session_dir: Path) -> dict[str, str]:
    """Copy the rig's stop script into the session's folder (mode 0700) and name it with its
    sha256: the launcher entry of live.json. `cleanup` runs this copy and nothing else."""
    session_dir.mkdir(parents=True, exist_ok=True)
    kept = session_dir / KEPT_STOP
    try:  # a script: 16 MiB is far past any, and a file swapped for a FIFO is never waited on
        data = read_bounded(stop, 16 * 1024 * 1024)
    except BadFile as exc:
        raise ServerError(
            f"server.stop {stop} {exc}; point it at the executable script that stops the server."
        ) from None
    tmp = kept.with_name(f".{KEPT_STOP}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o700)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(tmp, 0o700)
    os.replace(tmp, kept)
    digest = hashlib.sha256(data).hexdigest()
    return {"stop": str(kept), "session_dir": str(session_dir), "stop_sha256": digest}


MAX_STOP_SCRIPT_BYTES = 16 * 1024 * 1024  # what cleanup hashes of a kept stop script


def kept_stop_problem(launcher: dict[str, str]) -> str | None:
    """Why the kept stop script is not the one the run wrote (None: it is): a link, a special
    file, another owner's, writable by all, or bytes other than the sha256 recorded."""
    path = launcher["stop"]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return f"cannot be opened as a file ({exc.strerror})"
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return "is not a regular file"
        if st.st_uid != os.getuid():
            return "belongs to another user"
        if st.st_mode & 0o002:
            return "is writable by every user"
        if st.st_size > MAX_STOP_SCRIPT_BYTES:
            return f"is over {MAX_STOP_SCRIPT_BYTES} bytes"
        digest = hashlib.sha256(f.read(MAX_STOP_SCRIPT_BYTES + 1)).hexdigest()
    if digest != launcher["stop_sha256"]:
        return "is not the copy the run wrote (its sha256 differs from the one recorded)"
    return None


def read_strict(path: Path) -> list[LiveServer]:
    """The servers a live.json lists; RunDirError when it exists but cannot be read (a damaged
    list must not read as "nothing is running")."""
    if not path.exists() and not path.is_symlink():
        return []
    try:
        return _servers(path)
    except ValueError as exc:
        raise RunDirError(
            f"{path} cannot be read ({exc}), so which servers this run left running is "
            "unknown; stop them by hand (look for llama-server in `ps -ef`) and then delete the "
            "file."
        ) from None


def _write(path: Path, servers: Sequence[LiveServer]) -> None:
    atomic_write_json(path, {"servers": [asdict(s) for s in servers]})


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One writer at a time: the workers of a distributed run share the run's live.json."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def add(path: Path, server: LiveServer) -> None:
    """Record a server the moment it is started (before it is even ready)."""
    with _locked(path):
        _write(path, [*(s for s in read(path) if s.session != server.session), server])


def remove(path: Path, session: str) -> None:
    """Forget a session's server once it is seen gone."""
    if path.exists():
        with _locked(path):
            _write(path, [s for s in read(path) if s.session != session])


def leftovers(runs_root: Path) -> Iterator[tuple[Path, LiveServer]]:
    """(run directory, server) for every listed server of the runs under `runs_root` that still
    runs: what earlier runs of this ladder left behind."""
    for live in sorted(runs_root.glob(f"*/{LIVE_SERVERS_FILE}")):
        for server in read(live):
            if server.running():
                yield live.parent.parent, server


def cleanup(run_dir: Path) -> list[str]:
    """Stop every server the run lists that still runs: its stop script if it was launched,
    then SIGTERM/SIGKILL to a pid the run started itself. One line per server."""
    path = run_dir / LIVE_SERVERS_FILE
    lines: list[str] = []
    left: list[LiveServer] = []
    for server in read_strict(path):
        if not server.running():
            lines.append(f"{server.describe()}: already gone")
            continue
        how = _stop(server)
        if server.running():
            left.append(server)
            lines.append(f"{server.describe()}: STILL RUNNING after {how}")
        else:
            lines.append(f"{server.describe()}: stopped ({how})")
    if path.exists():
        _write(path, left)
    return lines


def _stop(server: LiveServer) -> str:
    how: list[str] = []
    problem = kept_stop_problem(server.launcher) if server.launcher is not None else None
    if server.launcher is not None and problem is not None:
        how.append(f"stop script {server.launcher['stop']} {problem}, so it was not run")
    elif server.launcher is not None:
        stop = server.launcher["stop"]
        argv = [stop, server.treatment, str(server.port), server.launcher["session_dir"]]
        try:
            done = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=STOP_TIMEOUT_S
            )
            how.append(f"stop script, exit {done.returncode}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            how.append(f"stop script failed ({type(exc).__name__})")
        _wait_gone(server, 10.0)  # a stop script may return before the server has exited
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not server.running():
            break
        _signal(server, sig)
        how.append(sig.name)
        _wait_gone(server, 10.0)
    return ", ".join(how) or "nothing to do"


def _signal(server: LiveServer, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if server.launcher is None:
            os.killpg(server.pid, sig)  # a spawned server leads its own process group
        else:
            os.kill(server.pid, sig)
        if sig == signal.SIGTERM:
            os.kill(server.pid, signal.SIGCONT)  # a paused server must wake to act on it


def _wait_gone(server: LiveServer, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while server.running() and time.monotonic() < deadline:
        time.sleep(0.05)


def entry(
    session: str,
    treatment: str,
    pid: int,
    host: str,
    port: int,
    argv0: str,
    launcher: dict[str, str] | None,
) -> LiveServer:
    """A live.json entry for a server just started."""
    return LiveServer(session, treatment, pid, started_at(pid), host, port, launcher, argv0)
