"""Builds as treatments: each session records the build it ran, and a session whose server is
not its treatment's build (the binary replaced on disk between sessions) is refused.

The replacement is made by a STUB wrapper around tests/stub_llama_server.py that rewrites
itself when it starts (a real llama-server cannot be made to be replaced mid-run on demand);
the same path with real builds runs in tests/protocol/test_treatment_builds_real.py.

A `server_commit` treatment is built from a STAND-IN git repository (tests/rig/test_gitbuild.py)
whose `llama-server` is a small C wrapper: `--version` names the commit it was built at, and
otherwise it runs the stub server saying that build in /props (a real llama.cpp build takes
about 8 min on 2 cores, and github.com does not resolve from this host).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mtpsweep.rig.buildid import file_sha256
from tests.protocol.test_session import run_stub
from tests.rig.test_gitbuild import standin_repo
from tests.sandbox import FAKE_GGUF, STUB_SERVER, copy_experiments, only_run

LADDER = """
question = "Does a session refuse a server that is not its treatment's build?"
baseline = "a"
cycles = 2
max_tokens = 8
[model]
path = "{model}"
id = "stub"
[server]
port = 0
ready_timeout_s = 30
[[treatments]]
key = "a"
[[treatments]]
key = "b"
{b_build}
"""
# The stand-in llama-server of a commit: its own --version, else the stub as that build.
WRAPPER_C = """#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define Q(x) #x
#define S(x) Q(x)
int main(int argc, char **argv) {{
    (void)argc;
    for (int i = 1; argv[i]; i++)
        if (strcmp(argv[i], "--version") == 0) {{
            fprintf(stderr, "version: 0.0.0-stub (build %s, commit %s)\\n",
                    S(LLAMA_BUILD_NUMBER), LLAMA_BUILD_COMMIT);
            return 0;
        }}
    setenv("MTPSWEEP_STUB_BUILD_INFO", "b" S(LLAMA_BUILD_NUMBER) "-" LLAMA_BUILD_COMMIT, 1);
    execv("{stub}", argv);
    return 127;
}}
"""


def _project(pytester: pytest.Pytester, b_bin: Path | None, b_build: str = "") -> Path:
    copy_experiments(pytester)
    model = pytester.path / "model.gguf"
    model.write_bytes(FAKE_GGUF)
    text = LADDER.format(model=model, b_build=b_build or f'server_bin = "{b_bin}"')
    (pytester.path / "experiments" / "ladders" / "stub.toml").write_text(text)
    few = pytester.path / "few"
    few.mkdir()
    (few / "prose_01.txt").write_text("Write one sentence.")
    return few


def _sessions(run: Path) -> dict[str, dict[str, object]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((run / "sessions").glob("*.json"))}


def test_each_session_records_its_treatments_build(pytester: pytest.Pytester) -> None:
    b_bin = pytester.path / "other-build" / "stub_llama_server.py"
    b_bin.parent.mkdir()
    b_bin.write_bytes(STUB_SERVER.read_bytes() + b"\n# another build\n")
    b_bin.chmod(0o755)
    few = _project(pytester, b_bin)
    result = run_stub(pytester, few, "--no-calibration")
    assert result.ret == 0, result.stdout.str()[-3000:]
    run = only_run(pytester.path)
    sessions = _sessions(run)
    want = {"a": file_sha256(STUB_SERVER), "b": file_sha256(b_bin)}
    assert want["a"] != want["b"]
    for name, info in sessions.items():
        treatment = str(info["treatment"])
        assert info["server_sha256"] == want[treatment], name
        assert info["server_bin"] == str(b_bin.resolve() if treatment == "b" else STUB_SERVER)
        assert "build 1, commit 5tub5tub" in str(info["server_version"])
    # preflight proved each build starts and decodes, before any session
    verdicts = {i["name"]: i["verdict"] for i in json.loads((run / "preflight.json").read_text())}
    assert verdicts["server_runs"] == verdicts["server_runs:b"] == "pass", verdicts
    plan = json.loads((run / "plan.json").read_text())
    keyed = plan["keyed"]["server_build"]
    # both builds are named in the keyed field, so the run's own sessions pool
    assert keyed.startswith("a=b1-5tub5tub@") and ",b=b1-5tub5tub@" in keyed, keyed
    assert plan["servers"]["b"]["sha256"] == want["b"]
    assert plan["treatments"][1] == {"key": "b", "args": [], "server": str(b_bin)}


def test_a_binary_replaced_between_sessions_is_refused(pytester: pytest.Pytester) -> None:
    wrapper = pytester.path / "changing" / "llama-server"
    wrapper.parent.mkdir()
    # STUB: each session's start (alias stub-b; not --version, not preflight's smoke test)
    # appends a line to it, as a build copied over the binary between two sessions would
    # change its bytes.
    wrapper.write_text(
        "#!/usr/bin/env bash\n"
        'case " $* " in *" stub-b "*) echo "# started" >> "$0";; esac\n'
        f'exec {STUB_SERVER} "$@"\n'
    )
    wrapper.chmod(0o755)
    few = _project(pytester, wrapper)
    result = run_stub(pytester, few, "--no-calibration")
    out = result.stdout.str()
    assert result.ret == 1, out[-3000:]
    sessions = _sessions(only_run(pytester.path))
    first, later = sessions["02_b_c1"], sessions["03_b_c2"]
    assert not first.get("error"), first.get("error")
    error = str(later["error"])
    assert "is not the build the run resolved: its sha256 is" in error, error
    assert "was it replaced on disk?" in error
    assert error in out  # the session's tests fail with that one sentence
    assert not (only_run(pytester.path) / "records" / "03_b_c2.jsonl").exists() or not any(
        json.loads(line).get("valid")
        for line in (only_run(pytester.path) / "records" / "03_b_c2.jsonl").read_text().splitlines()
    )
    assert not sessions["04_a_c2"].get("error")  # the other treatment's sessions go on


def test_a_commit_treatment_is_built_and_each_session_records_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MTPSWEEP_CACHE", str(pytester.path / "cache"))
    repo, sha = standin_repo(pytester.path / "mirror", WRAPPER_C.format(stub=STUB_SERVER))
    few = _project(pytester, None, f'server_commit = "b42"\nserver_repo = "{repo.as_uri()}"')
    result = run_stub(pytester, few, "--no-calibration")
    assert result.ret == 0, result.stdout.str()[-3000:]
    run = only_run(pytester.path)
    built = {str(i["server_bin"]) for i in _sessions(run).values() if i["treatment"] == "b"}
    assert len(built) == 1 and "/builds/llama.cpp-b42-" in built.pop()
    for info in _sessions(run).values():
        if info["treatment"] == "b":  # the record names the commit the build was made at
            assert info["server_version"] == f"version: 0.0.0-stub (build 42, commit {sha[:9]})"
    plan = json.loads((run / "plan.json").read_text())
    assert plan["servers"]["b"]["build"] == f"b42-{sha[:9]}"
    assert plan["servers"]["b"]["source"] == f"treatment server_commit b42 from {repo.as_uri()}"
    assert plan["treatments"][1]["server"] == f"{repo.as_uri()}@b42"
    assert f",b=b42-{sha[:9]}@" in plan["keyed"]["server_build"]
