"""Preflight items about what the run uses: models, server build, launchers, harness, files."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ..rig.digests import file_digest
from ..rig.gguf import CHAT_TEMPLATE, GGUFError, read_metadata, template_identity
from ..rig.modelfile import gguf_problem
from ..rig.version import build_matches, parse_server_version, version_output
from .items import FAIL, PASS, SKIP, PreflightItem, make_item, nearest_existing, one_line

GIT_TIMEOUT_S = 30.0


# --------------------------------------------------------------------------- files


def check_models(
    paths: Sequence[Path], *, cache: Path | None, verify: bool = False
) -> list[PreflightItem]:
    """Size, mtime and sha256 of each model file, one item each."""
    unique = list(dict.fromkeys(paths))
    return [
        _model_item(name, path, cache, verify)
        for name, path in zip(model_names(unique), unique, strict=True)
    ]


def model_names(paths: Sequence[Path]) -> list[str]:
    unique = list(dict.fromkeys(paths))
    # Two files of the same name in different folders would share a waiver name otherwise.
    counts = Counter(path.name for path in unique)
    return [f"model:{p.name}" if counts[p.name] == 1 else f"model:{p}" for p in unique]


def _model_item(name: str, path: Path, cache: Path | None, verify: bool) -> PreflightItem:
    expected = "readable GGUF file; size, mtime, sha256 recorded"
    if not path.is_file():
        fix = f"Put the model file at {path}, or correct the model path in the ladder."
        return make_item(name, expected, f"missing: {path}", FAIL, fix=fix)
    problem = gguf_problem(path)
    if problem is not None:
        # A server would fail on it six times over (once per session): say so before any start.
        fix = f"Point --model at a GGUF model file; {path} may be cut short, so fetch it again."
        return make_item(name, expected, f"{problem}: {path}", FAIL, fix=fix)
    try:
        info = path.stat()
        digest = file_digest(path, cache=cache, verify=verify)
    except OSError as exc:
        fix = f"Make {path} readable by this user."
        return make_item(name, expected, f"unreadable: {path}: {exc.strerror}", FAIL, fix=fix)
    observed = f"{info.st_size:,} bytes, mtime {_iso_utc(info.st_mtime_ns)}, sha256 {digest}"
    return make_item(name, expected, observed, PASS)


def _iso_utc(mtime_ns: int) -> str:
    # Microseconds, so a touch within the same second still reads as a change.
    stamp = datetime.fromtimestamp(mtime_ns // 10**9, UTC).replace(
        microsecond=(mtime_ns // 1000) % 10**6
    )
    return stamp.isoformat(timespec="microseconds").replace("+00:00", "Z")


def check_launchers(launchers: dict[str, tuple[Path, str | None]]) -> list[PreflightItem]:
    """Each launcher script's sha256 against its pinned digest, one item each."""
    return [_launcher_item(name, path, pin) for name, (path, pin) in launchers.items()]


def _launcher_item(name: str, path: Path, pin: str | None) -> PreflightItem:
    item_name = f"launcher:{name}"
    expected = f"sha256 {pin}" if pin else "any (no pinned sha256)"
    if not path.is_file():
        fix = f"Put launcher {name} back at {path}, or correct its path."
        return make_item(item_name, expected, f"missing: {path}", FAIL, fix=fix)
    digest = file_digest(path, cache=None)
    observed = f"sha256 {digest}"
    if pin is None or pin.strip().lower() == digest:
        return make_item(item_name, expected, observed, PASS)
    fix = (
        f"Restore {path} to the pinned version, or pin sha256 {digest} if the change is deliberate."
    )
    return make_item(item_name, expected, observed, FAIL, fix=fix)


def check_ladder_file(path: Path) -> PreflightItem:
    """The ladder definition's sha256."""
    expected = "readable ladder file"
    if not path.is_file():
        fix = f"Create the ladder at {path}, or name an existing ladder."
        return make_item("ladder_file", expected, f"missing: {path}", FAIL, fix=fix)
    digest = file_digest(path, cache=None)
    return make_item("ladder_file", expected, f"{path}: sha256 {digest}", PASS, stable=digest)


def check_run_dir(run_dir: Path) -> PreflightItem:
    """The run directory does not exist yet and can really be created where it is asked for."""
    expected = "does not exist yet"
    if run_dir.exists() or run_dir.is_symlink():
        fix = f"Choose a new run id or move {run_dir} away; a run directory is never reused."
        return make_item("run_dir", expected, f"exists: {run_dir}", FAIL, fix=fix)
    parent = nearest_existing(run_dir)
    problem = _uncreatable(parent)
    if problem is not None:
        fix = f"Put the run under a writable directory (pass --run-dir), not under {parent}."
        return make_item("run_dir", expected, problem, FAIL, fix=fix)
    return make_item("run_dir", expected, f"new: {run_dir}", PASS)


