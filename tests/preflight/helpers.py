"""Helpers and fixtures shared by the preflight tests (and the rig tests of digests and versions)."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pytest_mtpsweep.preflight.items import (
    PreflightItem,
)
from tests.sandbox import STUB_SERVER

NEW_BANNER = "version: 0.6.0-dev (build 11434, commit 515e85511)\nbuilt with cc for x86_64"
OLD_BANNER = "version: 1 (c8e03ce)\nbuilt with cc for x86_64"


# --------------------------------------------------------------------------- helpers


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def version_printer(tmp_path: Path, banner: str = NEW_BANNER) -> Path:
    """A stand-in for llama-server that prints a version banner to stderr, as it does, and
    otherwise serves as the STUB server (so preflight's smoke test can start it)."""
    lines = "".join(f"echo '{line}' >&2\n" for line in banner.splitlines())
    body = f'if [ "$1" = --version ]; then\n{lines}exit 0\nfi\nexec {STUB_SERVER} "$@"\n'
    return write_script(tmp_path / "llama-server-version-standin", body)


def sleep_copy(tmp_path: Path, name: str) -> Path:
    """A copy of the sleep binary under another name: a process whose executable we own."""
    sleep = shutil.which("sleep")
    assert sleep is not None
    copy = tmp_path / name
    shutil.copy(os.path.realpath(sleep), copy)
    copy.chmod(0o755)
    return copy


@contextmanager
def running(argv: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    # Popen returns only after exec, so the process already shows its final executable.
    proc = subprocess.Popen(argv, start_new_session=True)
    try:
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def by_name(items: list[PreflightItem]) -> dict[str, PreflightItem]:
    return {item.name: item for item in items}
