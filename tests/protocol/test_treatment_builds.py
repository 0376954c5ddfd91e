"""Builds as treatments: each session records the build it ran, and a session whose server is
not its treatment's build (the binary replaced on disk between sessions) is refused.

The replacement is made by a STUB wrapper around tests/stub_llama_server.py that rewrites
itself when it starts (a real llama-server cannot be made to be replaced mid-run on demand);
the same path with real builds runs in tests/protocol/test_treatment_builds_real.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mtpsweep.rig.buildid import file_sha256
from tests.protocol.test_session import run_stub
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
server_bin = "{b_bin}"
"""


def _project(pytester: pytest.Pytester, b_bin: Path) -> Path:
    copy_experiments(pytester)
    model = pytester.path / "model.gguf"
    model.write_bytes(FAKE_GGUF)
    text = LADDER.format(model=model, b_bin=b_bin)
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
