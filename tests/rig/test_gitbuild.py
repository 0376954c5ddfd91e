"""A llama.cpp commit built into a prefix of its own (rig/gitbuild.py): fetched with git, built
with CMake for this CPU without AMX, kept and reused, rebuilt when tampered with, and every
failure one sentence naming its log.

The repository is a STAND-IN made in tmp_path: a CMakeLists.txt whose `llama-server` target is
a small C file printing `version: 1 (<LLAMA_BUILD_COMMIT>)`. A real llama.cpp build takes
about 8 min on 2 cores, too long for the suite, and github.com does not resolve from this host;
the fetch, the build, the prefix and the identity path are the real ones.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from pytest_mtpsweep.base.errors import ProvisionError
from pytest_mtpsweep.rig import build, gitbuild
from pytest_mtpsweep.rig.buildid import identify

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("cmake") is None or shutil.which("cc") is None,
    reason="needs git, cmake and a C compiler",
)

CMAKE = """cmake_minimum_required(VERSION 3.10)
project(standin C)
set(LLAMA_BUILD_COMMIT "unknown" CACHE STRING "the commit --version names")
set(LLAMA_BUILD_NUMBER 0 CACHE STRING "the build number --version names")
add_executable(llama-server server.c)
target_compile_definitions(llama-server PRIVATE LLAMA_BUILD_COMMIT="${LLAMA_BUILD_COMMIT}"
                           LLAMA_BUILD_NUMBER=${LLAMA_BUILD_NUMBER})
