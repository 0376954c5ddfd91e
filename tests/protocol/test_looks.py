"""The stop rule at run time: looks after cycle pairs, the sessions a met rule makes
unnecessary, stop.json, the pre-registration and the report (stand-in server: STUB)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.analysis.decision import Decision
from pytest_mtpsweep.analysis.sequential import CellState, Design
from pytest_mtpsweep.base import schema
from pytest_mtpsweep.ladder.runplan import run_plan
from pytest_mtpsweep.protocol.looks import Looks, prereg_lines
from pytest_mtpsweep.state.rundocs import FORMAT, StopDoc
from tests.protocol.test_session import run_stub, stub_project

STOP = '\n[stop]\nrule = "decided"\nmin_cycles = 2\nallow_early_looks = true\n'


def _looks(
    cells: list[tuple[CellState, ...]] | Exception,
) -> tuple[Looks, list[dict[str, Any]]]:
    written: list[dict[str, Any]] = []  # stop.json as RunDir.write_stop writes it

    def interim() -> tuple[CellState, ...]:
        if isinstance(cells, Exception):
            raise cells
        return cells.pop(0)

    design = Design.plan("decided", 2, 6, "pocock", None)
    return Looks(design, interim, lambda doc: written.append(doc.to_json())), written


def test_a_look_is_due_once_before_the_cycle_after_it() -> None:
    looks, written = _looks([(CellState("b:prose", Decision.UNDECIDED, 30.0),)])
    plan = {(s.cycle, s.treatment): s for s in run_plan(("a", "b"), 6)}
    assert looks.due(plan[(2, "a")]) is None  # no look after cycle 1
    assert looks.due(plan[(3, "b")]) == 1
    assert looks.take(1) is False
    assert looks.due(plan[(3, "a")]) is None  # taken
    assert looks.due(plan[(5, "a")]) == 2
    doc = written[-1]
    assert doc["stopped_at"] is None and doc["looks"][0]["look"] == 1
    assert doc["format"] == FORMAT and "design" not in doc  # the design is plan.json's alone


def test_a_failed_interim_is_a_look_that_does_not_stop() -> None:
    looks, _ = _looks(RuntimeError("records unreadable"))
    assert looks.take(1) is False
    assert "the interim analysis failed: records unreadable" in looks.taken[0].why


def test_the_preregistration_states_rule_looks_and_levels() -> None:
    text = "\n".join(prereg_lines(Design.plan("width", 2, 6, "obrien-fleming", 10.0)))
    assert "## Stopping rule" in text and "within ±10 %" in text
    assert "after cycles 2, 4, 6" in text and "obrien-fleming-type" in text
    assert prereg_lines(None) == []


def stop_ladder(
    pytester: pytest.Pytester, b_args: list[str], extra: str = STOP, prompts: int = 6
) -> Path:
    few = stub_project(pytester, b_args, prompts=prompts)
    ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
    text = ladder.read_text().replace("cycles = 2\n", "cycles = 6\n")
    ladder.write_text(text + extra)
    return few


def only_run(pytester: pytest.Pytester) -> Path:
    runs = list((pytester.path / "runs" / "stub").iterdir())
    assert len(runs) == 1
    return runs[0]


def test_a_decided_run_stops_at_its_first_look_and_exits_0(pytester: pytest.Pytester) -> None:
    few = stop_ladder(pytester, ["--stub-token-ms", "1"])  # b decodes twice as fast
    result = run_stub(pytester, few, "--no-calibration", "--max-tokens=16", "-rs")
    assert result.ret == 0, result.stdout.str()[-3000:]
    out = result.stdout.str()
    assert "not needed: the stop rule was met at look 1 after cycle 2" in out
    run = only_run(pytester)
    stop = json.loads((run / schema.STOP_FILE).read_text())
    assert stop["stopped_at"] == 1 and stop["looks"][0]["met"] is True
    assert stop["looks"][0]["cells"][0]["decision"] == "faster"
    assert sorted(p.stem for p in (run / "sessions").glob("*.json")) == [
        "01_a_c1", "02_b_c1", "03_b_c2", "04_a_c2",
    ]  # fmt: skip
    assert "## Stopping rule" in (run / "preregistration.md").read_text()
    assert json.loads((run / "plan.json").read_text())["stop"]["looks"] == [2, 4, 6]
    report = (run / "analysis" / "report.md").read_text()
    assert "stopped at look 1 of 3 (after cycle 2)" in report
    assert "**Stopped by its rule:**" in report
    assert "**Not run:**" not in report  # sessions the rule made unnecessary are not missing
    # why it stopped is recomputed from the records: stop.json missing or hand-edited says nothing
    from pytest_mtpsweep.cli.main import main

    sessions = sorted(p.name for p in (run / "sessions").iterdir())
    for doc in (None, json.dumps({"looks": [{"look": 1, "met": False, "why": "forged"}],
                                  "stopped_at": None})):  # fmt: skip
        (run / schema.STOP_FILE).unlink(missing_ok=True)
        if doc is not None:
            (run / schema.STOP_FILE).write_text(doc)
        assert main(["analyse", str(run), "--boot", "1000"]) == 0
        again = (run / "analysis" / "report.md").read_text()
        assert "stopped at look 1 of 3 (after cycle 2): every headline cell is decided" in again
        assert "forged" not in again
    # --resume takes look 1 again from the records: no session is run that the rule made
    # unnecessary, whatever stop.json says
    resumed = run_stub(pytester, few, "--no-calibration", "--max-tokens=16", f"--resume={run}")
    assert sorted(p.name for p in (run / "sessions").iterdir()) == sessions, resumed.stdout.str()
    # a damaged stop.json is refused before preflight, in one line with the fix
    (run / schema.STOP_FILE).write_text("{not json")
    refused = run_stub(pytester, few, "--no-calibration", "--max-tokens=16", f"--resume={run}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    said = refused.stdout.str() + refused.stderr.str()
    assert f"--resume {run}: stop-rule file {run / schema.STOP_FILE} is not valid JSON" in said
    assert "or move it aside (the stop rule's looks are taken again from the records)" in said
    assert "preflight" not in said.lower() and "Traceback" not in said
    assert sorted(p.name for p in (run / "sessions").iterdir()) == sessions


def test_a_rule_never_met_runs_to_its_maximum(pytester: pytest.Pytester) -> None:
    # Four prompts are too few for a decision (`insufficient`), so every cycle runs.
    few = stop_ladder(pytester, ["--stub-token-ms", "1"], prompts=4)
    result = run_stub(pytester, few, "--no-calibration", "--max-tokens=8", "--cycles=4")
    assert result.ret == 0, result.stdout.str()[-3000:]
    run = only_run(pytester)
    stop = json.loads((run / schema.STOP_FILE).read_text())
    assert stop["stopped_at"] is None and [e["look"] for e in stop["looks"]] == [1]
    assert "not decided yet: b:prose" in stop["looks"][0]["why"]
    assert len(list((run / "sessions").glob("*.json"))) == 8
    assert (
        "ran to its maximum, look 2 of 2 (after cycle 4)"
        in (run / "analysis" / "report.md").read_text()
    )


def test_a_stop_rule_refuses_distribution(pytester: pytest.Pytester) -> None:
    few = stop_ladder(pytester, [])
    result = run_stub(pytester, few, "-n", "2", "--dist", "loadgroup")
    assert result.ret == 4
    assert "a [stop] rule looks between cycle pairs in order; run it without -n" in (
        result.stdout.str() + result.stderr.str()
    )


def test_stop_cells_the_selection_removes_are_refused_before_any_server(
    pytester: pytest.Pytester,
) -> None:
    few = stop_ladder(pytester, [], extra=STOP + 'cells = ["b:structured"]\n')
    (few / "structured_01.txt").write_text("Write a list of three colours.")
    result = run_stub(pytester, few, "-k", "not structured")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = result.stdout.str() + result.stderr.str()
    assert (
        "stop.cells of ladder stub names 'b:structured', and the selection (-k or node ids) "
        "leaves none of its cases, so the rule would wait for it to the last cycle; select its "
        "cases, or run without the selection (cells left: b:prose)." in said
    )
    assert "Traceback" not in said and not (pytester.path / "runs").exists()


def test_a_looks_result_is_saved_after_its_record_is_in_stop_json() -> None:
    from pytest_mtpsweep.report.analysisresult import AnalysisResult
    from pytest_mtpsweep.report.model import Report

    events: list[str] = []
    result = AnalysisResult(
        report=Report("t", (), ()), cells=(CellState("b:prose", Decision.FASTER, 3.0),)
    )

    def interim() -> AnalysisResult:
        events.append("computed")
        return result

    def write(doc: StopDoc) -> None:
        events.append(f"wrote {schema.STOP_FILE} with look {doc.looks[-1].look}")

    def save(got: AnalysisResult) -> None:
        assert got is result
        events.append("saved")

    design = Design.plan("decided", 2, 6, "pocock", None)
    looks = Looks(design, interim, write, save)
    assert looks.take(1) is True
    assert events == ["computed", f"wrote {schema.STOP_FILE} with look 1", "saved"]
    assert looks.taken[0].cells[0].decision == "faster"


def test_a_save_that_fails_does_not_end_the_run() -> None:
    from pytest_mtpsweep.report.analysisresult import AnalysisResult
    from pytest_mtpsweep.report.model import Report

    def save(got: AnalysisResult) -> None:
        raise OSError("disk full")

    got = AnalysisResult(report=Report("t", (), ()))
    looks = Looks(Design.plan("decided", 2, 6, "pocock", None), lambda: got, lambda *_: None, save)
    assert looks.take(1) is False
    assert looks.taken[0].why == "no headline cell has an interval yet"
