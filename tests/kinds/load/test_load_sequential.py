"""A load run under a stop rule: its contrasts at a look's own level, the cells a rule looks at,
and the report's sentence (records from `run_fixture`: ngram 25 % faster at conc1, 10 % at
conc4; no server)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pytest_mtpsweep.analysis.decision import Decision
from pytest_mtpsweep.analysis.sequential import Design, rule_met
from pytest_mtpsweep.kinds.load.analysis.atend import interim
from pytest_mtpsweep.kinds.load.analysis.compute import LoadAnalysis, analyse, interval_decision
from pytest_mtpsweep.wishes.request import AnalysisRequest
from tests.kinds.load.run_fixture import write_run


def _noisy(run: Path) -> Path:
    """The fixture's exact gains with 5 % noise on every request's e2e (seeded)."""
    rng = np.random.default_rng(7)
    for path in sorted((run / "records").glob("*.jsonl")):
        out = []
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r.get("record") == "request" and r.get("e2e_ms") is not None:
                r["e2e_ms"] *= math.exp(0.05 * rng.standard_normal())
            out.append(json.dumps(r) + "\n")
        path.write_text("".join(out))
    return run


def _with_stop(run: Path, design: Design, stop_doc: dict[str, object] | None = None) -> None:
    plan = json.loads((run / "plan.json").read_text())
    plan["stop"] = design.to_json()
    (run / "plan.json").write_text(json.dumps(plan))
    if stop_doc is not None:
        (run / "stop.json").write_text(json.dumps(stop_doc))


def _e2e(run: Path) -> pd.DataFrame:
    rows = pd.read_csv(run / "analysis" / "load_contrasts.csv")
    return rows[rows["endpoint"] == "e2e"].set_index("level")


def test_a_look_publishes_wider_intervals_than_the_fixed_design(tmp_path: Path) -> None:
    fixed = _noisy(write_run(tmp_path / "fixed", cycles=2))
    assert isinstance(analyse(fixed, boot=200), LoadAnalysis)
    looked = _noisy(write_run(tmp_path / "looked", cycles=2))
    design = Design.plan("decided", 2, 8, "pocock", None)
    _with_stop(looked, design)
    done = analyse(looked, boot=200)
    assert isinstance(done, LoadAnalysis)
    a, b = _e2e(fixed), _e2e(looked)
    for level in ("conc1", "conc4"):
        assert math.isclose(a.loc[level, "gain_pct"], b.loc[level, "gain_pct"])
        assert b.loc[level, "ci_high"] - b.loc[level, "ci_low"] > (
            a.loc[level, "ci_high"] - a.loc[level, "ci_low"]
        )
    # look 1 of 4 (after cycle 2), at that look's level, said in the report and the lines
    assert design.confidence[0] > 0.95
    assert "look 1 of 4 (after cycle 2)" in (looked / "analysis" / "report.md").read_text()
    assert any("look 1 of 4" in line for line in done.lines)


def test_the_rule_looks_at_each_level_and_the_interaction(tmp_path: Path) -> None:
    run = _noisy(write_run(tmp_path, cycles=2))
    _with_stop(run, Design.plan("width", 2, 8, "pocock", 1000.0))
    got = interim(run, AnalysisRequest(boot=200))
    assert not isinstance(got, tuple)  # a result, saved by the look, not by interim
    cells = got.cells
    assert not (run / "analysis" / "report.md").exists()
    assert [c.cell for c in cells] == ["ngram:conc1", "ngram:conc4", "ngram:conc4/conc1"]
    by = {c.cell: c for c in cells}
    assert by["ngram:conc1"].decision == "faster"  # 25 % with little noise: decided
    assert all(math.isfinite(c.half_width_pct) and c.half_width_pct > 0 for c in cells)
    met, why = rule_met(Design.plan("width", 2, 8, "pocock", 1000.0), cells)
    assert met, why
    met, why = rule_met(Design.plan("width", 2, 8, "pocock", 0.001), cells)
    assert not met and "wider than" in why


def test_the_stop_sentence_is_from_the_records_whatever_stop_json_says(tmp_path: Path) -> None:
    # a missing, damaged or hand-edited stop.json never changes why the report says it stopped
    said = []
    for name, doc in (("none", None), ("bad", "{not json"),
                      ("edited", json.dumps({"looks": [{"look": 1, "why": "forged"}],
                                             "stopped_at": 1}))):  # fmt: skip
        run = _noisy(write_run(tmp_path / name, cycles=2))
        _with_stop(run, Design.plan("width", 2, 8, "pocock", 1000.0))
        if doc is not None:
            (run / "stop.json").write_text(doc)
        done = analyse(run, boot=200)
        assert isinstance(done, LoadAnalysis)
        said.append([line for line in done.lines if line.startswith("Sequential design")])
    assert said[0] == said[1] == said[2]
    assert (
        "stopped at look 1 of 4 (after cycle 2): every headline cell's 95 % interval"
        in (said[0][0])
    )


def test_a_gain_within_the_margin_is_equivalent_and_the_decided_rule_counts_it() -> None:
    from pytest_mtpsweep.analysis.decision import Decision
    from pytest_mtpsweep.kinds.load.analysis.compute import cells, margin_of
    from pytest_mtpsweep.kinds.load.analysis.contrast import Row
    from pytest_mtpsweep.state.plandoc import PlanDoc

    def row(level: str, low: float, high: float) -> Row:
        return Row("ngram", "none", "e2e", level, (low + high) / 2, low, high, 8, 16, 4, 0.01,
                   3.0, "t")  # fmt: skip

    rows = [row("conc1", 2.0, 9.0), row("conc4", -0.4, 0.6)]
    inter = [row("conc4/conc1", -9.0, -1.0)]
    got = cells(rows, inter, "e2e", margin_of(PlanDoc.from_json({"analysis": {"margin_pct": 1.0}})))
    assert [c.decision for c in got] == [Decision.FASTER, Decision.EQUIVALENT, Decision.SLOWER]
    assert rule_met(Design.plan("decided", 2, 8, "pocock", None), got)[0]
    # a run written before load recorded its margin: the ladder's default, 1 %
    assert margin_of(PlanDoc.from_json({"analysis": {}})) == 1.0
    # the same interval against a tighter margin is still open, and the rule waits
    tight = cells(rows, inter, "e2e", 0.5)
    assert tight[1].decision is Decision.UNDECIDED
    assert not rule_met(Design.plan("decided", 2, 8, "pocock", None), tight)[0]


def test_a_look_saves_its_result_after_its_record_is_in_stop_json(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # two attached stand-ins (b twice as fast), a width rule any interval meets, the end
    # analysis off: what RUN/analysis/ holds is what the look saved
    from tests.kinds.load.test_load_kind import LADDER, run, stand_in_project
    from tests.sandbox import only_run

    ladder = LADDER.replace("cycles = 2\n", "cycles = 4\n") + (
        '[stop]\nrule = "width"\nwidth_pct = 1000\nmin_cycles = 2\nmax_cycles = 4\n'
        "allow_early_looks = true\n"
    )
    with stand_in_project(pytester, monkeypatch, ladder):
        result = run(pytester, "--no-analysis")
    assert result.ret == 0, result.stdout.str()[-2000:]
    run_dir = only_run(pytester.path)
    stop = json.loads((run_dir / "stop.json").read_text())
    assert stop["stopped_at"] == 1
    assert {c["decision"] for c in stop["looks"][0]["cells"]} <= {d.value for d in Decision}
    out = run_dir / "analysis"
    assert "stopped at look 1 of 2 (after cycle 2)" in (out / "report.md").read_text()
    assert (out / "load_contrasts.csv").is_file() and (out / "report.html").is_file()
    # saved after the look's record: nothing in analysis/ is older than stop.json
    assert min(p.stat().st_mtime_ns for p in out.iterdir()) >= (
        (run_dir / "stop.json").stat().st_mtime_ns
    )


@pytest.mark.parametrize(
    ("low", "high", "margin", "decision"),
    [
        (0.5, 3.0, 1.0, Decision.FASTER),
        (-3.0, -0.5, 1.0, Decision.SLOWER),
        (-0.8, 0.9, 1.0, Decision.EQUIVALENT),
        (-0.8, 1.2, 1.0, Decision.UNDECIDED),  # reaches past the margin
        (-1.0, 0.5, 1.0, Decision.UNDECIDED),  # on the margin is not within it
        (-0.8, 0.9, None, Decision.UNDECIDED),  # no margin: never equivalent
    ],
)
def test_an_interval_is_read_against_zero_then_the_margin(
    low: float, high: float, margin: float | None, decision: Decision
) -> None:
    assert interval_decision(low, high, margin) is decision
