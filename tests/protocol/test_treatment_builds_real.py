"""Builds as treatments on the real llama-server: two treatments name two binaries (the
provisioned one and a copy of its folder elsewhere), and each session records the build it ran:
its path, the sha256 of the binary and of its libraries, `--version` and /props' build."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_mtpsweep.rig.buildid import identify
from tests.sandbox import MACHINERY_MODEL, copy_experiments, only_run, prompt_dir

LADDER = """
question = "Does a copy of the build decode like the build?"
baseline = "here"
cycles = 2
max_tokens = 8
placement = "cpu"
[model]
path = "{model}"
id = "m"
[server]
args = ["--parallel", "1"]
port = 0
ctx_size = 2048
ready_timeout_s = 120
[[treatments]]
key = "here"
server_bin = "{here}"
[[treatments]]
key = "copy"
server_bin = "{copy}"
"""


def test_two_treatments_run_two_binaries_and_each_session_says_which(
    pytester: pytest.Pytester, server_bin: Path, machinery_model: Path
) -> None:
    # the folder, libraries included (llama-server finds them through RUNPATH $ORIGIN)
    copy = pytester.path / "other" / "bin"
    shutil.copytree(server_bin.parent, copy, symlinks=True)
    copied = copy / server_bin.name
    assert not copied.is_symlink()
    copy_experiments(
        pytester, {"builds": LADDER.format(model=MACHINERY_MODEL, here=server_bin, copy=copied)}
    )
    few = prompt_dir(pytester, ["prose_01"])
    # server_processes waived: another suite on this host may run the provisioned binary too
    result = pytester.runpytest(
        "experiments/", "--ladder=builds", f"--prompts-dir={few}", "--waive=server_processes"
    )
    result.assert_outcomes(passed=4)
    run = only_run(pytester.path)
    want = {"here": identify(server_bin), "copy": identify(copied)}
    assert want["here"].path != want["copy"].path
    sessions = [json.loads(p.read_text()) for p in sorted((run / "sessions").glob("*.json"))]
    assert [s["treatment"] for s in sessions] == ["here", "copy", "copy", "here"]
    for s in sessions:
        build = want[s["treatment"]]
        assert s["server_bin"] == build.path and s["server_identity"] == build.document()
        assert s["server_sha256"] == build.sha256 and s["argv"][0] == build.path
        assert s["server_version"] == "version: 0.6.0-dev (build 11434, commit 515e85511)"
        assert s["build_info"] == "b11434-515e85511" and not s.get("error")
    plan = json.loads((run / "plan.json").read_text())
    short = want["here"].sha256[:12]
    assert plan["keyed"]["server_build"] == (
        f"here=b11434-515e85511@{short},copy=b11434-515e85511@{short}"
    )
