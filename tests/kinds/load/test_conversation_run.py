"""A conversation ladder through the whole protocol, against two STAND-IN streaming servers
attached (tests/stub_stream_schedule_server.py with its simulated prefix cache: the first
token waits 1 ms for every prompt token not cached). `a` keeps a prefix cache, `b` has none
(`--cache-entries 0`), so on the same turns a's TTFT falls as its cached tokens grow and b's
grows with the conversation; the records carry each request's (conversation, turn) slot and
its cached tokens, the report and report.html the per-turn table."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kinds.load.test_load_kind import STAND_IN, lines
from tests.sandbox import REPO, copy_experiments, only_run

LADDER = """
kind = "load"
question = "Does a prompt cache lower TTFT over a conversation's turns?"
baseline = "b"
cycles = 1
max_tokens = 6
concurrency = [2]
prompt_set = "edit"
subset = "structured"
lag_bound_ms = 50.0
[conversation]
turns = 3
conversations = 4
think_time_s = 0.02
system_prefix_tokens = 120
[model]
id = "stand-in"
[server]
[[treatments]]
key = "a"
base_url = "{a}"
served_model = "stand-in"
[[treatments]]
key = "b"
base_url = "{b}"
served_model = "stand-in"
"""
PREFILL_US = "1000"  # per prompt word not cached: turn 1 of an edit ~100 words, a follow-up ~15


def start(cache_entries: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(STAND_IN), "--ttft-ms", "5", "--itl-ms", "2", "--slots", "2",
         "--prefill-us-per-token", PREFILL_US, "--cache-entries", str(cache_entries)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("listening on "), line
    return proc, f"http://{line.split()[-1]}"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    procs = {"a": start(16), "b": start(0)}
    try:
        urls = {k: url for k, (_, url) in procs.items()}
        copy_experiments(pytester, {"talk": LADDER.format(**urls)})
        yield urls
    finally:
        for proc, _ in procs.values():
            proc.terminate()
            proc.wait(timeout=10)


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_conversation_ladder_records_turns_and_cache_hits(
    pytester: pytest.Pytester, project: dict[str, str]
) -> None:
    result = pytester.runpytest_subprocess(
        "experiments/", "-p", "no:cacheprovider", "--ladder=talk", "--no-calibration"
    )
    result.assert_outcomes(passed=2)
    run_dir = only_run(pytester.path)
    plan = json.loads((run_dir / "plan.json").read_text())
    conv = plan["load"]["conversation"]
    assert conv["turns"] == 3 and conv["conversations"] == 4 and plan["load"]["requests"] == 12
    assert plan["load"]["cache_prompt"] is True  # a conversation ladder's default

    reqs: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((run_dir / "records").glob("*.jsonl")):
        for r in lines(path):
            if r["record"] == "request":
                reqs.setdefault(r["treatment"], []).append(r)
    for t, mine in reqs.items():
        assert [(r["conversation"], r["turn"]) for r in mine] == [
            (n, k) for n in range(1, 5) for k in range(1, 4)
        ], t
        assert all(r["valid"] and r["cache_status"] == "ok" for r in mine), t
        # a conversation's turns share its prompt: the analysis' cluster
        assert all(len({r["prompt_id"] for r in mine if r["conversation"] == n}) == 1
                   for n in range(1, 5))  # fmt: skip
    # slots pair across treatments: the same prompt at the same (conversation, turn)
    assert [r["prompt_id"] for r in reqs["a"]] == [r["prompt_id"] for r in reqs["b"]]
    a_turn = {k: [r for r in reqs["a"] if r["turn"] == k] for k in (1, 2, 3)}
    b_turn = {k: [r for r in reqs["b"] if r["turn"] == k] for k in (1, 2, 3)}
    # a's cache holds the prefix from the block's warm-up, then each conversation's history
    assert all(r["cached_tokens"] > 0 for r in a_turn[1])
    assert all(r["cached_tokens"] / r["prompt_tokens_total"] > 0.8 for r in a_turn[3])
    assert all(r["cached_tokens"] == 0 for r in reqs["b"])

    def median(rs: list[dict[str, Any]]) -> float:
        v = sorted(float(r["ttft_ms"]) for r in rs)
        return (v[1] + v[2]) / 2

    # a: ~100 words to read at turn 1, ~15 at turn 3; b reads the whole conversation each time
    assert median(a_turn[3]) < median(a_turn[1]) / 2
    assert median(b_turn[3]) > median(b_turn[1])

    table = _csv(run_dir / "analysis" / "load_turns.csv")
    by = {(r["treatment"], r["turn"]): r for r in table}
    assert (
        float(by[("a", "3")]["cached_share"]) > 0.8 and float(by[("b", "3")]["cached_share"]) == 0
    )
    assert float(by[("a", "3")]["ttft_gain_pct"]) > 100  # paired by (conversation, turn)
    report = (run_dir / "analysis" / "report.md").read_text()
    assert "## Per turn" in report and "a at conc2: TTFT median" in report
    assert "ms at turn 3 with " in report
    html = (run_dir / "analysis" / "report.html").read_text()
    assert "Per turn" in html and "conversation/turn" in html
