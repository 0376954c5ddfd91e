"""Judging model-written code: the grader runs the checker, the candidate runs the artefact.

The artefact is assumed hostile. Each check starts two jails (`jail.py`: namespaces where the
platform grants them, rlimits, `nobody` when run as root, a minimal root of read-only paths):
the **grader** runs the task's checker under pytest, and imports as `solution` a proxy
(`proxy.py`) whose every call crosses as plain data (`wire.py`) to the **candidate**, which runs
the artefact in its own process (`candidate.py`) and sees no checker, task, grader process or
host file beyond the interpreter (`views.py`). The verdict is read from the grader's own report
(`grader.py`: test ids collected and their outcomes, written to a descriptor only the grader
holds): green only when collected == passed > 0. Output text and exit status never decide it.
A task that declares `checking = "in-process"` runs the artefact inside the grader as before
and its verdicts are marked forgeable. Whatever either side does — hang, fork, fill the disk,
print megabytes — the check ends as a verdict with a reason, and no process of it is left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from ....kindapi.rig import exit_of
from .. import records
from ..ladder import CheckerLimits
from . import views
from .proxy import STUB

HERE = Path(__file__).parent
JAIL = HERE / "jail.py"
SETUP_FAILED = 121
# What each jail is given beside the task's files: (file here, name in the jail).
GRADER_FILES = (("grader.py", "mtpsweep_grader.py"),)
PROXY_FILES = (("proxy.py", "mtpsweep_proxy.py"), ("wire.py", "mtpsweep_wire.py"))
CANDIDATE_FILES = (("candidate.py", "mtpsweep_candidate.py"), ("wire.py", "mtpsweep_wire.py"))
ARTEFACT = "solution.py"
# In a jail these signals are our limits, not faults of the code: say which limit.
_SIGNALS = {
    signal.SIGXCPU: "SIGXCPU (the CPU-time limit)",
    signal.SIGXFSZ: "SIGXFSZ (the file-size limit)",
    signal.SIGKILL: "SIGKILL (a hard limit: CPU time or memory)",
}


@dataclass(frozen=True)
class Check:
    """What one check said."""

    verdict: str  # records.VERDICT_PASS, VERDICT_FAIL or VERDICT_CHECKER_ERROR
    exit_code: int | None  # the grader's
    duration_s: float
    reason: str | None  # beyond failed tests: a timeout, a limit, too much output
    output: str  # capped; the work directories' paths replaced by "."
    isolation: Mapping[str, Any] = field(default_factory=dict)
    collected: int = 0  # test ids the grader collected
    passed: int = 0  # of those, passed (from the grader's report)
    forgeable: bool = False  # the artefact ran inside the grader: it could write the report


def scrubbed_env(workdir: str) -> dict[str, str]:
    """A jail's whole environment: nothing of ours is inherited."""
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
    """Where the grader's Python lives (the fallback jail, without a minimal root, exposes these
    even under a directory nobody may enter, such as a Python installed under /root)."""
    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    return sorted(p for p in paths if not any(p.startswith(q + os.sep) for q in paths))


def checker_argv(checker: str) -> list[str]:
    return [
        sys.executable,
        "-B",
        "-m",
        "pytest",
        "-q",
        "-x",
        "--no-header",
        "--tb=short",
        "-p",
        "no:cacheprovider",
        "-p",
        "mtpsweep_grader",
        checker,
    ]


def candidate_argv(channel: tuple[int, int]) -> list[str]:
    # -E -s -S: no environment, no site; unlike -I, the script's directory (the artefact's) is
    # on the path
    return [
        views.base_python(),
        "-E",
        "-s",
        "-S",
        "-B",
        "mtpsweep_candidate.py",
        *map(str, channel),
    ]


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


@dataclass
class _Jail:
    """One started jail: its process, its output so far, and its isolation report's pipe."""

    name: str
    proc: subprocess.Popen[bytes]
    report_fd: int
    box: str
    out: list[bytes] = field(default_factory=list)
    ended: int | None = None  # its status if it ended by itself, before we ended it
    stopped: bool = False

    def stop(self) -> None:
        """End it (once), keeping the status it had ended with by itself, if any."""
        if not self.stopped:
            self.ended, self.stopped = self.proc.poll(), True
            _kill_all(self.proc)  # whatever it left in its group goes too


