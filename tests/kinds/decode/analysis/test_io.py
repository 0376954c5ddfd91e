"""Reading run directories: what a broken or empty one says."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.base.errors import AnalysisError
from pytest_mtpsweep.cli.analyse import run_cli
from pytest_mtpsweep.kinds.decode.analysis import io as analysis_io
from pytest_mtpsweep.kinds.decode.analysis.io import (
    AnalyseOptions,
    analyse_run,
    curtailment_notes,
    load_run,
)
from tests.strategies import Design, make_records, write_run

DESIGN = Design()


def a_run(tmp_path: Path) -> Path:
    return write_run(tmp_path, DESIGN, make_records(DESIGN, lambda *a: 10.0))


@pytest.mark.parametrize(
    "doc",
    [
        [],
        {"dropped": 5},
        {"dropped": ["01_none_c1"]},
        {"dropped": [], "affected_treatments": 5},
        {"dropped": [], "sentence": ["x"]},
        {"deadline_stop": "yes"},
    ],
)
def test_a_malformed_curtailment_file_is_a_one_line_refusal(
    tmp_path: Path, doc: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    run = a_run(tmp_path)
    (run / "curtailment.json").write_text(json.dumps(doc))
    with pytest.raises(AnalysisError, match=r"curtailment file .* restore it from the run"):
        load_run(run)
    assert run_cli(["analyse", str(run), "--boot", "1000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "curtailment file" in err and "Traceback" not in err


def test_a_deadline_stop_is_noted_with_the_sessions_not_run(tmp_path: Path) -> None:
    notes = curtailment_notes(
        {
            "dropped": [{"session": "03_b_c2"}, {"session": "04_a_c2"}],
            "affected_treatments": ["b"],
            "sentence": "This run was curtailed: [treatment] holds only its cycle-1 position.",
            "deadline_stop": {"deadline": "04:00", "after": "02_b_c1", "not_run": ["03_b_c2"]},
        },
        tmp_path / "curtailment.json",
    )
    assert notes == [
        "the run was stopped by its deadline (04:00): it stopped after session 02_b_c1 and did "
        "not run 03_b_c2",
        "curtailed: sessions dropped to meet the deadline: 03_b_c2, 04_a_c2",
        "This run was curtailed: b holds only its cycle-1 position.",
    ]


def test_an_empty_directory_says_there_are_no_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(AnalysisError, match="no records"):
        analyse_run([empty], AnalyseOptions(boot=1000))
    assert run_cli(["analyse", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "no records" in err and "baseline" not in err


def test_the_analysis_has_one_entry_and_it_takes_typed_options() -> None:
    """One `analyse_run` in the decode analysis, its options one typed value (no **settings)."""
    package = Path(analysis_io.__file__).parent
    defined = [
        f"{path.name}:{node.lineno}"
        for path in sorted(package.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name == "analyse_run"
    ]
    assert defined == [f"io.py:{analyse_run.__code__.co_firstlineno}"]
    kinds = {p.kind for p in inspect.signature(analyse_run).parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds
    assert inspect.signature(analyse_run).parameters["options"].annotation == "AnalyseOptions"
