"""The load kind through the whole protocol, against two STAND-IN streaming servers attached
(tests/stub_stream_schedule_server.py: tokens on a known schedule, two slots each): sessions,
one record per request and one per level, the shared schedule, the block order, -k by cycle,
treatment and level, the slot witness and the requests that queued, the analysis and
`mtpsweep analyse`."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.interface.kind import GROUP
from pytest_mtpsweep.kinds.load.records import REQUEST_FIELDS
from tests.sandbox import REPO, copy_experiments, only_run

STAND_IN = REPO / "tests" / "stub_stream_schedule_server.py"
# a: first token 30 ms after a slot is taken, then one each 6 ms; b: 15 ms, then 3 ms
SCHEDULES = {"a": ("30", "6"), "b": ("15", "3")}
LADDER = """
kind = "load"
question = "Does b's gain over a hold from 1 to 3 requests in flight on two slots?"
baseline = "a"
cycles = 2
max_tokens = 8
concurrency = [1, 3]
rate = [200.0]
requests = 6
subset = "structured"
warmup_requests = 1
lag_bound_ms = 50.0
[slo]
ttft_ms = 60
"""
# two attached stand-ins, a (the baseline) and b: the end of every stand-in load ladder
STAND_INS = """
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
LADDER += STAND_INS


def start_stand_in(
    ttft: str, itl: str, slots: int = 2, *extra: str
) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(STAND_IN), "--ttft-ms", ttft, "--itl-ms", itl, "--slots", str(slots),
         *extra],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("listening on "), line
    return proc, f"http://{line.split()[-1]}"


def stats(url: str) -> dict[str, int]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{url}/stats", timeout=5) as resp:
        out: dict[str, int] = json.loads(resp.read())
    return out


