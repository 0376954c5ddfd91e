"""A server's lifecycle: spawn or launch, readiness, stop, release check; nothing outlives us."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx
import psutil

from ..base.errors import ReplyCut, ServerCrashed, ServerError
from ..base.fileio import BadFile, read_bounded
from . import bounds
from .exits import describe_exit, exit_of, fault_site
from .http import http_client
from .net import listening, port_is_free
from .readiness import wait_until_ready

HEALTH_BOUND = bounds.ReadBound.probe(2.0)  # one /health poll, its reply read whole
_PR_SET_PDEATHSIG = 1
_live: set[ServerProcess] = set()


@dataclass(frozen=True)
class Launcher:
    """An external launch/stop pair for rigs that must start servers their own way.

    Called as `launch TREATMENT PORT SESSION_DIR -- SERVER_ARGV...` (it starts the server in the
    background and writes its pid to SESSION_DIR/server.pid) and `stop TREATMENT PORT SESSION_DIR`.
    """

    launch: Path
    stop: Path
    treatment: str
    session_dir: Path
    timeout_s: float = 120.0

    @property
    def pid_file(self) -> Path:
        return self.session_dir / "server.pid"


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to start one server for one treatment."""

    server_bin: Path
    argv_tail: tuple[str, ...]  # model, ctx, alias, ladder and treatment flags
    host: str
    port: int
    alias: str
    log_path: Path
    ready_timeout_s: float = 300.0
    stop_timeout_s: float = 10.0
    launcher: Launcher | None = None
    cpus: frozenset[int] | None = None  # CPU affinity, set in the child before exec
    env: tuple[tuple[str, str], ...] = ()  # set on top of ours (a worker's CUDA_VISIBLE_DEVICES)

    @property
    def argv(self) -> list[str]:
        return [
            str(self.server_bin),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--alias",
            self.alias,
            *self.argv_tail,
        ]

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


@dataclass(frozen=True)
class Release:
    """How a server went away."""

    released: bool
    exit_code: int | None
    signal_used: str
    stop_s: float
    port_free: bool
    detail: str = ""


@dataclass
class ServerProcess:
    """A running server: our child (killed with us), or a launcher's (stopped by its stop script)."""

    spec: LaunchSpec
    pid: int
    popen: subprocess.Popen[bytes] | None
    log: IO[bytes] | None
    load_s: float = 0.0
    release: Release | None = None

    def __hash__(self) -> int:
        return id(self)

    def exit_code(self) -> int | None:
        """The exit status once the server has gone; None while it runs."""
        if self.popen is not None:
            return self.popen.poll()
        if psutil.pid_exists(self.pid) and not _is_zombie(self.pid):
            return None
        return -1  # not our child: the status is the launcher's to know

    def alive(self) -> bool:
        return self.exit_code() is None


def _die_with_parent(parent_pid: int, cpus: frozenset[int] | None) -> Callable[[], None]:
    def preexec() -> None:
        # The kernel kills the server if this pytest process dies, even by SIGKILL.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)
        if cpus:
            os.sched_setaffinity(0, cpus)

    return preexec


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        with path.open("rb") as f:  # only the end: a server log can be gigabytes
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - LOG_TAIL_BYTES))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return "(no server log)"
    return "\n".join(text.splitlines()[-lines:])


LOG_TAIL_BYTES = 64 * 1024


def crashed(server: ServerProcess, code: int) -> ServerCrashed:
    """The error for a server that ended while loading: its signal by name, its last log line,
    where the kernel saw the fault (when it is readable), and the likely cause."""
    spec = server.spec
    end = exit_of(code, shell=server.popen is None)
    site = fault_site(server.pid) if end.signal is not None else None
    last = last_log_line(spec.log_path)
    where = f" in {site}" if site else ""
    cause = ""
    if end.illegal_instruction:
        cause = (
            "; the binary was likely built for CPU features this machine lacks (a native build "
            "from another machine or a shared wheel cache, or llama.cpp's AMX kernels): rebuild "
            "it here with `mtpsweep provision --rebuild`"
        )
    return ServerCrashed(
        f"the server {describe_exit(code, shell=server.popen is None)}{where} while loading"
        f"{cause} (log {spec.log_path}); last lines:\n{log_tail(spec.log_path)}",
        status=code,
        last_line=last,
        site=site,
    )


