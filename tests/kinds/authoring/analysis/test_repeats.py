"""Identical repeats, pass@k and pass^k, cells rescued by feedback, unreadable records."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.kinds.authoring import records
from pytest_mtpsweep.kinds.authoring.analysis.frame import cell_frame, turn_frame
from pytest_mtpsweep.kinds.authoring.analysis.io import analyse_dir
from pytest_mtpsweep.kinds.authoring.analysis.repeats import (
    identical_repeats,
    pass_at_k,
    pass_hat_k,
    pass_table,
    repeats_lines,
    rescue_lines,
    rescue_table,
)
from tests.kinds.authoring.analysis.test_contrast import cell


def turn(c: dict[str, Any], n: int, sha: str | None, first: str | None = None) -> dict[str, Any]:
    return {k: c[k] for k in ("subject", "cohort", "task", "repeat", "cell")} | {
        "turn": n, "attempt": 0, "verdict": "fail" if first else "pass",
        "artefact_sha256": sha, "error_first_line": first,
        "feedback_chars": 40 if first else None,
    }  # fmt: skip


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert pass_at_k(5, 0, 3) == 0.0 and pass_at_k(5, 3, 3) == 1.0  # n − c < k
    assert pass_hat_k(5, 2, 2) == pytest.approx(1 / 10) and pass_hat_k(3, 3, 3) == 1.0


@given(st.integers(1, 12), st.data())
def test_pass_at_k_grows_with_k_and_pass_hat_k_falls(n: int, data: st.DataObject) -> None:
    c = data.draw(st.integers(0, n))
    at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= x <= 1.0 for x in at + hat)
    assert at == sorted(at) and hat == sorted(hat, reverse=True)
    assert at[0] == pytest.approx(c / n) == pytest.approx(hat[0])


def _three_repeats(copies: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cells, turns = [], []
    for task in ("t0", "t1"):
        for r in (1, 2, 3):
            green = r != 3 or task == "t0"
            c = cell("s", "a", task, r, records.FIRST_ATTEMPT_GREEN if green else records.EXHAUSTED)
            cells.append(c)
            sha = f"{task}-same" if copies else f"{task}-{r}"
            turns.append(turn(c, 1, sha, None if green else "assert 1 == 2"))
    return cells, turns


def test_identical_repeats_are_detected_and_said() -> None:
    cells, turns = _three_repeats(copies=True)
    same = identical_repeats(cell_frame(cells), turn_frame(turns))
    assert list(same["distinct"]) == [1, 1]
    (line,) = repeats_lines(same)
    assert line.startswith("repeats identical: s") and "2 of 3 repeats add no information" in line
    cells, turns = _three_repeats(copies=False)
    same = identical_repeats(cell_frame(cells), turn_frame(turns))
    assert list(same["distinct"]) == [3, 3]
    (line,) = repeats_lines(same)
    assert line.startswith("repeats sampled: s: 2 of 2 cohort x task groups wrote a different")
    assert "repeated the same" not in line


def test_pass_table_over_tasks_never_zero_width() -> None:
    cells, _ = _three_repeats(copies=False)
    t = pass_table(cell_frame(cells)).set_index(["measure", "k"])
    assert t.loc[("pass@k", 1), "estimate"] == pytest.approx((1 + 2 / 3) / 2)
    assert t.loc[("pass@k", 3), "estimate"] == pytest.approx(1.0)
    assert t.loc[("pass^k", 3), "estimate"] == pytest.approx(0.5)
    for _, r in t.iterrows():
        assert r.low <= r.estimate <= r.high and r.high - r.low > 0


def test_feedback_that_never_rescues_is_said_plainly() -> None:
    cells, turns = _three_repeats(copies=False)
    table = rescue_table(cell_frame(cells), turn_frame(turns))
    lines = rescue_lines(table)
    assert lines[0].startswith("Feedback never rescued a cell")
    assert "rescued 0 of 1 cells" in lines[1] and "1x assert 1 == 2" in lines[1]
    rescued = [*cells, cell("s", "a", "t2", 1, records.GREEN_AFTER_K)]
    lines = rescue_lines(rescue_table(cell_frame(rescued), turn_frame(turns)))
    assert not lines[0].startswith("Feedback never") and "rescued 1 of 2" in lines[0]


def test_an_unreadable_cell_record_is_named_and_analyse_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_mtpsweep.cli.analyse import run_cli

    cells, turns = _three_repeats(copies=False)
    (tmp_path / records.CELLS_DIR).mkdir()
    (tmp_path / records.TURNS_DIR).mkdir()
    text = "".join(json.dumps(r) + "\n" for r in cells)
    (tmp_path / records.cells_file("01_s_c1")).write_text(text[:-40] + "\n")  # the last one cut
    (tmp_path / records.turns_file("01_s_c1")).write_text(
        "".join(json.dumps(r) + "\n" for r in turns) + '{"cell": "s-a-t1\n'
    )
    (tmp_path / schema.PLAN_FILE).write_text(json.dumps({"kind": "authoring",
                                                         "baseline_cohort": "a"}))  # fmt: skip
    result = analyse_dir(tmp_path, "a", 1000, 42, pooled=False)
    torn = "cells/01_s_c1.jsonl:6: not JSON: the file's last line, cut short"
    assert len(result.unreadable_cells) == 1 and result.unreadable_cells[0].startswith(torn)
    report = (tmp_path / schema.ANALYSIS_DIR / schema.REPORT_MD).read_text()
    assert "UNREADABLE records" in report and "unreadable: turns/01_s_c1.jsonl:7: " in report
    assert torn in report
    assert run_cli(["analyse", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert torn in err and "--resume" in err and err.count("\n") == 1
    assert not math.isnan(result.table["green_rate"].iloc[0])
