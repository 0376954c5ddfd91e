"""servers/live.json: what a run started, kept current, and `cleanup` for what outlived it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pytest_mtpsweep.base.errors import RunDirError
from pytest_mtpsweep.rig import liveset


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process group leader standing in for a spawned server (killed whatever happens)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True
    )
    yield proc
    proc.kill()
    proc.wait()


def entry(
    proc: subprocess.Popen[bytes], launcher: dict[str, str] | None = None
) -> liveset.LiveServer:
    return liveset.entry("01_a_c1", "a", proc.pid, "127.0.0.1", 8080, "llama-server", launcher)


def test_add_and_remove_keep_the_list_current(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    path = tmp_path / "servers" / "live.json"
    liveset.add(path, entry(sleeper))
    liveset.add(path, liveset.LiveServer("02_b_c1", "b", 2, 0.0, "h", 1, None))
    assert [s.session for s in liveset.read(path)] == ["01_a_c1", "02_b_c1"]
    liveset.remove(path, "01_a_c1")
    assert [s.session for s in liveset.read(path)] == ["02_b_c1"]


def test_a_reused_pid_is_not_the_server(sleeper: subprocess.Popen[bytes]) -> None:
    mine = entry(sleeper)
    assert mine.running()
    assert not liveset.LiveServer("x", "a", sleeper.pid, mine.started - 100, "h", 1, None).running()


def test_cleanup_stops_a_spawned_server_and_empties_the_list(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    liveset.add(tmp_path / "servers" / "live.json", entry(sleeper))
    lines = liveset.cleanup(tmp_path)
    assert lines == [f"pid {sleeper.pid} (01_a_c1, spawned, port 8080): stopped (SIGTERM)"]
    assert sleeper.wait(timeout=5) is not None
    assert liveset.read(tmp_path / "servers" / "live.json") == []
    assert liveset.cleanup(tmp_path) == []


def _launched(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> dict[str, str]:
    """A stop script of the rig's, kept by the run in the session's folder as a launch does."""
    stop = tmp_path / "stop.sh"
    stop.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/stop-args\nkill {sleeper.pid}\n')
    stop.chmod(0o755)
    launcher = liveset.keep_stop(stop, tmp_path / "servers" / "01_a_c1")
    liveset.add(tmp_path / "servers" / "live.json", entry(sleeper, launcher))
    return launcher


def test_cleanup_runs_the_stop_script_of_a_launched_server(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    launcher = _launched(tmp_path, sleeper)
    assert Path(launcher["stop"]) == tmp_path / "servers" / "01_a_c1" / "stop"
    (line,) = liveset.cleanup(tmp_path)
    assert line.endswith("launched, port 8080): stopped (stop script, exit 0)")
    assert (tmp_path / "stop-args").read_text().split() == [
        "a", "8080", str(tmp_path / "servers" / "01_a_c1")
    ]  # fmt: skip
    sleeper.wait(timeout=5)


def _tamper(kept: Path, how: str, tmp_path: Path) -> None:
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    evil.chmod(0o755)
    if how == "replaced":
        kept.write_text(evil.read_text())
    elif how == "a link":
        kept.unlink()
        kept.symlink_to(evil)
    elif how == "writable by all":
        kept.chmod(0o777)
    elif how == "a FIFO":
        kept.unlink()
        os.mkfifo(kept)


@pytest.mark.parametrize("how", ["replaced", "a link", "writable by all", "a FIFO"])
def test_cleanup_runs_no_stop_script_but_the_kept_one_unchanged(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], how: str
) -> None:
    launcher = _launched(tmp_path, sleeper)
    _tamper(Path(launcher["stop"]), how, tmp_path)
    (line,) = liveset.cleanup(tmp_path)
    assert "so it was not run" in line and "SIGTERM" in line, line
    assert not (tmp_path / "ran").exists() and not (tmp_path / "stop-args").exists()


@pytest.mark.parametrize(
    "forged",
    [
        {"stop": "EVIL", "session_dir": "servers/01_a_c1"},  # any file, the folder the run's
        {"stop": "servers/x/stop", "session_dir": "servers/x"},  # another session's folder
        {"stop": "/bin/true", "session_dir": "servers/01_a_c1"},
    ],
)
def test_a_forged_launcher_in_live_json_runs_nothing(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], forged: dict[str, str]
) -> None:
    evil = tmp_path / "EVIL"
    evil.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    evil.chmod(0o755)
    launcher = {k: v if v.startswith("/") else str(tmp_path / v) for k, v in forged.items()}
    launcher["stop_sha256"] = liveset.keep_stop(evil, tmp_path / "k")["stop_sha256"]
    liveset.add(tmp_path / "servers" / "live.json", entry(sleeper, launcher))
    with pytest.raises(RunDirError, match="stop them by hand"):
        liveset.cleanup(tmp_path)
    assert not (tmp_path / "ran").exists()


def test_a_session_name_that_climbs_out_is_refused(tmp_path: Path) -> None:
    evil = tmp_path / "out" / "stop"
    launcher = liveset.keep_stop(_script(tmp_path), evil.parent)
    server = liveset.LiveServer("../../out", "a", 4242, 1.0, "h", 1, launcher)
    liveset.add(tmp_path / "run" / "servers" / "live.json", server)
    with pytest.raises(RunDirError, match="not a session's name"):
        liveset.cleanup(tmp_path / "run")


def _script(tmp_path: Path) -> Path:
    script = tmp_path / "script.sh"
    script.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    return script


def test_leftovers_are_the_running_servers_of_sibling_runs(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    liveset.add(tmp_path / "run-1" / "servers" / "live.json", entry(sleeper))
    gone = liveset.LiveServer("02_b_c1", "b", 999_999_999, 0.0, "h", 1, None)
    liveset.add(tmp_path / "run-2" / "servers" / "live.json", gone)
    found = list(liveset.leftovers(tmp_path))
    assert [(run.name, s.pid) for run, s in found] == [("run-1", sleeper.pid)]
    assert psutil.pid_exists(sleeper.pid)


def test_cleanup_refuses_what_is_not_a_run_and_a_damaged_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_mtpsweep.base.schema import LIVE_SERVERS_FILE, PLAN_FILE
    from pytest_mtpsweep.cli.main import main

    (tmp_path / "notarun").mkdir()
    assert main(["cleanup", str(tmp_path / "notarun")]) == 2
    assert "is not a run directory" in capsys.readouterr().err
    run = tmp_path / "run"
    (run / "servers").mkdir(parents=True)
    (run / PLAN_FILE).write_text("{}")
    assert main(["cleanup", str(run)]) == 0  # a run that listed no server
    (run / LIVE_SERVERS_FILE).write_text('{"servers": [{"pid": ')
    assert main(["cleanup", str(run)]) == 2
    err = capsys.readouterr().err
    assert "cannot be read" in err and "stop them by hand" in err and "Traceback" not in err
