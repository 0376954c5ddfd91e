"""A trace replay against the real llama-server and the embedded model (CPU), small: ten records
of the shipped Azure excerpt at its own times, one session per treatment. The server counts the
prompt tokens of the replay's real text, answers each within its own max_tokens, and the
analysis pairs the two sessions by slot."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kinds.load.test_load_kind import lines
from tests.sandbox import MACHINERY_MODEL, copy_experiments, only_run, servers_of

SMALL = f"""
kind = "load"
question = "Does ngram-simple change latency on ten records of Azure's code trace?"
baseline = "none"
cycles = 1
max_tokens = 8
prompt_set = "edit"
subset = "structured"
warmup_requests = 0
lag_bound_ms = 50.0
placement = "cpu"
[trace]
path = "../traces/azure-code-2023-300.csv"
format = "azure"
limit = 10
input_scale = 0.02
[model]
path = "{MACHINERY_MODEL}"
id = "m"
[server]
args = ["--parallel", "2", "--kv-unified", "--metrics"]
port = 0
ctx_size = 2048
ready_timeout_s = 120
[[treatments]]
key = "none"
[[treatments]]
key = "ngram"
args = ["--spec-type", "ngram-simple"]
"""


@pytest.mark.server
def test_a_trace_replay_on_the_real_server(
    pytester: pytest.Pytester, server_bin: Path, machinery_model: Path
) -> None:
    copy_experiments(pytester, {"small-trace": SMALL})
    result = pytester.runpytest("experiments/", "--ladder=small-trace", "--no-calibration")
    result.assert_outcomes(passed=2)
    run_dir = only_run(pytester.path)
    records = [r for p in sorted((run_dir / "records").glob("*.jsonl")) for r in lines(p)]
    reqs = [r for r in records if r["record"] == "request"]
    assert len(reqs) == 20 and all(r["valid"] and r["usage_status"] == "ok" for r in reqs)
    by = {t: [r for r in reqs if r["treatment"] == t] for t in ("none", "ngram")}
    # the same text per slot in both sessions, and the server counted it as real tokens
    assert [r["fill_sha256"] for r in by["none"]] == [r["fill_sha256"] for r in by["ngram"]]
    assert all(r["prompt_tokens"] >= r["fill_chars"] / 8 for r in reqs)
    # each answer within its own cap: the trace's output length, capped by max_tokens
    assert all(r["output_tokens"] <= r["request_max_tokens"] <= 8 for r in reqs)
    assert {r["trace_line"] for r in reqs} == set(range(2, 12))
    contrasts = (run_dir / "analysis" / "load_contrasts.csv").read_text()
    assert "ngram,none,e2e,replay," in contrasts
    assert "## Replay" in (run_dir / "analysis" / "report.md").read_text()
    assert servers_of(server_bin) == []
