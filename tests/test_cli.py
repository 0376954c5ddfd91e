"""The `mtpsweep` command: provision and preflight (analyse and compare: tests/analysis)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mtpsweep.cli import main

REPO = Path(__file__).resolve().parent.parent


def mtpsweep(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_mtpsweep.cli", *args],
        cwd=cwd,
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


def test_preflight_of_an_unknown_ladder_is_one_line() -> None:
    done = mtpsweep("preflight", "--ladder", "nope")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "no ladder of that name" in done.stderr


@pytest.mark.server
def test_preflight_refuses_an_unknown_waiver(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "--ladder", "cpu-demo", "--waive", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert "--waive names no preflight item: nonsense" in err and err.count("\n") == 1
