"""Attach mode against a REAL llama-server that the test starts itself, outside the plugin (as a
launcher, a container or another host would): the run measures it, every response's alias is
witnessed, the session files say which witnesses could not apply, and nothing is stopped."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.protocol.attach import ATTACHED_NOT_APPLICABLE, NOT_APPLICABLE
from tests.sandbox import copy_experiments, only_run, server_by_hand

ALIAS = "by-hand"
LADDER = """
question = "Is a llama-server started by hand measured with the witnesses that apply?"
baseline = "a"
cycles = 1
max_tokens = 8
[model]
id = "qwen2.5-coder-0.5b"
chat_template_sha256 = "55b2f4a26ac9ee719330a61a0c39d9e538b0e9322212f048326318cff4f8674a"
[server]
ctx_size = 2048
ready_timeout_s = 5
[[treatments]]
key = "a"
base_url = "{url}/v1"
served_model = "{alias}"
flags_command = ["cat", "/proc/{pid}/cmdline"]
[[treatments]]
key = "b"
args = ["--parallel", "1"]
base_url = "{url}"
served_model = "{alias}"
ready_url = "/health"
"""


@pytest.fixture
def by_hand(
    server_bin: Path, machinery_model: Path, tmp_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """A llama-server the test starts and stops itself; the plugin only attaches to it."""
    flags = ("--alias", ALIAS, "--ctx-size", "2048", "--parallel", "1", "--threads", "1")
    with server_by_hand(server_bin, machinery_model, tmp_path / "by-hand.log", *flags) as (
        proc,
        url,
    ):
        proc.url = url  # type: ignore[attr-defined]
        yield proc


@pytest.mark.server
def test_a_server_started_by_hand_is_measured_witnessed_and_left_running(
    pytester: pytest.Pytester, by_hand: subprocess.Popen[bytes], server_bin: Path
) -> None:
    url: str = by_hand.url  # type: ignore[attr-defined]
    ladder = LADDER.format(url=url, alias=ALIAS, pid=by_hand.pid)
    copy_experiments(pytester, {"by-hand": ladder})
    few = pytester.path / "few"
    few.mkdir()
    for i in (1, 2):
        (few / f"prose_{i:02d}.txt").write_text(f"Write sentence number {i}.")
    result = pytester.runpytest(
        "experiments/", "--ladder=by-hand", f"--prompts-dir={few}", "--boot=1000"
    )
    result.assert_outcomes(passed=4)
    rd = only_run(pytester.path)
    recs = [
        json.loads(line)
        for f in sorted((rd / schema.RECORDS_DIR).glob("*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    assert len(recs) == 4
    for r in recs:
        assert r["valid"] and r["server_alias"] == ALIAS, r["reason"]
        assert r["interval_basis"] == "server_timings" and r["decode_rate_tps_primary"] > 0
    sessions = {
        p.stem.split("_")[1]: json.loads(p.read_text())
        for p in (rd / schema.SESSIONS_DIR).glob("*.json")
    }
    for key, info in sessions.items():
        assert info["rig"] == "attached" and info["base_url"] == url, key
        assert info["released"] == NOT_APPLICABLE and "release" not in info
        assert "pid" not in info and "rss_after_load_bytes" not in info
        for name in ATTACHED_NOT_APPLICABLE:
            assert info["not_applicable"][name] == NOT_APPLICABLE, (key, name)
        assert info["n_ctx"] == 2048 and info["served_models"] == [ALIAS]
        assert info["chat_template_sha256"] and info["props_stable"] is True
    # a: its argv from /proc through flags_command (NUL-separated), checked for its flags
    a = sessions["a"]
    assert a["argv"][:1] == [str(server_bin)] and "--alias" in a["argv"]
    assert a["argv_source"] == f"flags_command ['cat', '/proc/{by_hand.pid}/cmdline']"
    assert "argv" not in a["not_applicable"]
    assert sessions["b"]["not_applicable"]["argv"].startswith(NOT_APPLICABLE)
    pre = {i["name"]: i for i in json.loads((rd / schema.PREFLIGHT_FILE).read_text())}
    assert (
        pre["endpoint:a"]["verdict"] == "pass"
        and f"models {ALIAS}" in pre["endpoint:a"]["observed"]
    )
    # nothing was stopped: the server the test started still runs and answers
    assert by_hand.poll() is None
    assert httpx.get(f"{url}/health", timeout=5).status_code == 200
    assert not (rd / schema.LIVE_SERVERS_FILE).exists() or json.loads(
        (rd / schema.LIVE_SERVERS_FILE).read_text()
    ) in ([], {})