def _start(
    name: str,
    top: Path,
    files: Mapping[str, bytes],
    argv: list[str],
    env: dict[str, str],
    fds: Sequence[int],
    limits: CheckerLimits,
) -> _Jail:
    """Stage `files`, start the jail on them; the caller closes `fds` (now the child's)."""
    stage, box, root = top / f"{name}-stage", top / name, top / f"{name}-root"
    for d in (stage, box, root):
        d.mkdir()
    stage.chmod(0o700)  # read by the jail before it drops to nobody; never by the other side
    for fname, data in files.items():
        (stage / fname).write_bytes(data)
    read_fd, write_fd = os.pipe()
    view = views.grader_view() if name == "grader" else views.candidate_view()
    cfg = {
        "stage": str(stage),
        "box": str(box),
        "argv": argv,
        "env": env,
        "report_fd": write_fd,
        "expose": interpreter_paths(),
        "root": {"dir": str(root), "expose": list(view.expose), "hide": list(view.hide)},
        **{k: getattr(limits, k) for k in ("cpu_s", "memory_mib", "file_mib", "tmp_mib", "nproc")},
    }
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(JAIL), json.dumps(cfg)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=scrubbed_env(str(box)),
            pass_fds=(write_fd, *fds),
            start_new_session=True,  # its own process group, killed as one
        )
    finally:
        os.close(write_fd)
    return _Jail(name, proc, read_fd, str(box))


def _collect(jails: Sequence[_Jail], limits: CheckerLimits) -> str | None:
    """Read every jail's output until the grader ends (then the candidate is ended too), the
    timeout, or the output cap; returns why it was cut short, or None."""
    cap, size = limits.output_kib * 1024, 0
    deadline = time.monotonic() + limits.timeout_s
    grader, cut = jails[0], None
    with selectors.DefaultSelector() as sel:
        for j in jails:
            assert j.proc.stdout is not None
            sel.register(j.proc.stdout, selectors.EVENT_READ, j)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                cut = f"timed out after {limits.timeout_s:g} s"
                break
            for key, _ in sel.select(timeout=min(left, 0.2)):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                key.data.out.append(data)
                size += len(data)
            if size > cap:
                cut = f"printed more than {limits.output_kib} KiB"
                break
            if grader.proc.poll() is not None and len(sel.get_map()) < len(jails):
                # the grader is done and its output read: the candidate has nothing left to do
                for j in jails[1:]:
                    j.stop()
                deadline = min(deadline, time.monotonic() + 1.0)
    for j in jails:
        j.stop()
    return cut


def _read_json(fd: int) -> dict[str, Any]:
    with os.fdopen(fd, "rb") as f:
        data = f.read(1 << 20)
    try:
        report = json.loads(data) if data else {}
    except ValueError:
        report = {}
    return report if isinstance(report, dict) else {}


def _text(jail: _Jail, cap: int) -> str:
    raw = b"".join(jail.out)[:cap]
    return raw.decode("utf-8", errors="replace").replace(jail.box, ".")


