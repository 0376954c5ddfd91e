"""A decode sweep through the analysis: where the gain starts, the best set, the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions, analyse_run
from tests.strategies import Design, make_plan, make_records, noisy, write_run

ARMS = ("size_n_1", "size_n_3", "size_n_12")
DESIGN = Design(
    treatments=("none", *ARMS),
    prompts={
        "prose": tuple(f"prose_{i:02d}" for i in range(1, 9)),
        "structured": tuple(f"structured_{i:02d}" for i in range(1, 9)),
    },
    cycles=4,
)
# A knee: no gain at size 1, a clear one from 3 up (prose: none anywhere).
EFFECTS = {"none": 1.0, "size_n_1": 1.0, "size_n_3": 1.4, "size_n_12": 1.45}


def _plan(stop: bool = False) -> dict[str, object]:
    plan = make_plan(DESIGN)
    if stop:  # looks after cycles 2 and 4, the edits deciding
        from pytest_mtpsweep.analysis.sequential import Design as StopDesign

        cells = ("size_n_12:structured",)
        plan["stop"] = StopDesign.plan("decided", 2, 4, "pocock", None, cells).to_json()
    plan["sweep"] = {
        "setting": "--spec-ngram-simple-size-n",
        "axes": [{"flag": "--spec-ngram-simple-size-n", "values": ["1", "3", "12"]}],
        "shared_args": ["--spec-type", "ngram-simple"],
        "from": "high",
        "arms": list(ARMS),
        "order": "mirrored Williams",
    }
    return plan


def _structured_effects(t: str, c: int, o: int, p: str, r: int) -> float:
    base = noisy(DESIGN, EFFECTS, sd=0.02, seed=3)(t, c, o, p, r)
    return base if p.startswith("structured") else base / EFFECTS[t]


def _dropped_after_2() -> list[dict[str, object]]:
    return [
        r
        for r in make_records(DESIGN, _structured_effects)
        if not (r["treatment"] == "size_n_1" and int(str(r["cycle"])) > 2)
    ]


def test_the_report_says_where_the_gain_starts_and_the_best_set(tmp_path: Path) -> None:
    run = write_run(tmp_path, DESIGN, _dropped_after_2(), plan=_plan(stop=True))
    result = analyse_run([run], AnalyseOptions(boot=1000, seed=1, out=tmp_path / "out"))
    sweep = result.sweep
    assert sweep is not None and sweep.arms == ARMS
    edits = next(s for s in sweep.subsets if s.subset == "structured")
    assert edits.faster is not None and edits.faster.first_effective == "size_n_3"
    assert edits.best is not None and "size_n_1" not in edits.best.best
    assert "none" not in edits.best.best
    prose = next(s for s in sweep.subsets if s.subset == "prose")
    assert prose.faster is not None and prose.faster.effective == ()
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Along the setting" in report
    assert "where the gain starts" in report and "may be best" in report
    assert "size_n_1 left the run at look 1" in report
    assert "Sessions: 14 of the full grid's 16" in report


def test_a_forged_stop_json_cannot_drop_an_arm_or_steer_the_report(tmp_path: Path) -> None:
    # stop.json claims the baseline and the best arm left at a look that never happened; the
    # drops are recomputed from the records and plan.json, so neither is named as dropped
    run = write_run(tmp_path, DESIGN, _dropped_after_2(), plan=_plan(stop=True))
    (run / "stop.json").write_text(
        '{"looks": [{"look": 1, "after_cycle": 2, "met": false, "why": "forged"}], '
        '"dropped": [{"arm": "size_n_12", "look": 1, "after_cycle": 2, "why": "forged"}, '
        '{"arm": "none", "look": 1, "after_cycle": 2, "why": "forged"}]}'
    )
    result = analyse_run([run], AnalyseOptions(boot=1000, seed=1, out=tmp_path / "out"))
    assert result.sweep is not None
    assert [d.arm for d in result.sweep.dropped] == ["size_n_1"]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "forged" not in report and "size_n_12 left the run" not in report


def test_a_run_without_a_stop_rule_names_no_dropped_arm(tmp_path: Path) -> None:
    run = write_run(tmp_path, DESIGN, make_records(DESIGN, _structured_effects), plan=_plan())
    (run / "stop.json").write_text(
        '{"looks": [], "dropped": [{"arm": "size_n_3", "look": 1, "after_cycle": 2, '
        '"why": "forged"}]}'
    )
    result = analyse_run([run], AnalyseOptions(boot=1000, seed=1, out=tmp_path / "out"))
    assert result.sweep is not None and result.sweep.dropped == ()
    assert "left the run" not in (tmp_path / "out" / "report.md").read_text()


def test_plan_projects_the_sweep_against_the_full_grid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_mtpsweep.cli.main import main

    plan = _plan()
    from pytest_mtpsweep.analysis.sequential import Design as StopDesign

    plan["stop"] = StopDesign.plan("decided", 2, 6, "pocock", None).to_json()
    run = write_run(tmp_path, DESIGN, make_records(DESIGN, _structured_effects), plan=plan)
    assert main(["plan", str(run), "--target-width", "5", "--boot", "1000"]) == 0
    out = capsys.readouterr().out
    assert "Sweep (projected from this pilot" in out
    assert "against the full grid's 24" in out


def test_a_dropped_arm_s_later_sessions_are_not_missing(tmp_path: Path) -> None:
    run = write_run(tmp_path, DESIGN, _dropped_after_2(), plan=_plan(stop=True))
    result = analyse_run([run], AnalyseOptions(boot=1000, seed=1, out=tmp_path / "out"))
    assert result.not_run == ()
    assert result.sweep is not None and result.sweep.sessions_run == 14
    assert (
        "Sessions: 14 of the full grid's 16 (2 saved"
        in (tmp_path / "out" / "report.md").read_text()
    )
