"""A server's lifecycle: start on loopback, readiness, stop and release, nothing left behind.

The happy path runs the real llama-server; a start that fails or never becomes ready comes from
the STUB server (tests/stub_llama_server.py), since a real one cannot be made to do that.
"""

from __future__ import annotations

import dataclasses
import itertools
import socket
import sys
from pathlib import Path

import psutil
import pytest

from pytest_mtpsweep.base.errors import ServerError
from pytest_mtpsweep.rig import identity, readiness, server
from pytest_mtpsweep.rig.net import bind_error, free_port, listening, port_is_free
from tests.sandbox import STUB_SERVER

REPO = Path(__file__).resolve().parents[2]
STUB = STUB_SERVER  # one copy per xdist worker


def spec(tmp_path: Path, binary: Path, *tail: str, timeout: float = 60.0) -> server.LaunchSpec:
    return server.LaunchSpec(
        server_bin=binary,
        argv_tail=tail,
        host="127.0.0.1",
        port=free_port(),
        alias="m-none",
        log_path=tmp_path / "server.log",
        ready_timeout_s=timeout,
    )


@pytest.mark.server
def test_real_server_starts_answers_and_is_released(
    tmp_path: Path, server_bin: Path, machinery_model: Path
) -> None:
    s = spec(
        tmp_path, server_bin, "-m", str(machinery_model), "--ctx-size", "512", "--parallel", "1"
    )
    proc = server.start(s)
    try:
        assert proc.alive() and proc.load_s > 0 and not port_is_free(s.host, s.port)
        argv = identity.read_cmdline(proc.pid)
        assert argv[0] == str(server_bin) and argv[argv.index("--host") + 1] == "127.0.0.1"
        props = identity.props(s.base_url)
        assert props["model_alias"] == "m-none"
        assert (identity.rss_bytes(proc.pid) or 0) > 10 * 2**20
    finally:
        release = server.stop(proc)
    assert release.released and release.port_free and release.signal_used == "SIGTERM"
    assert not psutil.pid_exists(proc.pid) or not proc.alive()
    assert server.stop(proc) is release  # idempotent


def test_missing_binary_is_named(tmp_path: Path) -> None:
    with pytest.raises(ServerError, match="missing or not executable"):
        server.start(spec(tmp_path, tmp_path / "nope"))


def test_busy_port_is_refused_before_launch(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        s = spec(tmp_path, STUB)
        s = dataclasses.replace(s, port=sock.getsockname()[1])
        assert bind_error(s.host, s.port) is not None
        with pytest.raises(ServerError, match="already in use"):
            server.start(s)


def test_a_freed_port_taken_by_some_client_socket_is_not_a_listener() -> None:
    # What a neighbour's connections do to a released server's port: its number becomes
    # their ephemeral local port, so a bind fails, yet nothing listens (the release is true).
    with socket.socket() as other, socket.socket() as gone:
        other.bind(("127.0.0.1", 0))
        other.listen()
        gone.bind(("127.0.0.1", 0))
        gone.listen()
        port = gone.getsockname()[1]
        assert listening("127.0.0.1", port)
        gone.close()
        with socket.socket() as client:  # as the kernel hands out ephemeral ports: no REUSEADDR
            client.bind(("127.0.0.1", port))
            client.connect(other.getsockname())
            assert bind_error("127.0.0.1", port) is not None
            assert not listening("127.0.0.1", port)


def test_exit_at_start_shows_the_log_tail(tmp_path: Path) -> None:
    with pytest.raises(ServerError, match="exited with status 1 while loading") as info:
        server.start(spec(tmp_path, STUB, "--fault", "exit-at-start"))
    assert "last lines" in str(info.value)
    assert server._live == set()


def test_never_ready_times_out_and_is_stopped(tmp_path: Path) -> None:
    s = spec(tmp_path, STUB, "--fault", "slow-start=30", timeout=1.0)
    with pytest.raises(ServerError, match="not healthy after 1 s"):
        server.start(s)
    assert port_is_free(s.host, s.port) and server._live == set()


def test_children_of_the_server_are_killed_with_it(tmp_path: Path) -> None:
    # A server that forks a helper: the stop reaches the whole process group.
    script = tmp_path / "forking-server"
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, subprocess, sys\n"
        "subprocess.Popen(['sleep', '300'])\n"
        f"os.execv({sys.executable!r}, [{sys.executable!r}, {str(STUB)!r}, *sys.argv[1:]])\n"
    )
    script.chmod(0o755)
    proc = server.start(spec(tmp_path, script))
    kids = psutil.Process(proc.pid).children(recursive=True)
    assert kids
    server.stop(proc)
    _, alive = psutil.wait_procs(kids, timeout=5)
    assert alive == []


def test_stop_all_stops_what_is_left(tmp_path: Path) -> None:
    proc = server.start(spec(tmp_path, STUB))
    assert proc in server._live
    server.stop_all()
    assert not proc.alive() and server._live == set()


def test_a_loading_server_is_reported_about_once_a_second(tmp_path: Path) -> None:
    # The STUB answers 503 for 2.5 s, as a real server does while it loads a large model.
    s = spec(tmp_path, STUB, "--fault", "slow-start=2.5")
    waited: list[float] = []
    proc = server.start(s, waited.append)
    try:
        assert 2 <= len(waited) <= 3, waited
        assert waited == sorted(waited) and waited[0] >= readiness.TICK_S
        assert all(b - a >= readiness.TICK_S for a, b in itertools.pairwise(waited))
        assert waited[-1] <= proc.load_s
    finally:
        server.stop(proc)


def test_last_log_line_reads_the_end(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    assert server.last_log_line(log) == ""  # no log yet
    log.write_text("x" * 10_000 + "\nload_tensors: loading model\n\n  main: model loaded  \n\n")
    assert server.last_log_line(log) == "main: model loaded"
