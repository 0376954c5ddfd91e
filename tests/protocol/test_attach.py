"""Attach mode through pytest, against the STUB vLLM server (tests/stub_vllm_server.py, a
stand-in: vLLM does not install on this machine): `--base-url` on a one-treatment ladder,
preflight's endpoint row, a flags command, the not-applicable witnesses, the inter-chunk
fallback of the interval endpoint and the spec-decode counters read from `/metrics`.
The real llama-server started outside the plugin is in tests/protocol/test_attach_real.py."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.protocol.attach import ATTACHED_NOT_APPLICABLE, NOT_APPLICABLE
from tests.sandbox import copy_experiments, only_run
from tests.stub_vllm_server import Script, expected_counts, serve

MAX_TOKENS = 12
LADDER = """
question = "Is the attached vLLM server measured with every witness that applies?"
baseline = "none"
cycles = 1
max_tokens = {max_tokens}
[model]
id = "stub-vllm"
[server]
ctx_size = 4096
ready_timeout_s = 5
[[treatments]]
key = "none"
served_model = "stub-base"
{none}
[[treatments]]
key = "spec"
served_model = "stub-vllm"
args = ["--speculative-config"]
{spec}
"""


def flags(text: str) -> str:
    return f'flags_command = ["{sys.executable}", "-c", "print(\'{text}\')"]'


@pytest.fixture
def stub() -> Iterator[tuple[Script, str]]:
    script = Script()
    with serve(script) as url:
        yield script, url


def project(pytester: pytest.Pytester, none: str = "", spec: str = "", prompts: int = 3) -> Path:
    text = LADDER.format(max_tokens=MAX_TOKENS, none=none, spec=spec)
    copy_experiments(pytester, {"vllm": text})
    few = pytester.path / "few"
    few.mkdir()
    for i in range(1, prompts + 1):
        (few / f"prose_{i:02d}.txt").write_text(f"Write sentence number {i}.")
    return few


def run(pytester: pytest.Pytester, few: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "experiments/", "--ladder=vllm", f"--prompts-dir={few}", "--boot=1000", *args
    )


def records(run_dir: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for f in sorted((run_dir / schema.RECORDS_DIR).glob("*.jsonl"))
        for line in f.read_text().splitlines()
    ]


def session(run_dir: Path, treatment: str) -> dict[str, Any]:
    (only,) = sorted((run_dir / schema.SESSIONS_DIR).glob(f"*_{treatment}_c1.json"))
    return json.loads(only.read_text())  # type: ignore[no-any-return]


def test_two_attached_servers_metrics_and_the_inter_chunk_fallback(
    pytester: pytest.Pytester,
) -> None:
    base, spec = Script(served_model="stub-base"), Script()
    with serve(base) as base_url, serve(spec) as spec_url:
        few = project(
            pytester,
            none=f'base_url = "{base_url}/v1"\nmetrics = false',
            spec=f'base_url = "{spec_url}"\nmetrics = true\n'
            + flags("vllm serve m --speculative-config {}"),
        )
        result = run(pytester, few)
    result.assert_outcomes(passed=6)
    rd = only_run(pytester.path)
    chunks, drafted, accepted = expected_counts(MAX_TOKENS, spec)
    recs = [r for r in records(rd) if r["treatment"] == "spec"]
    assert len(recs) == 3
    for i, r in enumerate(recs):
        assert r["valid"] and r["server_alias"] == "stub-vllm"
        assert r["interval_basis"] == "inter_chunk" and r["content_chunks"] == chunks
        # one token per chunk: the interval rate undercounts by (chunks-1)/(tokens-1) exactly
        ratio = r["decode_rate_tps_interval"] / r["decode_rate_tps_primary"]
        assert ratio == pytest.approx((chunks - 1) / (MAX_TOKENS - 1))
        assert r["draft_source"] == "metrics"
        assert (r["draft_n"], r["draft_n_accepted"]) == (drafted, accepted)
        assert r["metrics_moved_between"] == (None if i == 0 else 0)
    assert {r["draft_source"] for r in records(rd) if r["treatment"] == "none"} == {None}
    info = session(rd, "spec")
    assert info["rig"] == "attached" and info["base_url"] == spec_url
    assert info["released"] == NOT_APPLICABLE
    for name in (*ATTACHED_NOT_APPLICABLE, "chat_template"):
        assert info["not_applicable"][name].startswith(NOT_APPLICABLE), name
    assert "argv" not in info["not_applicable"] and "served_context" not in info["not_applicable"]
    assert "argv" in session(rd, "none")["not_applicable"]
    assert info["n_ctx"] == 4096 and info["argv_source"].startswith("flags_command")
    assert "--speculative-config" in info["argv"]
    assert info["endpoint_identity"]["/version"] == {"version": "0.0.0-stub"}
    assert (rd / schema.flags_file(info["session"])).read_text().startswith("vllm serve m")
    assert info["spec_metrics"].startswith("read before and after each request")
    assert info["props_stable"] is True and info["props_end"] == {}  # /v1/models stood in
    assert session(rd, "none")["spec_metrics"].startswith("not read (metrics = false")
    pre = {i["name"]: i for i in json.loads((rd / schema.PREFLIGHT_FILE).read_text())}
    row = pre["endpoint:spec"]
    assert row["verdict"] == "pass" and "models stub-vllm" in row["observed"]
    assert "version version=0.0.0-stub" in row["observed"]
    assert pre["endpoint:none"]["verdict"] == "pass"
    report = (rd / schema.ANALYSIS_DIR / "report.md").read_text()
    assert "Interval endpoint on inter-chunk timing (none 3/3, spec 3/3)" in report
    assert "undercounted" in report


def test_base_url_attaches_the_selected_treatment(
    pytester: pytest.Pytester, stub: tuple[Script, str]
) -> None:
    _, url = stub
    few = project(pytester, spec=flags("vllm serve m --speculative-config {}"))
    result = run(pytester, few, f"--base-url={url}/v1", "-k", "c1-spec", "--no-analysis")
    result.assert_outcomes(passed=3, deselected=3)
    rd = only_run(pytester.path)
    assert {r["treatment"] for r in records(rd)} == {"spec"}
    info = session(rd, "spec")
    assert info["base_url"] == url and info["rig"] == "attached"
    # no `metrics` in the ladder: read because /metrics has the counters
    assert {r["draft_source"] for r in records(rd)} == {"metrics"}
    pre = {i["name"] for i in json.loads((rd / schema.PREFLIGHT_FILE).read_text())}
    assert "endpoint:spec" in pre and "endpoint:none" not in pre


def test_base_url_refuses_a_selection_of_two_treatments(
    pytester: pytest.Pytester, stub: tuple[Script, str]
) -> None:
    script, url = stub
    few = project(pytester)
    result = run(pytester, few, f"--base-url={url}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str() + result.stderr.str()
    assert "is one server, but the selected measurements span treatments none, spec" in out
    assert script.chats == 0


def test_an_unreachable_endpoint_stops_the_run_in_preflight(pytester: pytest.Pytester) -> None:
    few = project(pytester)
    result = run(pytester, few, "--base-url=http://127.0.0.1:9/v1", "-k", "c1-none")
    assert result.ret != 0
    out = result.stdout.str()
    assert "endpoint:none: Start the server at http://127.0.0.1:9 before the run" in out
    assert not list((pytester.path / "runs").glob("*/*/records/*.jsonl"))


def test_preflight_refuses_an_endpoint_that_serves_another_model(
    pytester: pytest.Pytester, stub: tuple[Script, str]
) -> None:
    script, url = stub
    script.served_model = "someone-else"
    few = project(pytester)
    result = run(pytester, few, f"--base-url={url}", "-k", "c1-spec")
    assert result.ret != 0
    assert "Set served_model of treatment spec to the model the server serves" in (
        result.stdout.str()
    )
    assert script.chats == 0


def test_declared_flags_missing_from_the_flags_command_refuse_the_session(
    pytester: pytest.Pytester, stub: tuple[Script, str]
) -> None:
    _, url = stub
    few = project(pytester, spec=flags("vllm serve m"))
    result = run(pytester, few, f"--base-url={url}", "-k", "c1-spec", "--no-analysis")
    assert result.ret != 0
    assert "argv (flags_command" in result.stdout.str()
    assert "lacks the treatment flags ['--speculative-config']" in result.stdout.str()


def test_metrics_true_without_counters_refuses_the_session(pytester: pytest.Pytester) -> None:
    script = Script(served_model="stub-base", speculative=False)
    with serve(script) as url:
        few = project(
            pytester, none=f'base_url = "{url}"\nmetrics = true', spec=f'base_url = "{url}"'
        )
        result = run(pytester, few, "-k", "c1-none", "--no-analysis")
    out = result.stdout.str()
    assert "shows no vllm:spec_decode_num_accepted_tokens_total (no spec_decode counters" in out
    assert "set metrics = false in the ladder" in out
    assert script.chats == 0


def test_one_server_swapped_between_sessions_as_the_seed_ran_it(
    pytester: pytest.Pytester, stub: tuple[Script, str]
) -> None:
    """`--base-url` with one treatment's sessions per invocation, the server swapped between
    them and the run continued with --resume: one run directory, one analysis."""
    script, url = stub
    few = project(pytester, spec=flags("vllm serve m --speculative-config {}"))
    script.served_model, script.speculative = "stub-base", False
    run(pytester, few, f"--base-url={url}/v1", "-k", "c1-none").assert_outcomes(
        passed=3, deselected=3
    )
    rd = only_run(pytester.path)
    script.served_model, script.speculative = "stub-vllm", True  # the other server is up now
    result = run(pytester, few, f"--base-url={url}/v1", "-k", "c1-spec", f"--resume={rd}")
    result.assert_outcomes(passed=3, deselected=3)
    assert only_run(pytester.path) == rd
    assert sorted(r["treatment"] for r in records(rd)) == ["none"] * 3 + ["spec"] * 3
    assert (
        "Interval endpoint on inter-chunk timing"
        in (rd / schema.ANALYSIS_DIR / "report.md").read_text()
    )


@pytest.mark.parametrize(
    ("where", "needle"),
    [
        ('flags_command = ["no-such-flags-cmd-xyz"]', "no-such-flags-cmd-xyz was not found"),
        (f'flags_command = ["{sys.executable}", "-c", "raise SystemExit(1)"]', "exit 1"),
        (f'flags_command = ["{sys.executable}", "-c", "pass"]', "printed no argv"),
        ('flags_file = "no-such-flags-file.txt"', "cannot be read"),
    ],
    ids=["not found", "exits 1", "prints nothing", "file missing"],
)
def test_a_flags_source_that_cannot_give_the_argv_stops_the_run_in_preflight(
    pytester: pytest.Pytester, stub: tuple[Script, str], where: str, needle: str
) -> None:
    script, url = stub
    few = project(pytester, spec=where)
    result = run(pytester, few, f"--base-url={url}", "-k", "c1-spec")
    out = result.stdout.str()
    assert result.ret != 0 and "Traceback" not in out
    assert "endpoint:spec: Treatment spec: " in out and needle in out, out
    assert not (pytester.path / "runs").exists() or not list(
        (pytester.path / "runs").glob("*/*/preregistration.md")
    )
    assert script.chats == 0