"""
SERVER_C = """#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--version") == 0) {
            fprintf(stderr, "version: 1 (%s)\\n", LLAMA_BUILD_COMMIT);
            return 0;
        }
    return 2;
}
"""
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def standin_repo(where: Path, source: str = SERVER_C) -> tuple[Path, str]:
    """A git repository with the stand-in llama-server, tagged b42; its path and HEAD's sha."""
    where.mkdir(parents=True)
    (where / "CMakeLists.txt").write_text(CMAKE)
    (where / "server.c").write_text(source)
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "one"], ["tag", "b42"]):
        subprocess.run([*GIT, "-C", str(where), *argv], check=True, capture_output=True)
    sha = subprocess.run(
        ["git", "-C", str(where), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    return where, sha


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, dict[str, Any]]]:
    """Every process gitbuild starts: its argv and keyword arguments (the real one still runs)."""
    seen: list[tuple[Any, dict[str, Any]]] = []
    real = subprocess.Popen

    def spy(argv: Any, **kwargs: Any) -> Any:
        seen.append((argv, kwargs))
        return real(argv, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", spy)
    return seen


def test_a_commit_is_built_once_kept_and_names_itself(
    cache: Path, tmp_path: Path, calls: list[tuple[Any, dict[str, Any]]]
) -> None:
    repo, sha = standin_repo(tmp_path / "repo")
    calls.clear()  # the stand-in's own git commands
    said: list[str] = []
    binary = gitbuild.ensure_commit(sha, str(repo), say=said.append)
    assert binary == cache / "builds" / f"llama.cpp-{sha}-{build.cpu_key()}/prefix/bin/llama-server"
    assert len(said) == 1 and f"building llama.cpp commit {sha} from {repo}" in said[0]
    # --version names the checked-out commit, and so does the identity each session records
    assert identify(binary).version == f"version: 1 ({sha[:9]})"
    assert identify(binary).build == f"b1-{sha[:9]}"
    # every tool ran from an argv list, never a shell string, in a process group of its own
    assert calls and all(isinstance(a, list) and not k.get("shell") for a, k in calls)
    tools = [(a, k) for a, k in calls if a[0] in ("git", "cmake") and "rev-parse" not in a]
    assert len(tools) == 5 and all(k["start_new_session"] for _, k in tools)
    cmake = [(a, k) for a, k in tools if a[0] == "cmake"]
    assert [a[1] for a, _ in cmake] == ["-S", "--build"]
    assert f"-DLLAMA_BUILD_COMMIT={sha[:9]}" in cmake[0][0]
    assert "--target" in cmake[1][0] and "llama-server" in cmake[1][0]
    for key, value in build.build_env().items():  # the same no-AMX flags as the pip build
        if key != "CMAKE_ARGS":
            assert cmake[0][1]["env"][key] == value == build.NO_AMX_FLAGS
    # the second time (another session, another run): the stamped prefix, nothing built
    mtime = binary.stat().st_mtime_ns
    started = len(calls)
    assert gitbuild.ensure_commit(sha, str(repo), say=said.append) == binary
    assert len(calls) == started and len(said) == 1 and binary.stat().st_mtime_ns == mtime
    # a prefix whose binary changed is built again
    binary.write_bytes(b"tampered")
    gitbuild.ensure_commit(sha, str(repo), say=said.append)
    assert len(said) == 2 and identify(binary).version == f"version: 1 ({sha[:9]})"


def test_a_tag_and_a_short_sha_from_a_file_url_build(cache: Path, tmp_path: Path) -> None:
    repo, sha = standin_repo(tmp_path / "repo")
    quiet: list[str] = []
    tagged = gitbuild.ensure_commit("b42", repo.as_uri(), say=quiet.append)
    assert identify(tagged).version == f"version: 1 ({sha[:9]})"
    short = gitbuild.ensure_commit(sha[:8], repo.as_uri(), say=quiet.append)  # a whole clone
    assert identify(short).version == identify(tagged).version
    assert gitbuild.build_number("b42") == "42" and gitbuild.build_number(sha) == "0"
    # the same name from another repository is not taken for the kept build
    assert len(quiet) == 2
    gitbuild.ensure_commit("b42", str(repo), say=quiet.append)
    assert len(quiet) == 3 and "from " + str(repo) in quiet[-1]


def test_an_unknown_commit_is_one_sentence_naming_its_log(cache: Path, tmp_path: Path) -> None:
    repo, _ = standin_repo(tmp_path / "repo")
    with pytest.raises(ProvisionError) as err:
        gitbuild.ensure_commit("deadbeef1", str(repo), say=lambda _: None)
    text = str(err.value)
    assert text.startswith(f"{repo} has no commit or tag deadbeef1 (") and "\n" not in text
    assert text.endswith("name a commit (7 to 40 hex digits) or tag that exists there.")
    assert "a branch is no build" in text
    log = Path(text.split("the whole log is ")[1].split(":")[0])
    assert log.is_file() and "git" in log.read_text()


def test_a_branch_is_no_build_even_where_lint_cannot_know_it(cache: Path, tmp_path: Path) -> None:
    # round six (issue 50): a branch was built, and reused under its name after it moved
    repo, _ = standin_repo(tmp_path / "repo")
    for argv in (["branch", "-M", "master"], ["branch", "feature"], ["branch", "deadbee"]):
        subprocess.run([*GIT, "-C", str(repo), *argv], check=True, capture_output=True)
    for branch in ("feature", "master"):
        with pytest.raises(ProvisionError, match=f"has no commit or tag {branch} "):
            gitbuild.ensure_commit(branch, repo.as_uri(), say=lambda _: None)
    # hex digits git takes for a branch's name, from a file URL and from a local path
    for url in (repo.as_uri(), str(repo)):
        with pytest.raises(ProvisionError, match="git took it for a branch of that name"):
            gitbuild.ensure_commit("deadbee", url, say=lambda _: None)
    assert not list((cache / "builds").glob("*/prefix/bin/llama-server"))


@pytest.mark.parametrize("repo", ["missing-repo", "https://mirror.invalid/llama.cpp"])
def test_an_unreachable_repository_is_refused(cache: Path, tmp_path: Path, repo: str) -> None:
    url = str(tmp_path / repo) if "://" not in repo else repo
    with pytest.raises(ProvisionError) as err:
        gitbuild.ensure_commit("b42", url, say=lambda _: None)
    text = str(err.value)
    assert (
        text.startswith(f"fetching llama.cpp commit b42 from {url} failed (") and "\n" not in text
    )
    assert "or point server_repo at a local mirror." in text


@pytest.mark.parametrize(
    "repo",
    [
        "https://mirror.invalid/llama.cpp?private_token=S3CRET",
        "git+https://S3CRET@mirror.invalid/llama.cpp",
        "https://u:S3CRET@mirror.invalid/llama.cpp#S3CRET",
    ],
)
def test_a_token_in_any_url_form_is_never_said_nor_logged(
    cache: Path, tmp_path: Path, repo: str
) -> None:
    # round six (issue 50): `?private_token=` and `TOKEN@` were echoed, on the terminal and in
    # build.log (the loader refuses these; the build must not leak what reaches it anyway)
    said: list[str] = []
    with pytest.raises(ProvisionError) as err:
        gitbuild.ensure_commit("b42", repo, say=said.append)
    assert "S3CRET" not in str(err.value) and "S3CRET" not in " ".join(said)
    assert said and "mirror.invalid" in said[0]
    logs = list((cache / "builds").rglob("build.log"))
    assert logs and all(b"S3CRET" not in p.read_bytes() for p in logs)
    assert b"mirror.invalid" in logs[0].read_bytes()  # the log still says where it fetched


def test_a_compile_error_names_its_log(cache: Path, tmp_path: Path) -> None:
    repo, sha = standin_repo(tmp_path / "repo", source="int main(void) { return nope; }\n")
    with pytest.raises(ProvisionError) as err:
        gitbuild.ensure_commit(sha, str(repo), say=lambda _: None)
    text = str(err.value)
    assert text.startswith(f"building llama-server at llama.cpp commit {sha} failed (")
    assert "install a C++ compiler and cmake" in text and "\n" not in text
    log = Path(text.split("the whole log is ")[1].split(":")[0])
    assert "nope" in log.read_text()  # the compiler's own complaint is kept
    assert not (gitbuild.build_dir(sha) / "prefix").exists()


def test_a_missing_tool_is_named(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "git" else tool)
    with pytest.raises(ProvisionError, match=r"^building llama.cpp commit b42 needs git, which"):
        gitbuild.ensure_commit("b42", "/nowhere", say=lambda _: None)


def test_a_timed_out_tool_is_killed_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    log = tmp_path / "log"
    argv = ["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"]
    t0 = time.monotonic()
    assert gitbuild.run_logged(argv, log, 1.0) is None
    assert time.monotonic() - t0 < 30
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if psutil.Process(child).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail("the tool's child outlived its timeout")
