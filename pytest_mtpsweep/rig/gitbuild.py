"""A llama.cpp git commit (a treatment's `server_commit`) built for this CPU into a prefix of
its own, kept, and reused by the next session or run.

Fetched with git into a temporary folder (`git fetch --depth 1` of the commit; a whole clone
when the repository refuses a shallow fetch of a sha, or the sha is abbreviated), configured
and built by CMake with rig/build.py's flags (native, without AMX) and the defines that make
`--version` name the commit, then only `llama-server` is copied into
`builds/llama.cpp-<commit>-<cpu key>/prefix/bin/`. Linked statically (`BUILD_SHARED_LIBS=OFF`)
because the binary leaves its build tree, whose RUNPATH would otherwise point at a deleted
folder. `prefix.json` holds the digest of the prefix and the repository it came from; a prefix
whose files or repository differ is built again. Every tool runs from an argv list in a
process group of its own, bounded, and killed as one on timeout or Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO

from ..base.errors import ProvisionError
from ..base.fileio import atomic_write_json, cache_dir
from ..base.redact import redact_url, redact_urls
from . import build
from .build import Say
from .cachefiles import last_line, locked, read_stamp
from .prefix import STAMP, bin_digest

PROJECT = "llama.cpp"
FETCH_TIMEOUT_S = 600.0  # a shallow fetch of llama.cpp is ~30 MB; a whole clone ~400 MB
GIT_TIMEOUT_S = 60.0  # a local git step (init, checkout, rev-parse)
SHA = re.compile(r"[0-9a-fA-F]{7,40}")  # a full or short sha; any other name must be a tag
TAG_NUMBER = re.compile(r"b(\d{1,7})")  # llama.cpp's release tags: b11434 is build 11434
# git never asks for a password (a private URL fails instead of waiting on a prompt forever).
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}


def build_dir(commit: str, key: str | None = None) -> Path:
    return cache_dir() / "builds" / f"{PROJECT}-{commit}-{key or build.cpu_key()}"


def server_path(prefix: Path) -> Path:
    return prefix / "bin" / "llama-server"


def build_number(commit: str) -> str:
    """The build number `--version` shows: a release tag's own, else 0 (a shallow fetch has no
    history to count, and a made-up number would look like a release)."""
    match = TAG_NUMBER.fullmatch(commit)
    return match.group(1) if match else "0"


def cmake_argv(source: Path, out: Path, commit: str, sha: str) -> list[list[str]]:
    """The configure and build commands: the llama-server target, named by its commit."""
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    return [
        [
            "cmake",
            "-S",
            str(source),
            "-B",
            str(out),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DBUILD_SHARED_LIBS=OFF",
            "-DLLAMA_CURL=OFF",
            "-DLLAMA_BUILD_TESTS=OFF",
            f"-DLLAMA_BUILD_NUMBER={build_number(commit)}",
            f"-DLLAMA_BUILD_COMMIT={sha[:9]}",
        ],
        [
            "cmake",
            "--build",
            str(out),
            "--target",
            "llama-server",
            "--config",
            "Release",
            "-j",
            jobs,
        ],
    ]


def compile_flags() -> dict[str, str]:
    """rig/build.py's build environment (CFLAGS without AMX on x86-64), its CMAKE_ARGS aside:
    here the defines are CMake's own arguments."""
    return {k: v for k, v in build.build_env().items() if k != "CMAKE_ARGS"}