def _staged(
    files: Mapping[str, str], in_process: bool
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The grader's files and the candidate's (none when the artefact runs in the grader)."""
    own = {n: (HERE / f).read_bytes() for f, n in GRADER_FILES}
    task = {n: t.encode("utf-8") for n, t in files.items()}
    if in_process:
        return {**own, **task}, {}
    proxy = {n: (HERE / f).read_bytes() for f, n in PROXY_FILES}
    grader = {**own, **proxy, **task, ARTEFACT: STUB.encode("utf-8")}
    candidate = {n: (HERE / f).read_bytes() for f, n in CANDIDATE_FILES}
    return grader, {**candidate, ARTEFACT: task[ARTEFACT]}


def run_check(
    files: Mapping[str, str], checker: str, limits: CheckerLimits, in_process: bool = False
) -> Check:
    """Run `checker` (one of `files`) on the artefact (`solution.py` in `files`); always returns
    a Check. `in_process` runs the artefact inside the grader: its verdict is forgeable."""
    t0 = time.monotonic()
    top = Path(tempfile.mkdtemp(prefix="mtpsweep-check-"))
    os.chmod(top, 0o755)  # nobody must reach the boxes when a jail drops to it
    grader_files, candidate_files = _staged(files, in_process)
    fds: list[int] = []
    jails: list[_Jail] = []
    try:
        result_r, result_w = os.pipe()
        fds += [result_r, result_w]
        env = {**scrubbed_env(str(top / "grader")), "MTPSWEEP_REPORT_FD": str(result_w)}
        child_fds = [result_w]
        if not in_process:
            g2c, c2g = os.pipe(), os.pipe()
            fds += [*g2c, *c2g]
            env |= {
                "MTPSWEEP_CALL_FDS": f"{c2g[0]},{g2c[1]}",
                "MTPSWEEP_CALL_TIMEOUT": repr(float(limits.call_timeout_s)),
                "MTPSWEEP_IMPORT_TIMEOUT": repr(float(limits.timeout_s)),
            }
            child_fds += [c2g[0], g2c[1]]
        jails.append(
            _start("grader", top, grader_files, checker_argv(checker), env, child_fds, limits)
        )
        if not in_process:
            cand_env = scrubbed_env(str(top / "candidate"))
            jails.append(
                _start(
                    "candidate",
                    top,
                    candidate_files,
                    candidate_argv((g2c[0], c2g[1])),
                    cand_env,
                    (g2c[0], c2g[1]),
                    limits,
                )
            )
        for fd in fds[1:]:
            os.close(fd)  # the children hold them now; EOF reaches each side when the other ends
        fds = fds[:1]
        cut = _collect(jails, limits)
        result = _read_json(result_r)
        fds = []
    except OSError as exc:
        for j in jails:
            j.stop()
        return Check(records.VERDICT_CHECKER_ERROR, None, 0.0, f"cannot start: {exc}", "")
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        isolation = {j.name: _read_json(j.report_fd) for j in jails}
        shutil.rmtree(top, ignore_errors=True)
    return _verdict_of(jails, result, cut, isolation, limits, in_process, t0)


def _verdict_of(
    jails: list[_Jail],
    result: dict[str, Any],
    cut: str | None,
    isolation: dict[str, Any],
    limits: CheckerLimits,
    in_process: bool,
    t0: float,
) -> Check:
    """The Check once both boxes ended: their output (capped), the verdict and its reason."""
    cap = limits.output_kib * 1024
    out = _text(jails[0], cap)
    setup = [j for j in jails if j.ended == SETUP_FAILED and _text(j, cap).startswith("jail:")]
    if len(jails) > 1:
        said = _text(jails[1], cap).strip()
        if said:
            out = f"{out.rstrip()}\n--- the solution's own output ---\n{said}\n"
        out = out.encode("utf-8")[:cap].decode("utf-8", errors="ignore")
    status = jails[0].proc.returncode
    reason: str | None
    if setup:
        verdict, reason = (
            records.VERDICT_CHECKER_ERROR,
            _text(setup[0], cap).strip().splitlines()[-1],
        )
    else:
        verdict, reason = judge(result, status, cut, in_process)
        if reason is None and verdict == records.VERDICT_FAIL and len(jails) > 1:
            reason = _signalled(jails[1].ended, "the solution was killed by")
    iso = dict(isolation.get("candidate") or isolation.get("grader") or {})
    iso["boundary"] = "in-process (forgeable)" if in_process else "process"
    iso["grader"] = isolation.get("grader", {})
    collected, passed = tally(result)
    return Check(
        verdict, status, time.monotonic() - t0, reason, out, iso, collected, passed, in_process
    )


def tally(result: Mapping[str, Any]) -> tuple[int, int]:
    """(collected, passed) from the grader's report."""
    collected = result.get("collected")
    outcomes = result.get("outcomes")
    if not isinstance(collected, list) or not isinstance(outcomes, dict):
        return 0, 0
    return len(collected), sum(1 for c in collected if outcomes.get(c) == "passed")


def judge(
    result: Mapping[str, Any], status: int | None, cut: str | None, in_process: bool
) -> tuple[str, str | None]:
    """The verdict from the grader's report alone (its exit status only says why none came)."""
    if cut is not None:
        return records.VERDICT_FAIL, cut
    if status is not None and status < 0:
        return records.VERDICT_FAIL, _signalled(status, "killed by")
    if result.get("complete") is not True:
        if in_process:  # the artefact ran in the grader: ending it is the artefact's doing
            return records.VERDICT_FAIL, "the checker ended without its report"
        return (
            records.VERDICT_CHECKER_ERROR,
            f"the checker ended without its report ({_ended(status)}); run the task's checker "
            "by hand",
        )
    collected, passed = tally(result)
    if collected == 0 and not result.get("collect_errors"):
        return records.VERDICT_CHECKER_ERROR, "the checker collected no test"
    if collected > 0 and passed == collected:
        return records.VERDICT_PASS, None
    return records.VERDICT_FAIL, None


def _ended(status: int | None) -> str:
    return "no status" if status is None else str(exit_of(status))


def _signalled(status: int | None, words: str) -> str | None:
    if status is None or status >= 0:
        return None
    end = exit_of(status)
    if end.signal is None:
        return f"{words} signal {-status}"
    return f"{words} {_SIGNALS.get(end.signal) or end.signal_words}"


PROBE_ARTEFACT = "def answer():\n    return 42\n"
PROBE_CHECKER = "from solution import answer\n\n\ndef test_answer():\n    assert answer() == 42\n"


def probe(limits: CheckerLimits) -> Check:
    """A trivial check, for preflight: does pytest run in the jails, and what is isolated?"""
    return run_check({ARTEFACT: PROBE_ARTEFACT, "checker.py": PROBE_CHECKER}, "checker.py", limits)
