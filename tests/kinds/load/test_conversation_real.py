"""A conversation ladder against the real llama-server and the embedded model (CPU), small: one
session, two conversations of three turns after a shared system prefix, the prompt cache on.
llama-server reports the prompt tokens it reused (`timings.cache_n`): they grow with the turns,
and the turns after the first, whose material and answers are cached, reach their first token
sooner than the first turns, which read their prompt's material."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kinds.load.test_load_kind import lines
from tests.sandbox import MACHINERY_MODEL, copy_experiments, only_run, servers_of

SMALL = f"""
kind = "load"
question = "Does the prompt cache bring a conversation's later turns their first token sooner?"
baseline = "none"
cycles = 1
max_tokens = 12
concurrency = [1]
prompt_set = "edit"
subset = "structured"
lag_bound_ms = 50.0
placement = "cpu"
[conversation]
turns = 3
conversations = 2
system_prefix_tokens = 256
[model]
path = "{MACHINERY_MODEL}"
id = "m"
[server]
args = ["--parallel", "1"]
port = 0
ctx_size = 2048
ready_timeout_s = 120
[[treatments]]
key = "none"
"""


def test_a_conversation_on_the_real_server_reuses_its_prompt(
    pytester: pytest.Pytester, server_bin: Path, machinery_model: Path
) -> None:
    copy_experiments(pytester, {"small-talk": SMALL})
    result = pytester.runpytest("experiments/", "--ladder=small-talk", "--no-calibration")
    result.assert_outcomes(passed=1)
    run_dir = only_run(pytester.path)
    reqs = [r for p in sorted((run_dir / "records").glob("*.jsonl")) for r in lines(p)
            if r["record"] == "request"]  # fmt: skip
    assert [(r["conversation"], r["turn"]) for r in reqs] == [(n, k) for n in (1, 2)
                                                              for k in (1, 2, 3)]  # fmt: skip
    assert all(r["valid"] and r["cache_status"] == "ok" for r in reqs)
    assert all(r["cache_source"] == "timings.cache_n" for r in reqs)
    assert all(r["timings"]["cache_n"] == r["cached_tokens"] for r in reqs)
    for n in (1, 2):
        mine = [r for r in reqs if r["conversation"] == n]
        cached = [r["cached_tokens"] for r in mine]
        # the block's warm-up left the shared prefix: the first turn reuses it, later turns more
        assert 0 < cached[0] < cached[1] < cached[2] < mine[2]["prompt_tokens_total"]
        new = [r["timings"]["prompt_n"] for r in mine]  # the tokens the server had to read
        assert new[1] < new[0] and new[2] < new[0]
    # (that a later turn's first token then comes sooner is the 0.5B model's to show: the tiny
    # model reads 100 tokens in about a millisecond, below the request's own noise)
    report = (run_dir / "analysis" / "report.md").read_text()
    assert "## Per turn" in report and "none at conc1: TTFT median" in report
    assert servers_of(server_bin) == []
