"""A trace replay through the whole protocol against two STAND-IN streaming servers
(tests/stub_stream_schedule_server.py, each logging what it was sent and when on its own clock):
twelve records of the shipped Azure excerpt, twice as fast, against a slower and a faster
schedule. The requests pair by slot, arrive as the trace says within the client's lag, carry
real text of the prompt set, and the gain has an interval in the report."""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.kinds.load.records import REQUEST_FIELDS, TRACE_FIELDS
from pytest_mtpsweep.ladder.prompts import load_prompt_set
from tests.kinds.load.test_load_kind import STAND_INS, lines, run, stand_in_project
from tests.sandbox import REPO, only_run

AZURE = REPO / "experiments" / "traces" / "azure-code-2023-300.csv"
CODE = load_prompt_set(REPO / "experiments" / "prompts" / "code-edit")
SCALE, N, CAP = 0.5, 12, 16
LADDER = (
    f"""
kind = "load"
question = "Does b's gain over a hold on twelve records of Azure's code trace?"
baseline = "a"
cycles = 2
max_tokens = {CAP}
prompt_set = "code-edit"
subset = "structured"
warmup_requests = 0
lag_bound_ms = 50.0
[trace]
path = "../traces/azure-code-2023-300.csv"
format = "azure"
limit = {N}
time_scale = {SCALE}
input_scale = 0.1
"""
    + STAND_INS
)  # its {a} and {b}: the stand-ins' URLs
LAG_MS = 250.0  # far past the client's lag on a busy host: the stand-in answers at once


def trace_rows() -> list[tuple[float, int]]:
    """(ms from the first, output length) of the excerpt's first N rows, read apart."""
    with AZURE.open(newline="") as f:
        rows = list(csv.DictReader(f))[:N]
    stamps = [datetime.strptime(r["TIMESTAMP"][:26], "%Y-%m-%d %H:%M:%S.%f") for r in rows]
    return [((s - stamps[0]).total_seconds() * 1000, int(r["GeneratedTokens"]))
            for s, r in zip(stamps, rows, strict=True)]  # fmt: skip


@pytest.fixture
def project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Path]]:
    logs = {k: pytester.path / f"{k}.log" for k in ("a", "b")}
    extra: dict[str, tuple[str, ...]] = {k: ("--log", str(p)) for k, p in logs.items()}
    with stand_in_project(pytester, monkeypatch, LADDER, extra):
        yield logs


def seen(log: Path, shas: set[str]) -> list[dict[str, Any]]:
    """The replay's requests as a stand-in logged them (not the warm-up or calibration)."""
    got = [json.loads(x) for x in log.read_text().splitlines()]
    return [g for g in got if hashlib.sha256(g["content"].encode()).hexdigest() in shas]


def test_a_trace_replay_pairs_by_slot_on_the_traces_times_with_real_text(
    pytester: pytest.Pytester, project: dict[str, Path]
) -> None:
    result = run(pytester)
    result.assert_outcomes(passed=4)
    run_dir = only_run(pytester.path)
    records = {p.stem: lines(p) for p in sorted((run_dir / "records").glob("*.jsonl"))}
    assert list(records) == ["01_a_c1", "02_b_c1", "03_b_c2", "04_a_c2"]
    reqs = {k: [r for r in v if r["record"] == "request"] for k, v in records.items()}
    assert all(len(v) == N for v in reqs.values())
    first = reqs["01_a_c1"][0]
    assert list(first)[: len(REQUEST_FIELDS) + len(TRACE_FIELDS)] == [
        *REQUEST_FIELDS, *TRACE_FIELDS]  # fmt: skip
    assert {r["level"] for v in reqs.values() for r in v} == {"replay"}
    assert all(r["valid"] for v in reqs.values() for r in v)

    # pairing by slot: slot i is the same record, task, bytes, time and cap in every session
    same = (
        "trace_line",
        "prompt_id",
        "fill_sha256",
        "fill_chars",
        "intended_ms",
        "request_max_tokens",
    )
    for i in range(N):
        assert len({tuple(v[i][k] for k in same) for v in reqs.values()}) == 1, i
    # the trace's times, scaled, exactly; each sent within the client's lag of its time
    rows = trace_rows()
    for v in reqs.values():
        assert [r["trace_line"] for r in v] == list(range(2, N + 2))
        for r, (ms, out) in zip(v, rows, strict=True):
            assert r["intended_ms"] == pytest.approx(ms * SCALE, abs=0.01)
            assert r["request_max_tokens"] == min(out, CAP) == r["output_tokens"]
            assert 0 <= r["send_lag_ms"] < LAG_MS
    plan = json.loads((run_dir / "plan.json").read_text())["load"]["trace"]
    assert plan["lines"] == list(range(2, N + 2)) and len(plan["arrivals_ms"]) == N

    # the stand-ins' own witness: what arrived, when on their clock, and its text
    slot = {r["fill_sha256"]: r for r in reqs["01_a_c1"]}
    texts = {p.id: p.text for p in CODE}
    for log in project.values():
        got = seen(log, set(slot))
        assert len(got) == 2 * N  # two sessions each, no warm-up of the block (warmup 0)
        for session in (got[:N], got[N:]):
            mine = {hashlib.sha256(g["content"].encode()).hexdigest(): g for g in session}
            assert set(mine) == set(slot)  # every slot once: the bytes its records name
            base = mine[reqs["01_a_c1"][0]["fill_sha256"]]["recv_ns"]
            for sha, g in mine.items():
                r = slot[sha]
                # arrivals follow the trace's gaps within the lag (on the stand-in's clock)
                ms = rows[r["request"]][0]
                assert abs((g["recv_ns"] - base) / 1e6 - ms * SCALE) < LAG_MS
                # real text: a whole prompt of the set last; the request's own cap
                assert g["content"].endswith(texts[r["prompt_id"]])
                assert g["max_tokens"] == r["request_max_tokens"]

    # the gain, with its interval, and the replay's own section and picture
    report = (run_dir / "analysis" / "report.md").read_text()
    head = next(x for x in report.splitlines() if x.startswith("- b vs a, e2e gain: replay "))
    gain = head.split("replay ", 1)[1]
    low, high = (float(x) for x in gain.split("[", 1)[1].split("]")[0].split(","))
    assert 0 < low < high  # b answers on twice as fast a schedule: surely faster
    assert "## Replay" in report and "every one of the 12 slots sent the same prompt" in report
    assert "Arrivals against the trace" in report
    contrasts = (run_dir / "analysis" / "load_contrasts.csv").read_text()
    assert "b,a,e2e,replay," in contrasts
    if (run_dir / "analysis" / "load_timeline.png").is_file():  # with matplotlib
        assert "![the trace replay over time](load_timeline.png)" in report  # alt, link
        assert "the trace replay over time" in (run_dir / "analysis" / "report.html").read_text()
