"""An attached server's argv, as the rig captured it: a file (`flags_file`) or what a command
prints (`flags_command`), run as an argv list, never through a shell, with a time limit."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..base.errors import ServerError
from ..base.fileio import BadFile, read_bounded

FLAGS_COMMAND_TIMEOUT_S = 30.0


def split_argv(text: str) -> list[str]:
    """A copy of /proc/<pid>/cmdline (NUL-separated) or its `tr '\\0' ' '` form (spaces)."""
    if "\0" in text:
        return [part for part in text.split("\0") if part]
    return text.split()


def read_flags_file(path: Path) -> str:
    """The text of a flags file; ServerError with the fix when it cannot be read."""
    try:  # an argv is at most the kernel's ARG_MAX (2 MiB on Linux)
        return read_bounded(path, 4 * 1024 * 1024).decode("utf-8", errors="replace")
    except BadFile as exc:
        raise ServerError(
            f"flags_file {path} cannot be read (it {exc}); write the server's argv there "
            "before the session (e.g. tr '\\0' ' ' < /proc/PID/cmdline > FILE)."
        ) from None


def run_flags_command(
    argv: Sequence[str], cwd: Path, timeout_s: float = FLAGS_COMMAND_TIMEOUT_S
) -> str:
    """What `flags_command` prints on stdout; ServerError with the fix when it fails."""
    shown = " ".join(argv)
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            capture_output=True,
            timeout=timeout_s,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise ServerError(
            f"flags_command {shown!r}: {argv[0]} was not found; name an executable on PATH or "
            "give its path (relative paths start at the ladder's directory)."
        ) from None
    except subprocess.TimeoutExpired:
        raise ServerError(
            f"flags_command {shown!r} did not finish within {timeout_s:.0f} s; make it print the "
            "server's argv and exit."
        ) from None
    except OSError as exc:
        raise ServerError(f"flags_command {shown!r} cannot run ({exc.strerror}); fix it.") from None
    out = done.stdout.decode("utf-8", errors="replace")
    if done.returncode != 0 or not out.strip():
        err = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        why = f"exit {done.returncode}" + (f": {err[-1]}" if err else "")
        raise ServerError(
            f"flags_command {shown!r} printed no argv ({why}); make it print the server's argv."
        )
    return out