# Called about once a second while a server loads, with the seconds waited so far.
OnWait = Callable[[float], None]
KILL_REAP_S = 2.0  # how long an interrupted stop waits for the SIGKILLed server to go


def last_log_line(path: Path) -> str:
    """The last non-empty line of a server log (read from its end), or '' if there is none."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            tail = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def start(
    spec: LaunchSpec,
    on_wait: OnWait | None = None,
    on_launch: Callable[[ServerProcess], None] | None = None,
) -> ServerProcess:
    """Launch the server and wait until /health says ok; fail fast with the log tail.

    `on_wait`, if given, is called about once a second while the server loads (for a status
    line; the rig itself prints nothing); `on_launch` is told of the process as soon as it
    exists, before it is ready.
    """
    if not os.access(spec.server_bin, os.X_OK):
        raise ServerError(
            f"server binary {spec.server_bin} is missing or not executable; run "
            "`mtpsweep provision` or pass --server-bin."
        )
    if not port_is_free(spec.host, spec.port):
        raise ServerError(
            f"port {spec.port} on {spec.host} is already in use; stop whatever holds it or pass "
            "--port with a free one."
        )
    spec.log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    server = _launch(spec) if spec.launcher else _spawn(spec)
    _live.add(server)
    try:
        if on_launch is not None:
            on_launch(server)
        _wait_ready(server, t0, on_wait)
    except BaseException:
        stop(server)
        raise
    server.load_s = time.monotonic() - t0
    return server


def _spawn(spec: LaunchSpec) -> ServerProcess:
    log = spec.log_path.open("ab")
    proc = subprocess.Popen(
        spec.argv,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so a stop reaches everything it spawned
        env={**os.environ, **dict(spec.env)} if spec.env else None,
        preexec_fn=_die_with_parent(os.getpid(), spec.cpus) if sys.platform == "linux" else None,
    )
    return ServerProcess(spec, proc.pid, proc, log)


def _launch(spec: LaunchSpec) -> ServerProcess:
    lau = spec.launcher
    assert lau is not None
    lau.session_dir.mkdir(parents=True, exist_ok=True)
    argv = [str(lau.launch), lau.treatment, str(spec.port), str(lau.session_dir), "--", *spec.argv]
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=lau.timeout_s,
            check=False,
            env={**os.environ, **dict(spec.env)} if spec.env else None,
        )
    except subprocess.TimeoutExpired:
        raise ServerError(
            f"launcher {lau.launch} did not return within {lau.timeout_s:.0f} s; it must start the "
            "server in the background and exit."
        ) from None
    with spec.log_path.open("ab") as log:
        log.write(done.stdout + done.stderr)
    if done.returncode != 0:
        raise ServerError(
            f"launcher {lau.launch} {describe_exit(done.returncode, shell=True)}; its output:\n"
            f"{(done.stdout + done.stderr).decode(errors='replace')[-2000:]}"
        )
    try:  # a pid is a few digits: 64 bytes, and never a FIFO waited on
        pid = int(read_bounded(lau.pid_file, 64).decode("ascii").strip())
    except (BadFile, ValueError):
        raise ServerError(
            f"launcher {lau.launch} wrote no pid to {lau.pid_file}; it must write the server's "
            "pid there."
        ) from None
    return ServerProcess(spec, pid, None, None)


def _wait_ready(server: ServerProcess, t0: float, on_wait: OnWait | None = None) -> None:
    spec = server.spec
    with http_client(timeout=2.0) as client:

        def probe() -> str | None:
            code = server.exit_code()
            if code is not None:
                raise crashed(server, code)
            with contextlib.suppress(httpx.HTTPError, ReplyCut):
                url = f"{spec.base_url}/health"
                status = HEALTH_BOUND.fetch(client, "GET", url).status_code
                return None if status == 200 else f"HTTP {status} from /health"
            return "no answer"

        heard = (lambda waited, _last: on_wait(waited)) if on_wait is not None else None
        waited = wait_until_ready(probe, spec.ready_timeout_s, 0.02, heard, t0)
    if not waited.ready:
        raise ServerError(
            f"the server was not healthy after {spec.ready_timeout_s:.0f} s "
            f"(log {spec.log_path}); raise server.ready_timeout_s in the ladder if the "
            f"model is slow to load. Last lines:\n{log_tail(spec.log_path)}"
        )


def stop(server: ServerProcess) -> Release:
    """SIGTERM the process group, wait, SIGKILL; then confirm the process is gone and the port free."""
    if server.release is not None:
        return server.release
    t0 = time.monotonic()
    spec = server.spec
    try:
        signal_used = _terminate(server)
    except BaseException:
        # Interrupted while waiting (a test timeout, Ctrl-C): nothing we started may live on.
        _kill_now(server)
        raise
    if spec.launcher is None:
        # Children in the group that outlived the leader are killed too.
        _killpg(server.pid, signal.SIGKILL)
    if server.log is not None:
        server.log.close()
    gone = not psutil.pid_exists(server.pid) or _is_zombie(server.pid)
    free = False
    for _ in range(100):  # the kernel can take a moment to close the listener
        free = not listening(spec.host, spec.port)
        if free:
            break
        time.sleep(0.05)
    detail = (
        ""
        if gone and free
        else (
            ("process still present; " if not gone else "")
            + ("port still listening" if not free else "")
        )
    )
    server.release = Release(
        released=gone and free,
        exit_code=server.popen.returncode if server.popen else None,
        signal_used=signal_used,
        stop_s=time.monotonic() - t0,
        port_free=free,
        detail=detail,
    )
    _live.discard(server)
    return server.release


def _terminate(server: ServerProcess) -> str:
    """Ask the server to go (its stop script, or SIGTERM), then SIGKILL; how it went."""
    spec = server.spec
    if spec.launcher is not None:
        return _stop_with_launcher(server)
    if not server.alive():
        return "none (already exited)"
    _killpg(server.pid, signal.SIGTERM)
    _killpg(server.pid, signal.SIGCONT)  # a paused (SIGSTOPped) server cannot act on SIGTERM
    if _wait_gone(server, spec.stop_timeout_s):
        return "SIGTERM"
    _killpg(server.pid, signal.SIGKILL)
    _wait_gone(server, 30)
    return "SIGKILL"


def _kill_now(server: ServerProcess) -> None:
    if server.spec.launcher is None:
        _killpg(server.pid, signal.SIGKILL)
    else:
        with contextlib.suppress(psutil.Error):
            psutil.Process(server.pid).kill()
    # SIGKILL is not instant: reap it (briefly) so the record can say it is gone.
    with contextlib.suppress(Exception):
        _wait_gone(server, KILL_REAP_S)


def _wait_gone(server: ServerProcess, timeout_s: float) -> bool:
    if server.popen is not None:
        try:
            server.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    deadline = time.monotonic() + timeout_s
    while server.alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _stop_with_launcher(server: ServerProcess) -> str:
    """Run the rig's stop script; if the server outlives it, kill the pid ourselves."""
    lau, spec = server.spec.launcher, server.spec
    assert lau is not None
    argv = [str(lau.stop), lau.treatment, str(spec.port), str(lau.session_dir)]
    how = f"stop script {lau.stop.name}"
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=lau.timeout_s, check=False
        )
        with spec.log_path.open("ab") as log:
            log.write(done.stdout + done.stderr)
        if done.returncode != 0:
            how += f" (exit {done.returncode})"
    except subprocess.TimeoutExpired:
        how += " (timed out)"
    if not _wait_gone(server, spec.stop_timeout_s):
        with contextlib.suppress(psutil.Error):
            psutil.Process(server.pid).kill()
        _wait_gone(server, 30)
        how += ", then SIGKILL"
    return how


def _killpg(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _is_zombie(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return True


def kill_all() -> None:
    """Kill every server still running at once (the user insisted: a second Ctrl-C)."""
    for server in list(_live):
        _kill_now(server)


def stop_all() -> None:
    """Last line of defence at interpreter or pytest exit: nothing we started survives."""
    for server in list(_live):
        stop(server)