@contextlib.contextmanager
def stand_in_project(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    ladder: str,
    extra: dict[str, tuple[str, ...]] | None = None,
) -> Iterator[dict[str, str]]:
    """The shipped experiments (test_load.py among them) and `ladder` (a template naming {a}
    and {b}) as `stand` on two stand-ins (each with its `extra` arguments), stopped at the end;
    the stand-ins' URLs."""
    path = [str(REPO), os.environ.get("PYTHONPATH", "")]
    if not any(ep.name == "load" for ep in entry_points(group=GROUP)):
        # an environment installed before this kind: declare it as pyproject.toml does
        info = pytester.path / "site" / "load_kind-0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: load-kind\nVersion: 0\n")
        (info / "entry_points.txt").write_text(
            f"[{GROUP}]\nload = pytest_mtpsweep.kinds.load:KIND\n"
        )
        path.insert(0, str(info.parent))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, path)))
    procs = {k: start_stand_in(*v, 2, *(extra or {}).get(k, ())) for k, v in SCHEDULES.items()}
    try:
        urls = {k: url for k, (_, url) in procs.items()}
        copy_experiments(pytester, {"stand": ladder.format(**urls)})
        yield urls
    finally:
        for proc, _ in procs.values():
            proc.terminate()
            proc.wait(timeout=10)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    with stand_in_project(pytester, monkeypatch, LADDER) as urls:
        yield urls


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("experiments/", "-p", "no:cacheprovider",
                                         "--ladder=stand", *args)  # fmt: skip


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_a_load_ladder_runs_through_the_protocol(
    pytester: pytest.Pytester, project: dict[str, str]
) -> None:
    result = run(pytester)
    result.assert_outcomes(passed=12)
    run_dir = only_run(pytester.path)
    out = result.stdout.str()
    assert "b vs a, e2e gain: conc1 " in out and "the gain factor changes" in out

    records = {p.stem: lines(p) for p in sorted((run_dir / "records").glob("*.jsonl"))}
    assert list(records) == ["01_a_c1", "02_b_c1", "03_b_c2", "04_a_c2"]
    first = records["01_a_c1"]
    reqs = [r for r in first if r["record"] == "request"]
    assert len(reqs) == 18 and list(reqs[0])[: len(REQUEST_FIELDS)] == list(REQUEST_FIELDS)
    assert all(r["valid"] and r["output_tokens"] == 8 for r in reqs)
    # the same schedule everywhere: request i sends one prompt in every session and level
    order = [r["prompt_id"] for r in reqs if r["level"] == "conc1"]
    for session in records.values():
        for level in ("conc1", "conc3", "rate200"):
            assert [r["prompt_id"] for r in session if r["record"] == "request"
                    and r["level"] == level] == order  # fmt: skip
    # odd cycles up, even cycles down
    blocks = {
        s: [r["level"] for r in recs if r["record"] == "level"] for s, recs in records.items()
    }
    assert blocks["01_a_c1"] == ["conc1", "conc3", "rate200"]
    assert blocks["04_a_c2"] == ["rate200", "conc3", "conc1"]

    # open loop: sent on plan.json's schedule; on two slots at 200/s the stand-in falls
    # behind, and latency counted from the schedule grows along it instead of hiding
    plan = json.loads((run_dir / "plan.json").read_text())
    rate = [r for r in reqs if r["level"] == "rate200"]
    assert [r["intended_ms"] for r in rate] == pytest.approx(
        plan["load"]["arrivals_ms"]["rate200"], abs=0.01
    )
    assert rate[-1]["e2e_ms"] > rate[0]["e2e_ms"] + 30  # a's 8 tokens take 72 ms on a slot

    # the slot witness: two slots, three in flight; the client's count of queued requests is
    # what the stand-in saw wait (it counts them itself)
    level3 = next(r for r in first if r["record"] == "level" and r["level"] == "conc3")
    level1 = next(r for r in first if r["record"] == "level" and r["level"] == "conc1")
    assert level3["total_slots"] == 2 and level3["max_in_flight"] == 3
    assert level3["queued"] >= 1 and level1["queued"] == 0
    assert level3["occupancy"]["busy_slots_max"] <= 2
    assert stats(project["a"])["max_queued"] >= 1
    session = json.loads((run_dir / "sessions" / "01_a_c1.json").read_text())
    assert session["total_slots"] == 2 and session["highest_concurrency"] == 3

    # b streams twice as fast as a when it has a slot: at one in flight e2e gains ~ +100 %
    rows = {(r["endpoint"], r["level"]): r for r in
            _csv(run_dir / "analysis" / "load_contrasts.csv")}  # fmt: skip
    e2e1 = rows[("e2e", "conc1")]
    assert 70.0 < float(e2e1["gain_pct"]) < 130.0 and float(e2e1["ci_low"]) > 0
    inter = _csv(run_dir / "analysis" / "load_interaction.csv")
    assert {r["level"] for r in inter} == {"conc3/conc1"}  # one open level: no interaction
    report = (run_dir / "analysis" / "report.md").read_text()
    assert "## Interaction" in report and "queued by the client's count" in report

    again = subprocess.run(
        [sys.executable, "-m", "pytest_mtpsweep.cli.main", "analyse", str(run_dir)],
        capture_output=True, text=True, check=False, cwd=pytester.path,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "b vs a, e2e gain: conc1 " in again.stdout


def test_k_selects_by_cycle_treatment_and_level(
    pytester: pytest.Pytester, project: dict[str, str]
) -> None:
    result = run(pytester, "-k", "c2 and conc3", "--load-requests", "3", "--no-analysis")
    result.assert_outcomes(passed=2, deselected=10)
    run_dir = only_run(pytester.path)
    assert sorted(p.stem for p in (run_dir / "records").glob("*.jsonl")) == ["03_b_c2", "04_a_c2"]
    recs = lines(run_dir / "records" / "03_b_c2.jsonl")
    assert {r["level"] for r in recs} == {"conc3"} and len(recs) == 3 + 1
    assert json.loads((run_dir / "plan.json").read_text())["load"]["requests"] == 3


def _csv(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open() as f:
        return list(csv.DictReader(f))


def test_a_block_answered_by_another_model_is_invalid_with_its_reason(
    pytester: pytest.Pytester, project: dict[str, str]
) -> None:
    # the stand-ins answer these prompts as another model (the session's warm-up, its own
    # prompt, is answered as served_model): the decode kind's identity rule, in a load block
    for path in (pytester.path / "experiments" / "prompts" / "canonical").glob("structured*"):
        path.write_text(path.read_text() + "\n!model=someone-else\n")
    result = run(pytester, "-k", "c2 and conc3", "--load-requests", "3", "--no-analysis")
    result.assert_outcomes(failed=2, deselected=10)
    why = "wrong server answered: model ['someone-else'] != alias 'stand-in'"
    assert "3 of 3 requests failed: 3x wrong server answered" in result.stdout.str()
    run_dir = only_run(pytester.path)
    for session in ("03_b_c2", "04_a_c2"):  # no block usable: set aside (and run again)
        recs = lines(run_dir / "quarantine" / session / "records.jsonl")
        reqs = [r for r in recs if r["record"] == "request"]
        assert len(reqs) == 3 and all(not r["valid"] and r["reason"] == why for r in reqs)
        assert {r["model"] for r in reqs} == {"someone-else"}
        (level,) = [r for r in recs if r["record"] == "level"]
        assert level["valid"] is False and "wrong server answered" in level["reason"]
