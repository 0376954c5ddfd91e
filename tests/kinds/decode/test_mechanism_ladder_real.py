"""`mechanism-cpu` on the real llama-server plants what it says: the tokens per step its records
measure cover the planted curve's, within the spread the planted law itself gives."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pytest

from pytest_mtpsweep.kinds.decode.planted import mean_length, planted_rates, record_truth
from pytest_mtpsweep.protocol.loader import load_ladder
from tests.sandbox import copy_experiments, only_run, prompt_dir, read_records

LADDER = Path(__file__).resolve().parents[3] / "experiments" / "ladders" / "mechanism-cpu.toml"
TOKENS = 32
# A false failure once in 10,000 runs: the normal quantile of the summed accepted count, whose
# exact variance comes from the planted law (record_truth), not from the run.
Z = NormalDist().inv_cdf(1 - 1e-4 / 2)


def records_by_treatment(run: Path) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for f in sorted((run / "records").glob("*.jsonl")):
        rows, bad = read_records(f)
        assert bad == 0
        for r in rows:
            out.setdefault(r["treatment"], []).append(r)
    return out


def test_the_self_drafters_measured_tokens_per_step_cover_the_planted_curve(
    pytester: pytest.Pytester, server_bin: Path, model_path: Path
) -> None:
    copy_experiments(pytester)
    # counts, not speed: a busy host's pauses must not cut a stream (the default is 10 s)
    copied = pytester.path / "experiments" / "ladders" / "mechanism-cpu.toml"
    copied.write_text(
        LADDER.read_text().replace(
            "\n[preregistration]", "\nstall_threshold_s = 600\n\n[preregistration]", 1
        )
    )
    few = prompt_dir(pytester, ["prose_01", "prose_02"])
    result = pytester.runpytest(
        "experiments/", "--ladder=mechanism-cpu", f"--prompts-dir={few}",
        f"--max-tokens={TOKENS}", "--no-calibration", "--no-analysis", "-k", "c1-self",
        # it reads counts, not speed: another server beside it does not spoil them
        "--waive", "server_processes",
    )  # fmt: skip
    result.assert_outcomes(passed=4)
    treatments = {t.key: t.args for t in load_ladder(LADDER).treatments}
    measured = records_by_treatment(only_run(pytester.path))
    assert sorted(measured) == ["self_k2_A", "self_k4_C"]
    for key, recs in measured.items():
        rates = planted_rates(treatments[key], key)
        assert rates is not None
        assert all(r["finish_reason"] == "length" and r["draft_n"] > 0 for r in recs), recs
        # The server seeds the synthetic draws with the request's seed; the ladder sends each
        # measurement its own (request_seeds = "per-measurement"), so every record is its own
        # draw from the planted law.
        draws = [(int(r["predicted_n"]), int(r["draft_n_accepted"])) for r in recs]
        truths = [record_truth(rates, n) for n, _ in draws]
        # the decode steps' tokens: the first is the prompt pass's
        tokens = sum(t.tokens - 1 for t in truths)
        accepted = sum(a for _, a in draws)
        mean = sum(t.accepted_mean for t in truths)
        half = Z * math.sqrt(sum(t.accepted_var for t in truths))
        # tokens per step = tokens / (tokens - accepted), rising with the accepted count
        low, high = tokens / (tokens - (mean - half)), tokens / (tokens - (mean + half))
        got = tokens / (tokens - accepted)
        assert low <= got <= high, (
            f"{key}: {got:.3f} tokens per step measured, planted {tokens / (tokens - mean):.3f} "
            f"[{low:.3f}, {high:.3f}] for E[L] {mean_length(rates):.2f} at {TOKENS} tokens"
        )
