"""`mtpsweep plan RUN --target-width W`: the plan of a pilot run, and its refusals in one line."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from pytest_mtpsweep.cli.main import main
from tests.strategies import Design, make_plan, make_records, noisy, session_name, write_run

DESIGN = Design(
    treatments=("none", "ngram"),
    prompts={"prose": tuple(f"prose_{i:02d}" for i in range(1, 7)),
             "structured": tuple(f"structured_{i:02d}" for i in range(1, 7))},
)  # fmt: skip


def pilot(tmp_path: Path, durations: bool = True, kind: str | None = None) -> Path:
    records = make_records(DESIGN, noisy(DESIGN, {"ngram": 1.1}, sd=0.03, seed=3))
    facts = {
        session_name(o, t, c): {
            "treatment": t,
            "cycle": c,
            "duration_s": 60.0 if t == "none" else 90.0,
        }
        for o, t, c in DESIGN.sessions()
    }
    plan = make_plan(DESIGN)
    if kind is not None:
        plan["kind"] = kind
    return write_run(tmp_path, DESIGN, records, plan=plan,
                     session_facts=facts if durations else None)  # fmt: skip


def test_each_headline_cell_gets_its_cycles_range_and_wall_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = pilot(tmp_path)
    assert main(["plan", str(run), "--target-width", "5", "--boot", "1000"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"mtpsweep plan {run}: cycles for a 95 % half-width of ±5 %")
    assert "2 cycle(s) run" in lines[0]
    cells = [ln.split()[0] for ln in lines[2:] if ln.startswith("ngram:")]
    assert cells == ["ngram:prose", "ngram:structured"]  # the pooled row is no headline cell
    assert "pooled" not in out
    assert "a cycle took 2 min here" in out  # 60 s + 90 s, one session of each a cycle
    for line in lines[2:4]:
        assert "±" in line and "primary" in line


def test_a_target_no_cycles_reach_is_named_with_its_width_at_the_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = pilot(tmp_path, durations=False)
    assert main(["plan", str(run), "--target-width", "0.01", "--max-cycles", "8",
                 "--boot", "1000"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "cannot reach ±0.01 % within 8 cycles: ngram:prose (±" in out
    assert ">8" in out
    assert "no session file of this run records duration_s" in out


def test_a_wide_target_is_reached_by_the_pilot_s_own_cycle_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = pilot(tmp_path)
    assert main(["plan", str(run), "--target-width", "90", "--boot", "1000"]) == 0
    out = capsys.readouterr().out
    assert "every reachable cell: 2 cycles, which this run has" in out
    assert "cannot reach" not in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--target-width", "0"], "--target-width 0 is not a half-width to plan for"),
        (["--target-width", "-3"], "give a percent above 0 and at most 100"),
        (["--target-width", "1000"], "--target-width 1000 is not a half-width"),
        (["--target-width", "nan"], "--target-width nan is not a half-width"),
        (["--target-width", "5", "--max-cycles", "7"], "give an even number from 2 to 64"),
        (["--target-width", "5", "--max-cycles", "66"], "--max-cycles 66 is not a cycle budget"),
        (["--target-width", "5", "--max-cycles", "0"], "--max-cycles 0 is not a cycle budget"),
    ],
)
def test_a_target_or_bound_out_of_range_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    run = pilot(tmp_path)
    assert main(["plan", str(run), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mtpsweep plan: error: ") and err.count("\n") == 1, err
    assert needle in err


def test_a_missing_run_directory_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", str(tmp_path / "nope"), "--target-width", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a run directory (no plan.json)" in err, err


def test_a_kind_that_cannot_plan_says_so_in_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = pilot(tmp_path, kind="authoring")
    assert main(["plan", str(run), "--target-width", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "the authoring kind cannot plan from a pilot yet (kinds that can: decode, load)" in err


def test_a_run_without_records_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "empty"
    (run / "records").mkdir(parents=True)
    (run / "plan.json").write_text(json.dumps(make_plan(DESIGN)))
    assert main(["plan", str(run), "--target-width", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "there are no records" in err, err


def test_a_stub_pilot_plans_from_its_own_sessions(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.protocol.test_session import run_stub, stub_project

    few = stub_project(pytester, ["--stub-token-ms", "1"], prompts=6)
    result = run_stub(pytester, few, "--no-calibration", "--max-tokens=16")
    assert result.ret == 0, result.stdout.str()[-3000:]
    (run,) = (pytester.path / "runs" / "stub").iterdir()
    capsys.readouterr()
    assert main(["plan", str(run), "--target-width", "10", "--boot", "1000"]) == 0
    out = capsys.readouterr().out
    assert "b:prose" in out and "2 cycle(s) run" in out
    per_cycle = next(ln for ln in out.splitlines() if ln.startswith("wall time: a cycle took"))
    assert "over 4 session(s)" in per_cycle


def load_pilot(root: Path, endpoint: str = "e2e") -> Path:
    """A 2-cycle load run: ngram 25 % faster at conc1 and 10 % at conc4, with noise."""
    from tests.kinds.load.run_fixture import plan as load_plan
    from tests.kinds.load.synthetic import lines

    rng = np.random.default_rng(1)
    speed = {"conc1": 1.25, "conc4": 1.1}

    def e2e(t: str, cycle: int, level: str, p: int, i: int) -> float:
        ms = (100.0 + 10 * p) * math.exp(rng.normal(0.0, 0.05))
        return ms if t == "none" else ms / speed[level]

    def tps(t: str, cycle: int, level: str) -> float:
        return 100.0 * math.exp(rng.normal(0.0, 0.03)) * (speed[level] if t == "ngram" else 1)

    run = root / "load-run"
    (run / "records").mkdir(parents=True)
    (run / "sessions").mkdir()
    doc = load_plan(2)
    doc["load"]["endpoint"] = endpoint
    (run / "plan.json").write_text(json.dumps(doc))
    by_session: dict[str, list[dict[str, object]]] = {}
    for r in lines(e2e, cycles=2, throughput=tps):
        by_session.setdefault(str(r["session"]), []).append(r)
    for name, mine in by_session.items():
        (run / "records" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mine))
        facts = {"session": name, "treatment": mine[0]["treatment"], "duration_s": 30.0}
        (run / "sessions" / f"{name}.json").write_text(json.dumps(facts))
    return run


def test_a_load_run_plans_each_level_s_gain_and_the_interaction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = load_pilot(tmp_path)
    assert main(["plan", str(run), "--target-width", "5", "--boot", "1000"]) == 0
    out = capsys.readouterr().out
    cells = [ln.split()[:3] for ln in out.splitlines() if ln.startswith("ngram@")]
    assert cells == [["ngram@conc1", "e2e", "6"], ["ngram@conc4", "e2e", "6"],
                     ["ngram@conc4/conc1", "e2e", "6"]]  # fmt: skip
    assert "a cycle took 60 s here" in out and "2 cycle(s) run" in out


def test_a_load_headline_no_ladder_sets_is_refused_before_planning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A load ladder's headline is per request (ttft, itl, e2e); a per-block one (output
    # tok/s) is what a hand-edited plan.json says, and is refused naming the field and fix.
    run = load_pilot(tmp_path, endpoint="output_tok_s")
    assert main(["plan", str(run), "--target-width", "5", "--max-cycles", "16"]) == 2
    err = capsys.readouterr().err
    assert "`load.endpoint` is 'output_tok_s'" in err and "restore plan.json" in err


def test_a_partial_run_plans_from_the_cycles_it_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    design = Design(treatments=DESIGN.treatments, prompts=DESIGN.prompts, cycles=4)
    records = make_records(design, noisy(design, {"ngram": 1.1}, sd=0.03, seed=3))
    kept = [r for r in records if r["cycle"] <= 2 or (r["cycle"] == 3 and r["treatment"] == "none")]
    run = write_run(tmp_path, design, kept)  # cycle 3 half run: its baseline has no partner
    assert main(["plan", str(run), "--target-width", "5", "--boot", "1000"]) == 0
    out = capsys.readouterr().out
    assert "2 cycle(s) run" in out and "ngram:prose" in out


def _another_runs_files(run: Path) -> None:
    # another run of the same ladder, its effect far from this one's: its cycles 3 and 4
    # copied in whole, as files named like this run's next sessions
    other = dataclasses.replace(DESIGN, cycles=4, run_id="run-2")
    for r in make_records(other, noisy(other, {"ngram": 3.0}, sd=0.03, seed=9)):
        if r["cycle"] > 2:
            with (run / "records" / f"{r['session']}.jsonl").open("a") as f:
                f.write(json.dumps(r) + "\n")


def test_another_runs_records_and_bad_lines_are_named_as_analyse_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = pilot(tmp_path)
    _another_runs_files(run)
    first = sorted((run / "records").glob("*.jsonl"))[0]
    with first.open("a") as f:
        f.write('{"run_id": "run-1", "tre')  # a torn last line
    (run / "records" / "99_junk.jsonl").write_bytes(b"\x00garbage" * 1000 + b"\n")
    assert main(["plan", str(run), "--target-width", "5", "--boot", "1000"]) == 0
    out = capsys.readouterr().out
    assert "2 cycle(s) run" in out.splitlines()[0]  # the copied cycle 3 is not this run's
    # 48 lines of the other run, the torn line and the garbage file: each counted
    assert "50 record line(s) unreadable and left out (first: records/01_none_c1.jsonl:13" in out
    assert main(["analyse", str(run), "--boot", "1000"]) == 0
    said = capsys.readouterr().out
    unreadable = [ln for ln in out.splitlines() if "unreadable and left out" in ln]
    assert unreadable and unreadable == [
        ln for ln in said.splitlines() if "unreadable and left out" in ln
    ]
    report = (run / "analysis" / "report.md").read_text()
    assert "another run's record line: its run_id is 'run-2', this run's is 'run-1'" in report
    assert "50 line(s) could not be read" in report