def ensure_commit(commit: str, repo: str, *, say: Say = print) -> Path:
    """The llama-server of `commit` in `repo`, built for this CPU in a prefix of its own.

    One build at a time per commit (a lock file); the fetch is bounded by FETCH_TIMEOUT_S, the
    build by rig/build.py's BUILD_TIMEOUT_S."""
    where = build_dir(commit)
    where.mkdir(parents=True, exist_ok=True)
    prefix = where / "prefix"
    with locked(where / "prefix.lock"):
        if _stamped(prefix, repo):
            return server_path(prefix)
        for tool in ("git", "cmake"):
            if shutil.which(tool) is None:
                raise ProvisionError(
                    f"building llama.cpp commit {commit} needs {tool}, which is not on PATH; "
                    "install it, or build that commit yourself and name it with server_bin."
                )
        say(
            f"building llama.cpp commit {commit} from {redact_url(repo)} for this CPU (about 8 min on 2 "
            "idle cores; kept for next time)."
        )
        log = where / "build.log"
        log.write_bytes(b"")
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="mtpsweep-git-") as tmp:
            source = Path(tmp) / "src"
            sha = _checkout(commit, repo, source, log)
            _install(_compile(commit, sha, source, Path(tmp) / "build", log), prefix)
        atomic_write_json(
            prefix / STAMP,
            {
                "commit": commit,
                "sha": sha,
                "repo": redact_url(repo),  # a token in it is never written down
                "cpu_key": build.cpu_key(),
                "build_env": compile_flags(),
                "digest": bin_digest(server_path(prefix).parent),
                "build_s": round(time.monotonic() - t0, 1),
                "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
        )
    return server_path(prefix)


def _stamped(prefix: Path, repo: str) -> bool:
    stamp = read_stamp(prefix / STAMP)
    digest = bin_digest(server_path(prefix).parent)
    ok = (
        digest is not None
        and stamp.get("digest") == digest
        and stamp.get("repo") == redact_url(repo)
        and stamp.get("cpu_key") == build.cpu_key()  # a prefix copied from another CPU's folder
    )
    return ok and os.access(server_path(prefix), os.X_OK)


def _checkout(commit: str, repo: str, source: Path, log: Path) -> str:
    """Fetch `commit` from `repo` into `source` and check it out; its full sha. A name that is
    not a sha is looked up among the tags alone: a branch moves, so a build under its name
    would be reused after it did."""
    what = f"llama.cpp commit {commit} from {repo}"
    name = commit if SHA.fullmatch(commit) else f"refs/tags/{commit}"
    _git(["init", "-q", str(source)], log, what)
    fetched = run_logged(
        ["git", "-C", str(source), "fetch", "-q", "--depth", "1", repo, name],
        log,
        FETCH_TIMEOUT_S,
        env=GIT_ENV,
    )
    if fetched is None:
        raise _failed(f"fetching {what} took over {FETCH_TIMEOUT_S:.0f} s", log, _NETWORK_FIX)
    if fetched != 0:
        # A repository may refuse a shallow fetch of a sha (and an abbreviated sha cannot be
        # fetched by name at all): clone it whole and look the commit up there.
        shutil.rmtree(source, ignore_errors=True)
        cloned = run_logged(
            ["git", "clone", "-q", "--no-checkout", repo, str(source)],
            log,
            FETCH_TIMEOUT_S,
            env=GIT_ENV,
        )
        if cloned != 0:
            late = "took over" if cloned is None else "failed"
            raise _failed(f"fetching {what} {late}", log, _NETWORK_FIX)
    ref = "FETCH_HEAD" if fetched == 0 else name
    found = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--verify", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        check=False,
        env=_env(GIT_ENV),
    )
    with log.open("a") as out:
        out.write(redact_url(found.stdout + found.stderr))
    if found.returncode != 0:
        raise _failed(
            f"{repo} has no commit or tag {commit}",
            log,
            "a branch is no build, as it moves: name a commit (7 to 40 hex digits) or tag that "
            "exists there",
        )
    sha = found.stdout.strip()
    # hex digits that git took as a ref's name: a tag of that name is a build, a branch not
    if (
        name == commit
        and not sha.lower().startswith(commit.lower())
        and _resolve(source, repo, f"refs/tags/{commit}", log, shallow=fetched == 0) != sha
    ):
        raise _failed(
            f"{repo} has no commit {commit}: git took it for a branch of that name",
            log,
            "a branch is no build, as it moves: name a commit (7 to 40 hex digits) or tag "
            "that exists there",
        )
    _git(["-C", str(source), "checkout", "-q", "--detach", sha], log, what)
    return sha


