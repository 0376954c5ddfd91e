"""The `mtpsweep` command: provision and preflight (analyse and compare: tests/analysis)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mtpsweep.cli import main

REPO = Path(__file__).resolve().parent.parent


def mtpsweep(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_mtpsweep.cli", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.server
def test_provision_names_server_build_and_model() -> None:
    done = mtpsweep("provision")
    assert done.returncode == 0, done.stderr
    assert "build:   version: 0.6.0-dev (build 11434, commit 515e85511)" in done.stdout
    assert "sha256 checked" in done.stdout and "warning" not in done.stdout


def test_provision_with_a_bad_server_is_one_line(tmp_path: Path) -> None:
    done = mtpsweep("provision", "--server-bin", str(tmp_path / "nope"), "--no-model")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("mtpsweep: --server-bin names")


@pytest.mark.server
def test_preflight_prints_the_table_and_starts_nothing(tmp_path: Path) -> None:
    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    done = mtpsweep("preflight", "--ladder", "cpu-demo", "--port", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for item in ("gpu", "ram", "server_version", "prompt_set", "ladder_file", "run_dir"):
        assert f"\n{item} " in done.stdout
    assert not (tmp_path / "runs").exists()  # preflight creates no run directory


@pytest.mark.server
def test_the_cpu_demo_preflight_table_fits_120_columns(tmp_path: Path) -> None:
    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    done = mtpsweep(
        "preflight", "--ladder", "cpu-demo", "--port", "0", cwd=tmp_path, env={"COLUMNS": "120"}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120, done.stdout
    model = next(line for line in lines if line.startswith("model:"))
    assert "…" in model and "bytes, mtime" in model  # shortened in the middle, start and end kept


def test_preflight_of_an_unknown_ladder_is_one_line() -> None:
    done = mtpsweep("preflight", "--ladder", "nope")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "no ladder of that name" in done.stderr


@pytest.mark.server
def test_preflight_refuses_an_unknown_waiver(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "--ladder", "cpu-demo", "--waive", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert "--waive names no preflight item: nonsense" in err and err.count("\n") == 1


STUB = REPO / "tests" / "stub_llama_server.py"
STUB_LADDER = """
question = "q"
baseline = "a"
[model]
path = "{model}"
id = "stub"
[server]
port = 0
[[treatments]]
key = "a"
[[treatments]]
key = "b"
[preflight]
ports = [{port}]
"""


def test_preflight_checks_every_port_the_ladder_lists(tmp_path: Path) -> None:
    import socket

    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF m")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        ladder = tmp_path / "experiments" / "ladders" / "rig.toml"
        ladder.write_text(STUB_LADDER.format(model=model, port=port))
        done = mtpsweep("preflight", "--ladder", "rig", "--server-bin", str(STUB), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("ports "))
    assert f"free on 127.0.0.1: {port}" in row and "fail" in row
    assert f"ports: Stop whatever holds port {port}" in done.stderr


def test_preflight_of_a_non_utf8_ladder_is_one_line(tmp_path: Path) -> None:
    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    (tmp_path / "experiments" / "ladders" / "bad.toml").write_bytes(b"question = 'caf\xe9'\n")
    done = mtpsweep("preflight", "--ladder", "bad", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "not UTF-8" in done.stderr and "Traceback" not in done.stderr
