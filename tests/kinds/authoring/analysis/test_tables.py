"""The subject x cohort table, the census, and the analysis' edge (a run directory)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.kinds.authoring import records
from pytest_mtpsweep.kinds.authoring.analysis.frame import cell_frame
from pytest_mtpsweep.kinds.authoring.analysis.io import analyse_dir
from pytest_mtpsweep.kinds.authoring.analysis.tables import census, cohort_table
from tests.kinds.authoring.analysis.test_contrast import cell

RECS = [
    cell("s", "a", "t0", 1, records.FIRST_ATTEMPT_GREEN, 100, 10),
    cell("s", "a", "t1", 1, records.GREEN_AFTER_K, 300, 30),
    cell("s", "a", "t2", 1, records.EXHAUSTED, 500, 50),
    cell("s", "a", "t3", 1, records.API_FAILURE, 0, 0)
    | {"api_status": 500, "api_error": "HTTP 500"},
    cell("s", "b", "t0", 1, records.BUDGET_STOPPED, 0, 0) | {"reason": "the token budget"},
    cell("s", "b", "t1", 1, None, 0, 0) | {"reason": "the server died"},
]


def test_the_table_counts_every_class_and_rates_informative_cells_only() -> None:
    t = cohort_table(cell_frame(RECS)).set_index("cohort")
    a = t.loc["a"]
    assert (a.cells, a.informative, a.first_attempt_green, a.green_after_k, a.never_green) == (
        4,
        3,
        1,
        1,
        1,
    )
    assert a.api_failure == 1 and a.green_rate == 2 / 3 and a.mean_prompt_tokens == 300
    b = t.loc["b"]
    assert (b.budget_stopped, b.no_outcome, b.informative) == (1, 1, 0)


def test_the_census_names_each_uninformative_cell_and_why() -> None:
    c = census(cell_frame(RECS)).set_index("cell")
    assert c.loc["s-a-t3-r1", "class"] == "api_failure" and c.loc["s-a-t3-r1", "why"] == "HTTP 500"
    assert (
        c.loc["s-b-t1-r1", "class"] == "no outcome"
        and c.loc["s-b-t1-r1", "why"] == "the server died"
    )
    assert c.loc["s-a-t0-r1", "class"] == "informative" and c.loc["s-a-t0-r1", "why"] == ""


def test_a_later_record_of_a_cell_replaces_an_earlier_one(tmp_path: Path) -> None:
    (tmp_path / records.CELLS_DIR).mkdir()
    recs = [*RECS, cell("s", "b", "t0", 1, records.FIRST_ATTEMPT_GREEN)]  # the resumed cell
    (tmp_path / records.cells_file("01_s_c1")).write_text(
        "".join(json.dumps(r) + "\n" for r in recs)
    )
    result = analyse_dir(tmp_path, "a", 1000, 42, pooled=False)
    b = result.table.set_index("cohort").loc["b"]
    assert b.budget_stopped == 0 and b.first_attempt_green == 1
    out = tmp_path / schema.ANALYSIS_DIR
    for name in (
        records.COHORT_TABLE_CSV,
        records.CONTRASTS_CSV,
        records.CENSUS_CSV,
        schema.REPORT_MD,
    ):
        assert (out / name).is_file()
    assert "pooled" not in (out / records.CONTRASTS_CSV).read_text()  # never pooled unless asked
    assert "s-a-t3-r1: api_failure (HTTP 500)" in (out / schema.REPORT_MD).read_text()


def test_mtpsweep_analyse_runs_the_authoring_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_mtpsweep.cli.analyse import run_cli

    (tmp_path / records.CELLS_DIR).mkdir()
    (tmp_path / records.cells_file("01_s_c1")).write_text(
        "".join(json.dumps(r) + "\n" for r in RECS)
    )
    plan = {"kind": "authoring", "baseline_cohort": "a", "contrast": {"resamples": 1000, "seed": 7}}
    (tmp_path / schema.PLAN_FILE).write_text(json.dumps(plan))
    assert run_cli(["analyse", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (
        "s: b vs a" in out
        and "(1000 resamples, seed 7)"
        in (tmp_path / schema.ANALYSIS_DIR / schema.REPORT_MD).read_text()
    )
    assert run_cli(["analyse", str(tmp_path), "--pool"]) == 2
    assert "analysed on its own" in capsys.readouterr().err
