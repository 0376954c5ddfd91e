"""The load kind against the real llama-server and the embedded model (CPU), small: one cycle
pair, 1 and 2 in flight on two slots, two requests a level. The client's HTTP/1.1 reader meets
the real server's chunked streams and keep-alive, every chunk carries its `timings`, and the
server's own witnesses (/props slots, /slots, /metrics) are read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kinds.load.test_load_kind import lines
from tests.sandbox import MACHINERY_MODEL, copy_experiments, only_run, prompt_dir, servers_of

SMALL = f"""
kind = "load"
question = "Does ngram-simple change latency at 1 and 2 requests in flight on the small model?"
baseline = "none"
cycles = 2
max_tokens = 8
concurrency = [1, 2]
requests = 2
warmup_requests = 1
lag_bound_ms = 50.0
placement = "cpu"
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


def test_a_small_load_ladder_on_the_real_server(
    pytester: pytest.Pytester, server_bin: Path, machinery_model: Path
) -> None:
    copy_experiments(pytester, {"small-load": SMALL})
    few = prompt_dir(pytester, ["structured_01", "structured_02"])
    result = pytester.runpytest(
        "experiments/", "--ladder=small-load", f"--prompts-dir={few}", "--no-calibration"
    )
    result.assert_outcomes(passed=8)
    run_dir = only_run(pytester.path)
    records = [r for p in sorted((run_dir / "records").glob("*.jsonl")) for r in lines(p)]
    reqs = [r for r in records if r["record"] == "request"]
    levels = [r for r in records if r["record"] == "level"]
    assert len(reqs) == 16 and len(levels) == 8
    assert all(r["valid"] and r["http_status"] == 200 and r["usage_status"] == "ok" for r in reqs)
    # llama-server sends `timings` in every chunk when asked: each chunk's tokens are known
    assert {r["token_basis"] for r in reqs} == {"timings"}
    assert all(sum(r["chunk_tokens"]) <= r["output_tokens"] for r in reqs)
    # <=: a fast model's chunks can all arrive in one read on a busy host (the tiny one did)
    assert all(0 < r["ttft_ms"] <= r["e2e_ms"] for r in reqs)
    for level in levels:
        assert level["total_slots"] == 2 and level["queued"] == 0  # 2 in flight on 2 slots
        assert level["occupancy"]["source"] == "/slots and /metrics"
        # None: no 0.25 s sample fell inside the level (the tiny model's levels can be shorter)
        assert (level["occupancy"]["busy_slots_max"] or 0) <= 2
    conc2 = [r for r in levels if r["level"] == "conc2"]
    assert all(r["max_in_flight"] == 2 for r in conc2)
    rows = (run_dir / "analysis" / "load_contrasts.csv").read_text().splitlines()
    assert any(row.startswith("ngram,none,e2e,conc2,") for row in rows)
    session = json.loads((run_dir / "sessions" / "01_none_c1.json").read_text())
    assert session["released"] is True and session["total_slots"] == 2
    assert servers_of(server_bin) == []
