"""A real second server implementation: llama-cpp-python's OpenAI-compatible server (the
registry's `llama-cpp-python[server]`, built from its sdist; the `second-server` extra) on the
embedded model, attached through ladders.

What it is, as measured (llama-cpp-python 0.3.36): streamed chat with one content event per
token and no llama.cpp `timings`; NO usage in a stream, even with
`stream_options.include_usage`; usage in a non-streamed answer; `/v1/models` lists the model by
its path (or `--model_alias`), and every response's `model` is the model's path; no `/health`,
`/props` or `/metrics`. So a decode run of it stops at its first warm-up, which (streamed like
every measurement) carries no usage: the session is set aside twice and the run stops by its
rule, saying why, before it measures anything; an authoring run (non-streamed, with usage) runs
to its outcomes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.kinds.authoring import records
from pytest_mtpsweep.rig.net import free_port
from tests.sandbox import copy_experiments, only_run, started_by_hand

pytest.importorskip("llama_cpp.server", reason="the second-server extra (scripts/dev installs it)")

DECODE = """
question = "What does a run of llama-cpp-python's server measure?"
baseline = "a"
cycles = 1
max_tokens = 16
[model]
id = "qwen2.5-coder-0.5b"
[server]
ctx_size = 2048
ready_timeout_s = 5
[[treatments]]
key = "a"
base_url = "{url}"
served_model = "{model}"
[[treatments]]
key = "b"
base_url = "{url}"
served_model = "{model}"
"""


@pytest.fixture(scope="module")
def lcp(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's server on the embedded model, started and stopped by the test."""
    port = free_port("127.0.0.1")
    log_path = tmp_path_factory.mktemp("lcp") / "server.log"
    argv = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path),
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
            "--n_threads", "2"]  # fmt: skip
    # llama-cpp-python's server has no /health: it is up once it lists its model
    with started_by_hand(argv, f"http://127.0.0.1:{port}", "/v1/models", log_path) as (_, url):
        yield url


def _records(run: Path, folder: str) -> list[dict[str, object]]:
    return [json.loads(line) for f in sorted((run / folder).glob("*.jsonl"))
            for line in f.read_text().splitlines()]  # fmt: skip


@pytest.mark.server
def test_a_decode_run_says_what_the_second_server_lacks(
    pytester: pytest.Pytester, lcp: str, model_path: Path
) -> None:
    copy_experiments(pytester, {"lcp": DECODE.format(url=lcp, model=model_path)})
    few = pytester.path / "few"
    few.mkdir()
    for i in (1, 2):
        (few / f"prose_{i:02d}.txt").write_text(f"Write sentence number {i}.")
    result = pytester.runpytest("experiments/", "--ladder=lcp", f"--prompts-dir={few}",
                                "--boot=1000")  # fmt: skip
    out = result.stdout.str()
    # its warm-up (a streamed request like every measurement) carries no usage: the session is
    # set aside, retried once, and the run stops by its rule before measuring anything
    assert "WARMUP-FAILED-TWICE=01_a_c1" in out and "no usage in the stream" in out
    run = only_run(pytester.path)
    pre = {i["name"]: i for i in json.loads((run / schema.PREFLIGHT_FILE).read_text())}
    assert pre["endpoint:a"]["verdict"] == "pass"  # it answers and serves the model asked for
    assert f"models {model_path}" in pre["endpoint:a"]["observed"]
    assert (run / schema.STOPPED_FILE).is_file()
    assert _records(run, schema.RECORDS_DIR) == []  # nothing was measured as if it were valid
    reasons = sorted((run / "quarantine").rglob("reason.txt"))
    assert len(reasons) == 2 and all("no usage in the stream" in p.read_text() for p in reasons)


AUTHORING = """
kind = "authoring"
question = "Does an authoring run reach its outcomes against llama-cpp-python's server?"
baseline = "plain"
cohorts = ["plain", "doctest"]
tasks = ["t4_count_zeros"]
max_turns = 2
repeats = 1
max_tokens = 128
temperature = 0.0
seed = 42
[[subjects]]
key = "lcp"
base_url = "{url}"
served_model = "{model}"
[checker]
timeout_s = 20
[api]
timeout_s = 300
"""


@pytest.mark.server
def test_an_authoring_run_against_the_second_server(
    pytester: pytest.Pytester, lcp: str, model_path: Path
) -> None:
    copy_experiments(pytester, {"lcp-auth": AUTHORING.format(url=lcp, model=model_path)})
    result = pytester.runpytest("experiments/", "--ladder=lcp-auth")
    result.assert_outcomes(passed=2)
    run = only_run(pytester.path)
    cells = _records(run, records.CELLS_DIR)
    assert len(cells) == 2 and all(c["outcome"] in records.INFORMATIVE_OUTCOMES for c in cells)
    turns = _records(run, records.TURNS_DIR)
    # non-streamed answers carry usage, and the response names the model by its path
    assert all(int(str(t["completion_tokens"])) > 0 for t in turns)
    assert {t["response_model"] for t in turns} == {str(model_path)}
