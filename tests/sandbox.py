"""Helpers shared by the tests that run experiments inside a pytester sandbox."""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from pytest_mtpsweep.state.runread import RunReader

REPO = Path(__file__).resolve().parent.parent


def _stub_server() -> Path:
    """The STUB llama-server script; under xdist (the fast tier's `-n`) one copy per worker, so
    a run's "no server of this binary is running" witness sees its own worker's servers only."""
    source = REPO / "tests" / "stub_llama_server.py"
    worker, run = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not worker or not run:
        return source
    copy = Path(tempfile.gettempdir()) / f"mtpsweep-stub-{run[:12]}-{worker}" / source.name
    if not copy.is_file() or copy.read_bytes() != source.read_bytes():
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, copy)
    return copy


STUB_SERVER = _stub_server()
# The model of the real-server tests of the machinery (protocol, timing, records, crashes, load,
# the gates): they need a real llama-server, not a model's answers, and the tiny model
# (rig/tinymodel.py) decodes many times faster than the 0.5B one. One switch: REAL_MODEL here
# runs them all on the 0.5B model. The tests of what a model says (authoring verdicts, the
# degeneracy witness, cpu-demo's decision) name REAL_MODEL or the shipped ladders.
MACHINERY_MODEL = "embedded:tiny"
REAL_MODEL = "embedded:qwen2.5-coder-0.5b"
# A model file for the STUB server: a GGUF header with an empty metadata table, then filler.
FAKE_GGUF = b"GGUF" + struct.pack("<IQQ", 3, 0, 0) + b"stub model"
CANONICAL = REPO / "experiments" / "prompts" / "canonical"


def copy_experiments(pytester: pytest.Pytester, ladders: dict[str, str] | None = None) -> None:
    """The shipped experiments directory, plus extra ladders by name, in the sandbox."""
    shutil.copytree(REPO / "experiments", pytester.path / "experiments")
    for name, text in (ladders or {}).items():
        (pytester.path / "experiments" / "ladders" / f"{name}.toml").write_text(text)


def prompt_dir(pytester: pytest.Pytester, ids: list[str]) -> Path:
    """A prompt set made of some of the canonical prompts."""
    few = pytester.path / "few"
    few.mkdir()
    for pid in ids:
        shutil.copy(CANONICAL / f"{pid}.txt", few)
    return few


def only_run(root: Path) -> Path:
    runs = list((root / "runs").glob("*/*"))
    assert len(runs) == 1, runs
    return runs[0]


def servers_of(binary: Path) -> list[psutil.Process]:
    """Running processes whose executable is exactly this binary."""
    return [
        p for p in psutil.process_iter(["exe"]) if p.info["exe"] and Path(p.info["exe"]) == binary
    ]


def wait_for_record(
    root: Path, pattern: str, proc: subprocess.Popen[str] | subprocess.Popen[bytes]
) -> None:
    """Block until a records file matching `pattern` holds a line (a run is mid-session)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        recs = list(root.glob(f"runs/*/*/records/{pattern}"))
        if recs and recs[0].read_text().count("\n") >= 1:
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended (status {proc.returncode}) before writing {pattern}")
        time.sleep(0.02)
    pytest.fail(f"no record matching {pattern} within 180 s")


def spawn_pytest(root: Path, *args: str) -> subprocess.Popen[bytes]:
    """pytest in a separate process (so it can be killed), its output in root/run.log."""
    log = (root / "run.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


@contextlib.contextmanager
def server_by_hand(
    server_bin: Path, model_path: Path, log_path: Path, *flags: str
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A real llama-server started and stopped here, outside the plugin (as a launcher, a
    container or another host would): (process, base URL) once /health answers 200."""
    from pytest_mtpsweep.rig.net import free_port

    port = free_port("127.0.0.1")
    argv = [str(server_bin), "-m", str(model_path), "--host", "127.0.0.1", "--port", str(port),
            *flags]  # fmt: skip
    with started_by_hand(argv, f"http://127.0.0.1:{port}", "/health", log_path) as started:
        yield started


@contextlib.contextmanager
def started_by_hand(
    argv: list[str], url: str, ready_path: str, log_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """Any server process started here (argv, its output in log_path) and stopped on exit:
    (process, url) once GET url+ready_path answers 200 (fails after 180 s, with its log)."""
    import httpx

    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 180
            while True:
                assert proc.poll() is None, log_path.read_text()[-2000:]
                try:
                    if httpx.get(url + ready_path, timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, log_path.read_text()[-2000:]
                time.sleep(0.5)
            yield proc, url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def read_records(path: Path) -> tuple[list[dict[str, Any]], int]:
    """One records file as the run reader reads it: the records, and how many lines it set
    aside (a torn or foreign line)."""
    read = RunReader(path.parent).session_records(path.stem, ".")
    return read.records, len(read.unreadable)