def _resolve(source: Path, repo: str, ref: str, log: Path, *, shallow: bool) -> str | None:
    """The commit `ref` names (fetched first when the checkout is shallow), or None."""
    if shallow:
        argv = ["git", "-C", str(source), "fetch", "-q", "--depth", "1", repo, ref]
        if run_logged(argv, log, FETCH_TIMEOUT_S, env=GIT_ENV) != 0:
            return None
        ref = "FETCH_HEAD"
    found = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--verify", "-q", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        check=False,
        env=_env(GIT_ENV),
    )
    return found.stdout.strip() or None if found.returncode == 0 else None


_NETWORK_FIX = "check server_repo's URL and the network, or point server_repo at a local mirror"


def _git(args: list[str], log: Path, what: str) -> None:
    if run_logged(["git", *args], log, GIT_TIMEOUT_S, env=GIT_ENV) != 0:
        raise _failed(f"git {args[0]} for {what} failed", log, "check git and the disk")


def _compile(commit: str, sha: str, source: Path, out: Path, log: Path) -> Path:
    """Configure and build the llama-server target; the built binary."""
    timeout = build.BUILD_TIMEOUT_S
    for argv in cmake_argv(source, out, commit, sha):
        started = time.monotonic()
        rc = run_logged(argv, log, timeout, env=compile_flags())
        timeout -= time.monotonic() - started
        if rc != 0:
            late = f"took over {build.BUILD_TIMEOUT_S:.0f} s" if rc is None else "failed"
            raise _failed(
                f"building llama-server at llama.cpp commit {commit} {late}",
                log,
                "install a C++ compiler and cmake (or name a commit that builds), then run again",
            )
    built = [p for p in sorted(out.rglob("llama-server")) if p.is_file()]
    if not built:
        raise _failed(
            f"building llama.cpp commit {commit} made no llama-server",
            log,
            "name a commit whose CMake project has a llama-server target",
        )
    return built[0]


def _install(binary: Path, prefix: Path) -> None:
    """The binary alone into a fresh folder beside the prefix, then moved in."""
    fresh = prefix.with_name(prefix.name + ".partial")
    shutil.rmtree(fresh, ignore_errors=True)
    server_path(fresh).parent.mkdir(parents=True)
    shutil.copy2(binary, server_path(fresh))
    shutil.rmtree(prefix, ignore_errors=True)
    os.replace(fresh, prefix)


def _failed(what: str, log: Path, fix: str) -> ProvisionError:
    """One sentence: what failed, the log's last line, where the whole log is, and the fix."""
    last = last_line(log)[:200] or "no output"
    return ProvisionError(redact_url(f"{what} ({last}); the whole log is {log}: {fix}."))


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    return {**os.environ, **(extra or {})}


def run_logged(
    argv: list[str], log: Path, timeout: float, *, env: dict[str, str] | None = None
) -> int | None:
    """Run `argv` (a list, never a shell string) with its output appended to `log`; its exit
    status, or None when it ran past `timeout`. It leads a process group of its own, killed
    whole on timeout or Ctrl-C, so no compiler or git helper outlives it. The command line, and
    git's output (which may quote the repository's URL), reach the log through redact_url."""
    with log.open("ab") as out:
        out.write(("$ " + " ".join(redact_urls(argv)) + "\n").encode())
        out.flush()
        if argv[0] != "git":
            return _wait(argv, out, timeout, env)
        with tempfile.TemporaryFile() as raw:
            rc = _wait(argv, raw, timeout, env)
            raw.seek(0)
            for line in raw:
                out.write(redact_url(line.decode(errors="replace")).encode())
        return rc


def _wait(
    argv: list[str], out: IO[bytes], timeout: float, env: dict[str, str] | None
) -> int | None:
    proc = subprocess.Popen(
        argv,
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=_env(env),
        start_new_session=True,
    )
    try:
        return proc.wait(timeout=max(timeout, 1.0))
    except subprocess.TimeoutExpired:
        _kill(proc)
        return None
    except BaseException:
        _kill(proc)
        raise


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
