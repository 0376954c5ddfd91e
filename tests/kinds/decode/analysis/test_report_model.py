"""report.md and report.html of a decode run are rendered from one report model: the file is the
model's Markdown, the page's headline holds the model's headline rows, and the page's record
tables come from the result, not from the CSVs beside the report."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.base.constants import BOOT
from pytest_mtpsweep.kinds.decode.analysis.io import (
    AnalyseOptions,
    analyse_run,
    load_and_analyse,
    picture_records,
)
from pytest_mtpsweep.kinds.decode.report import pictures
from pytest_mtpsweep.kinds.decode.report.sections import DETAIL, report_model
from pytest_mtpsweep.report.mdtext import Md
from pytest_mtpsweep.report.model import Figure, Report, Table
from pytest_mtpsweep.report.render_html import page
from pytest_mtpsweep.report.save import finished
from tests.report.dom import Node, parse
from tests.report.test_mdtext import NAME, hostile_run, words
from tests.strategies import Design, make_records, noisy, write_run

DESIGN = Design(
    treatments=("none", "ngram"),
    prompts={"prose": tuple(f"prose_{i:02d}" for i in range(1, 6)),
             "structured": tuple(f"structured_{i:02d}" for i in range(1, 6))},
)  # fmt: skip


@pytest.fixture(autouse=True)
def _no_plot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)


def records() -> list[dict[str, Any]]:
    """One prompt always cut by the token cap, one baseline measurement missing (a gap)."""
    recs = make_records(DESIGN, noisy(DESIGN, {"ngram": 1.1}, sd=0.02))
    recs = [{**r, "finish_reason": "length"} if r["prompt_id"] == "prose_01" else r for r in recs]
    return [
        r
        for r in recs
        if not (r["treatment"] == "none" and r["cycle"] == 1 and r["prompt_id"] == "prose_02")
    ]


def headline_table(report: Report) -> Table:
    return next(b for b in report.of("headline")[0].blocks if isinstance(b, Table))


def body_rows(node: Node) -> list[list[str]]:
    return [[td.words() for td in tr.find("td")] for tr in node.find("tbody")[0].find("tr")]


def test_report_md_and_report_html_are_the_same_models(tmp_path: Path) -> None:
    run = write_run(tmp_path, DESIGN, records())
    result = analyse_run([run], AnalyseOptions(boot=BOOT.min))
    report, out = result.report, Path(str(result.out_dir))
    assert report is not None
    on_disk = (out / "report.md").read_text(encoding="utf-8")
    assert finished(report, run).markdown() == on_disk  # the writer adds the versions' line
    assert report.markdown() == result.report_md
    dom = parse((out / "report.html").read_text(encoding="utf-8"))
    # the page's sections: the three every kind opens with, then the model's detail in order
    shown = [s.id for s in report.of("detail") if s.page]
    ids = [s.attrs["id"] for s in dom.find("details", class_="section")]
    assert ids == ["question", "limitations", "pictures", *shown]
    assert "content-equivalence" in shown and "census" in shown
    # report.md's list of where the detail is: report.md's alone, and it names every page-only one
    assert DETAIL in on_disk and "detail-in-report-html" not in ids
    for s in report.of("detail"):
        assert (f"`report.html#{s.id}`" in on_disk) == (s.page and not s.markdown), s.title
    # the headline: the model's rows, cell for cell, on the page and in report.md alike
    table = headline_table(report)
    want = [[words(str(c).replace("**", "")) for c in row] for row in table.rows]
    assert body_rows(dom.by_id("headline")) == want and len(want) == 3  # two subsets, pooled
    assert Md.table(table.headers, table.rows) in on_disk
    # every compared cell, gap and truncated measurement: the result's rows, on the page alone
    eq = result.equivalence
    assert eq is not None
    assert len(body_rows(dom.by_id("equivalence-cells"))) == len(eq.pairs) > 0
    assert len(body_rows(dom.by_id("gap-cells"))) == len(result.gaps) > 0
    assert len(body_rows(dom.by_id("truncated-cells"))) == len(result.truncated) > 0
    assert "equivalence-cells" not in on_disk and "Every gap" not in on_disk


def test_the_model_is_built_from_the_result_alone(tmp_path: Path) -> None:
    # no analysis folder, no CSV: the page still has every record table the model holds
    run = write_run(tmp_path, DESIGN, records())
    report = report_model(load_and_analyse([run], AnalyseOptions(boot=BOOT.min)))
    assert not (run / "analysis").exists()
    dom = parse(page(report, tmp_path / "nowhere"))
    for table_id in ("equivalence-cells", "gap-cells", "truncated-cells"):
        assert body_rows(dom.by_id(table_id)), table_id
    # nothing drawn: no picture in the model, and the page says why under Pictures
    assert not [b for s in report.sections for b in s.blocks if isinstance(b, Figure)]
    assert "Forest plot: skipped" in dom.by_id("pictures").words()


def test_a_hostile_prompt_id_is_text_in_the_pages_record_tables(tmp_path: Path) -> None:
    result = analyse_run([hostile_run(tmp_path, NAME)], AnalyseOptions(boot=BOOT.min))
    dom = parse((Path(str(result.out_dir)) / "report.html").read_text(encoding="utf-8"))
    prompt = words(f"prose_01 {NAME}")
    for table_id, column in (("truncated-cells", 0), ("equivalence-cells", 3)):
        cells = {row[column] for row in body_rows(dom.by_id(table_id))}
        assert prompt in cells, table_id
    assert not dom.find("a", href="javascript:alert(1)")
    assert len([s for s in dom.find("script") if "type" not in s.attrs]) == 2  # the page's own


def test_the_pictures_are_drawn_from_the_lines_the_analysis_read(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plots extra draws the pictures")
    run = write_run(tmp_path, DESIGN, records())
    result = load_and_analyse([run], AnalyseOptions(boot=BOOT.min))
    assert sum(len(f.lines) for f in result.record_files) == len(records())
    # The record files gone after the analysis read them: the pictures are still the records'.
    shutil.rmtree(run / "records")
    rows = picture_records(result.record_files)
    assert len(rows) == len(records())
    assert {(r["session"], r["treatment"]) for r in rows} == {
        (r["session"], r["treatment"]) for r in records()
    }
    drawn = pictures.sections(result, pictures.frame(rows))
    alts = [b.alt for s in drawn for b in s.blocks if isinstance(b, Figure)]
    assert alts == ["paired dot plot", "session timeline"]
