"""Running a checker on model-written code: the code is assumed hostile.

Each check gets a fresh temporary directory, a scrubbed environment (an allow-list: no API key
or any other variable of the run reaches it), stdin closed, a wall-clock timeout, capped output
and the jail (`jail.py`: namespaces where the platform grants them, rlimits, `nobody` when run
as root). Whatever the artefact does — hang, fork, fill the disk, print megabytes — the check
ends as a verdict with a reason, and no process of it is left behind: the jail's process group
and every descendant are killed, and with a PID namespace the kernel kills the rest.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from ... import schema
from .ladder import CheckerLimits

JAIL = Path(__file__).with_name("jail.py")
SETUP_FAILED = 121
# pytest's statuses: 0 passed, 1 tests failed, 2 interrupted (the artefact does not import),
# 3 internal error, 4 usage error, 5 no tests collected. The artefact runs inside the checker's
# process, so any abnormal end is the artefact's doing (a SystemExit on import is an internal
# error; a checker's tests are checked to exist when the task loads) — except a usage error,
# which is ours, and the jail's own setup failure.
USAGE_ERROR = 4
_SIGNALS = {
    signal.SIGXCPU: "the CPU-time limit",
    signal.SIGXFSZ: "the file-size limit",
    signal.SIGKILL: "SIGKILL (a hard limit: CPU time or memory)",
    signal.SIGSEGV: "a crash (SIGSEGV)",
}


@dataclass(frozen=True)
class Check:
    """What one check said."""

    verdict: str  # schema.VERDICT_PASS, VERDICT_FAIL or VERDICT_CHECKER_ERROR
    exit_code: int | None
    duration_s: float
    reason: str | None  # beyond failed tests: a timeout, a limit, too much output
    output: str  # capped; the work directory's path replaced by "."
    isolation: Mapping[str, Any] = field(default_factory=dict)


def scrubbed_env(workdir: str) -> dict[str, str]:
    """The checker's whole environment: nothing of ours is inherited."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONIOENCODING": "utf-8",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # not even this plugin loads in there
    }


def interpreter_paths() -> list[str]:
    """Where the checker's Python lives: a jail that drops to `nobody` exposes these even when
    they sit under a directory nobody may enter (a Python installed under /root)."""
    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    return sorted(p for p in paths if not any(p.startswith(q + os.sep) for q in paths))


def checker_argv(checker: str) -> list[str]:
    return [sys.executable, "-B", "-m", "pytest", "-q", "-x", "--no-header", "--tb=short",
            "-p", "no:cacheprovider", checker]  # fmt: skip


def _kill_all(proc: subprocess.Popen[bytes]) -> None:
    """The jail, its process group and every descendant (a namespace's PID 1 takes the rest)."""
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        kids = []
    for p in kids:
        with contextlib.suppress(psutil.Error):
            p.kill()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()


def _collect(proc: subprocess.Popen[bytes], limits: CheckerLimits) -> tuple[bytes, str | None]:
    """Read stdout+stderr until EOF, the timeout, or the cap; kill on the last two."""
    assert proc.stdout is not None
    cap = limits.output_kib * 1024
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + limits.timeout_s
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                _kill_all(proc)
                return b"".join(chunks), f"timed out after {limits.timeout_s:g} s"
            if not sel.select(timeout=min(left, 1.0)):
                continue
            data = os.read(proc.stdout.fileno(), 65536)
            if not data:
                break
            chunks.append(data)
            size += len(data)
            if size > cap:
                _kill_all(proc)
                return b"".join(chunks)[:cap], f"printed more than {limits.output_kib} KiB"
    try:
        proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill_all(proc)
        return b"".join(chunks), f"timed out after {limits.timeout_s:g} s"
    return b"".join(chunks), None


def _verdict(status: int, out: str, cut: str | None) -> tuple[str, str | None]:
    if cut is not None:
        return schema.VERDICT_FAIL, cut
    if status < 0:
        what = _SIGNALS.get(signal.Signals(-status), signal.Signals(-status).name)
        return schema.VERDICT_FAIL, f"killed by {what}"
    if status == SETUP_FAILED and out.startswith("jail:"):
        return schema.VERDICT_CHECKER_ERROR, out.strip().splitlines()[-1]
    if status == 0:
        # An artefact that calls os._exit(0) on import must not pass: pytest must say so.
        if re.search(r"\b\d+ passed\b", out) and not re.search(r"\b(failed|error)", out):
            return schema.VERDICT_PASS, None
        return schema.VERDICT_FAIL, "the checker ended 0 without reporting a passed test"
    if status == USAGE_ERROR:
        return schema.VERDICT_CHECKER_ERROR, "the checker could not run (pytest usage error)"
    if status in (1, 2):
        return schema.VERDICT_FAIL, None
    return schema.VERDICT_FAIL, f"the checker ended abnormally (pytest status {status})"


def run_check(files: Mapping[str, str], checker: str, limits: CheckerLimits) -> Check:
    """Run `checker` (one of `files`) on the artefact in the jail; always returns a Check."""
    t0 = time.monotonic()
    top = Path(tempfile.mkdtemp(prefix="mtpsweep-check-"))
    stage, box = top / "stage", top / "box"
    stage.mkdir()
    box.mkdir()
    for name, text in files.items():
        (stage / name).write_text(text, encoding="utf-8")
    os.chmod(top, 0o755)  # nobody must reach box/ when the jail drops to it
    read_fd, write_fd = os.pipe()
    cfg = {
        "stage": str(stage),
        "box": str(box),
        "argv": checker_argv(checker),
        "env": scrubbed_env(str(box)),
        "report_fd": write_fd,
        "expose": interpreter_paths(),
        **{k: getattr(limits, k) for k in ("cpu_s", "memory_mib", "file_mib", "tmp_mib", "nproc")},
    }
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(JAIL), json.dumps(cfg)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=scrubbed_env(str(box)),
            pass_fds=(write_fd,),
            start_new_session=True,  # its own process group, killed as one
        )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        shutil.rmtree(top, ignore_errors=True)
        return Check(schema.VERDICT_CHECKER_ERROR, None, 0.0, f"cannot start: {exc}", "")
    os.close(write_fd)
    try:
        raw, cut = _collect(proc, limits)
    finally:
        _kill_all(proc)  # whatever it left in its group goes too
        report = _read_report(read_fd)
        shutil.rmtree(top, ignore_errors=True)
    out = raw.decode("utf-8", errors="replace").replace(str(box), ".")
    verdict, reason = _verdict(proc.returncode, out, cut)
    return Check(verdict, proc.returncode, time.monotonic() - t0, reason, out, report)


def _read_report(fd: int) -> dict[str, Any]:
    with os.fdopen(fd, "rb") as f:
        data = f.read(65536)
    try:
        report = json.loads(data) if data else {}
    except ValueError:
        report = {}
    return report if isinstance(report, dict) else {}


PROBE_ARTEFACT = "def answer():\n    return 42\n"
PROBE_CHECKER = "from solution import answer\n\n\ndef test_answer():\n    assert answer() == 42\n"


def probe(limits: CheckerLimits) -> Check:
    """A trivial check, for preflight: does pytest run in the jail, and what is isolated?"""
    return run_check(
        {"solution.py": PROBE_ARTEFACT, "checker.py": PROBE_CHECKER}, "checker.py", limits
    )