def _uncreatable(parent: Path) -> str | None:
    # Permission bits say little about /proc, /sys or a read-only mount: try it for real.
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if parent.resolve().parts[1:2] in (("proc",), ("sys",), ("dev",)):
        return f"{parent} is a kernel pseudo-filesystem"
    try:
        probe = tempfile.mkdtemp(prefix=".mtpsweep-probe-", dir=parent)
    except OSError as exc:
        return f"cannot create under {parent}: {exc.strerror or exc}"
    os.rmdir(probe)
    return None


def check_server_version(server_bin: Path | None, expected_build: str | None) -> PreflightItem:
    """``server_bin --version`` parses and names the expected build."""
    expected = f"build {expected_build}" if expected_build else "any build (none pinned)"
    if server_bin is None:
        return make_item(
            "server_version", expected, "skipped: no server binary of ours is run", SKIP
        )
    problem = _unrunnable(server_bin)
    if problem is not None:
        fix = f"Build or install llama-server at {server_bin}, or point the run at the right one."
        return make_item("server_version", expected, problem, FAIL, fix=fix)
    output = version_output(server_bin)
    version = parse_server_version(output)
    if version is None:
        fix = f"Check that {server_bin} is llama-server (it should print 'version: ...')."
        observed = f"unrecognised --version output: {output[:200]}"
        return make_item("server_version", expected, observed, FAIL, fix=fix)
    if expected_build and not build_matches(version, expected_build):
        fix = (
            f"Install build {expected_build} at {server_bin}, or set the expected build "
            f"to {version.commit or version.identity} if this build is the one you mean."
        )
        return make_item("server_version", expected, version.line, FAIL, fix=fix)
    return make_item("server_version", expected, version.line, PASS)


def _unrunnable(server_bin: Path) -> str | None:
    if not server_bin.is_file():
        return f"missing: {server_bin}"
    if not os.access(server_bin, os.X_OK):
        return f"not executable: {server_bin}"
    return None


# --------------------------------------------------------------------------- harness


def check_harness(package_version: str, experiments_dir: Path) -> PreflightItem:
    """Package version plus the experiments directory's git commit and dirty flag."""
    observed = f"pytest-mtpsweep {package_version}; experiments {_git_state(experiments_dir)}"
    return make_item("harness", "recorded", observed, PASS)


def _git_state(directory: Path) -> str:
    if not directory.is_dir():
        return f"directory missing: {directory}"
    inside = _git(directory, "rev-parse", "--is-inside-work-tree")
    if inside is None:
        return "git not found"
    if inside.returncode != 0:
        if "not a git repository" in inside.stderr:
            return "not a git repository"
        return f"git failed: {one_line(inside.stderr)}"
    head = _git(directory, "rev-parse", "--verify", "--quiet", "HEAD")
    if head is None or head.returncode != 0:
        return "no commits yet"
    status = _git(directory, "status", "--porcelain", "--", ".")
    dirty = status is None or status.returncode != 0 or bool(status.stdout.strip())
    return f"commit {head.stdout.strip()} ({'dirty' if dirty else 'clean'})"


def _git(directory: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    git = shutil.which("git")
    if git is None:
        return None
    # LC_ALL=C keeps the messages we match on in English; GIT_OPTIONAL_LOCKS=0 stops
    # `git status` from rewriting the index of a repository someone else is working in.
    env = {**os.environ, "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}
    try:
        return subprocess.run(
            [git, "-C", str(directory), *args],
            capture_output=True,
            text=True,
            errors="replace",
            env=env,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def check_chat_template(model: Path, pin: str | None) -> PreflightItem:
    """The chat template the model file carries (llama-server serves it unless told otherwise)."""
    expected = f"sha256 {pin}" if pin else "recorded (none pinned)"
    try:
        meta = read_metadata(model, [CHAT_TEMPLATE])
    except (OSError, GGUFError) as exc:
        fix = f"Check that {model} is a GGUF model file."
        return make_item("chat_template", expected, f"unreadable: {exc}", FAIL, fix=fix)
    sha, first = template_identity(meta.get(CHAT_TEMPLATE))
    if sha is None:
        observed = (
            "none in the GGUF: llama-server falls back to ChatML, which this model may not know"
        )
    else:
        observed = f"sha256 {sha}; first line {first!r}"
    if pin is None or pin.strip().lower() == sha:
        return make_item("chat_template", expected, observed, PASS)
    fix = (
        "Serve the model with the pinned template (--chat-template-file), or pin "
        f"chat_template_sha256 = {sha!r} if this template is the one you mean."
    )
    return make_item("chat_template", expected, observed, FAIL, fix=fix)
