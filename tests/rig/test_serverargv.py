"""An attached server's argv from a flags file or a flags command."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import ServerError
from pytest_mtpsweep.rig.serverargv import read_flags_file, run_flags_command, split_argv


def test_proc_cmdline_and_its_space_form_split_alike() -> None:
    raw = "llama-server\0-m\0/m.gguf\0--alias\0x\0"
    assert split_argv(raw) == ["llama-server", "-m", "/m.gguf", "--alias", "x"]
    assert split_argv(raw.replace("\0", " ") + "\n") == split_argv(raw)


def test_a_command_runs_without_a_shell_in_the_ladder_directory(tmp_path: Path) -> None:
    code = "import os, sys; print(os.getcwd(), *sys.argv[1:])"
    out = run_flags_command([sys.executable, "-c", code, "$HOME", "a;b"], tmp_path)
    assert out.split() == [str(tmp_path), "$HOME", "a;b"]  # no shell expanded anything


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["no-such-command-mtpsweep"], "was not found"),
        (
            [sys.executable, "-c", "import sys; sys.exit('gone')"],
            r"printed no argv \(exit 1: gone\)",
        ),
        ([sys.executable, "-c", "pass"], r"printed no argv \(exit 0\)"),
        ([sys.executable, "-c", "import time; time.sleep(5)"], "did not finish within 1 s"),
    ],
)
def test_a_failing_command_is_one_sentence(tmp_path: Path, argv: list[str], message: str) -> None:
    with pytest.raises(ServerError, match=message):
        run_flags_command(argv, tmp_path, timeout_s=1.0)


def test_a_missing_flags_file_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(ServerError, match=r"cannot be read .*/proc/PID/cmdline"):
        read_flags_file(tmp_path / "absent.txt")
