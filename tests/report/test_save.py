"""The one writer of an analysis: every part of a result written whole, stale files gone, the
report last; a directory it cannot write is one sentence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pytest_mtpsweep._version import __version__
from pytest_mtpsweep.base.errors import AnalysisError
from pytest_mtpsweep.report.analysisresult import AnalysisResult, FigureData
from pytest_mtpsweep.report.model import Report, Section, Text
from tests.report.dom import parse


class _Drawn:
    """A stand-in for a matplotlib Figure: what `savefig` writes is the data it was drawn from."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def savefig(self, out: Any, **_: Any) -> None:
        out.write(self.data)


def _result(**parts: Any) -> AnalysisResult:
    report = Report("Title", (Text("opening"),), (Section("Headline", (Text("x"),), "headline"),))
    return AnalysisResult(report=report, **parts)


def test_every_part_is_written_and_a_stale_file_removed(tmp_path: Path) -> None:
    out = tmp_path / "analysis"
    out.mkdir()
    (out / "old.png").write_bytes(b"an earlier analysis' picture")
    (out / "gone.png").write_bytes(b"drawn before, nothing to draw now")
    result = _result(
        tables={"t.csv": pd.DataFrame({"a": [1, 2]})},
        documents={"d.json": {"x": float("nan")}},
        figures=(
            FigureData("f.png", b"PNG", _Drawn),
            FigureData("gone.png", None, lambda _: None),
        ),
        stale=("old.png",),
    )
    md = result.save(out)
    assert md == out / "report.md" and "# Title" in md.read_text()
    assert (out / "report.html").is_file()
    assert (out / "t.csv").read_text() == "a\n1\n2\n"
    assert (out / "d.json").read_text() == '{\n  "x": null\n}\n'
    assert (out / "f.png").read_bytes() == b"PNG"
    assert not (out / "old.png").exists() and not (out / "gone.png").exists()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []  # no temp left
    assert result.files == ("t.csv", "d.json", "f.png", "gone.png")


def test_a_directory_it_cannot_write_is_one_sentence(tmp_path: Path) -> None:
    blocker = tmp_path / "analysis"
    blocker.write_text("a file where the directory should be")
    with pytest.raises(AnalysisError, match=r"cannot write the report into .*; make it writable"):
        _result(tables={"t.csv": pd.DataFrame({"a": [1]})}).save(blocker / "out")


@pytest.mark.parametrize(
    ("recorded", "line"),
    [
        ("0.2.0", f"Recorded by pytest-mtpsweep 0.2.0; analysed by pytest-mtpsweep {__version__}."),
        (__version__, f"Recorded and analysed by pytest-mtpsweep {__version__}."),
        (
            "",
            f"Analysed by pytest-mtpsweep {__version__}; the run's plan names no harness version.",
        ),
    ],
)
def test_both_reports_name_the_version_that_recorded_the_run_and_the_one_that_analysed_it(
    tmp_path: Path, recorded: str, line: str
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    plan = {"run_id": "r1", "ladder": "demo", "harness_version": recorded}
    (run / "plan.json").write_text(json.dumps({k: v for k, v in plan.items() if v}))
    md = _result().save(run / "analysis", run)
    assert md.read_text(encoding="utf-8").endswith(f"\n\n{line}\n")
    footer = parse((run / "analysis" / "report.html").read_text(encoding="utf-8")).find("footer")
    assert footer[0].words().startswith(line)


def test_a_hostile_harness_version_reaches_report_md_as_text(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "plan.json").write_text(json.dumps({"harness_version": "[x](http://e.vil) *b*"}))
    text = _result().save(run / "analysis", run).read_text(encoding="utf-8")
    assert "pytest-mtpsweep [x\\](http://e.vil) \\*b\\*; analysed by" in text  # no link


@pytest.mark.parametrize("form", ["link", "file"])
def test_a_folder_that_is_a_link_or_a_file_is_never_written_through(
    tmp_path: Path, form: str
) -> None:
    # issue 50: a run's analysis_pooled (or any folder a kind names) linked out of the run had
    # the analysis written wherever it pointed; the writer refuses it, whoever chose the folder
    away = tmp_path / "away"
    away.mkdir()
    out = tmp_path / "run" / "analysis_pooled"
    out.parent.mkdir()
    if form == "link":
        out.symlink_to(away)
    else:
        out.write_text("x")
    with pytest.raises(AnalysisError, match=f"cannot write the analysis into {out}: it is a"):
        _result(documents={"a.json": {}}).save(out)
    assert not any(away.iterdir())


def test_an_analysis_the_tool_wrote_is_known_by_its_closing_line(tmp_path: Path) -> None:
    from pytest_mtpsweep.report.save import written_here

    _result().save(tmp_path / "ours")
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "report.md").write_text("# my notes\n")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "report.md").symlink_to(tmp_path / "ours" / "report.md")
    assert written_here(tmp_path / "ours")
    assert not written_here(tmp_path / "theirs")
    assert not written_here(tmp_path / "linked")  # never read through a link
