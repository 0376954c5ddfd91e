"""The report model and its two renderers: one model, report.md and report.html from it, the
page's order fixed by each section's role, free text in a cell text on both."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_mtpsweep._version import __version__
from pytest_mtpsweep.base.errors import AnalysisError
from pytest_mtpsweep.report import render_html
from pytest_mtpsweep.report.document import Markup
from pytest_mtpsweep.report.mdtext import Md
from pytest_mtpsweep.report.model import Figure, Page, Report, Section, Table, Text, block_markdown
from pytest_mtpsweep.report.save import write_report
from tests.report.dom import parse

# the smallest valid PNG (1x1, grey): the page inlines its bytes
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010800000000"
    "3a7e9b550000000a49444154789c63680000008200818cf14a9b0000000049454e44ae426082"
)


def sample(*, figure: Figure | None = None) -> Report:
    pictures = (Section("Plots", (figure,), role="pictures"),) if figure else ()
    return Report(
        title="Sample report",
        opening=(Text.of("Question: does it decide?", "", "Scope: two treatments"),),
        sections=(
            Section("Design", (Text.of("- 2 cycles"),)),
            Section(
                "Headline",
                (Table(("contrast", "gain"), (("b vs a", Md("**+3 %**")),), id="headline-table"),),
                role="headline",
            ),
            Section(
                "Host rule",
                (Text.of("No session was quarantined."),),
                role="headline",
                anchor="host-rule",
            ),
            Section("Limitations", (Text.of("- 2 cycles only"),), role="limitations"),
            *pictures,
            Section(
                "Every request",
                (
                    Table(
                        ("treatment", "e2e ms"),
                        (("a", 1.5), ("b", 2.5)),
                        id="request-rows",
                        facets=("treatment",),
                    ),
                ),
                markdown=False,
                anchor="requests",
            ),
        ),
    )


def test_report_md_follows_the_models_order_and_leaves_the_pages_own_out() -> None:
    md = sample().markdown()
    heads = [line for line in md.splitlines() if line.startswith("#")]
    assert heads == [
        "# Sample report",
        "## Design",
        "## Headline",
        "## Host rule",
        "## Limitations",
    ]
    assert "| b vs a | **+3 %** |" in md  # the writer's own bold stays bold
    assert "Every request" not in md and "request-rows" not in md


def test_report_html_opens_with_the_headline_then_limitations_then_the_detail(
    tmp_path: Path,
) -> None:
    page = parse(render_html.page(sample(figure=Figure("gain", "the gain", png=PNG)), tmp_path))
    assert [n.attrs["id"] for n in page.find("details")] == [
        "question",
        "limitations",
        "pictures",
        "design",
        "requests",
    ]
    headline = page.by_id("headline")
    assert "Question: does it decide?" in headline.words()
    assert [n.words() for n in headline.find("h3")] == ["Headline", "Host rule"]
    assert page.by_id("host-rule").tag == "h3"  # a section's own anchor is its title's id
    assert [n.words() for n in page.by_id("headline-table").find("strong")] == ["+3 %"]
    assert "open" in page.by_id("question").attrs and "open" not in page.by_id("design").attrs
    facets = page.by_id("requests").find("script", class_="facets")
    assert json.loads(facets[0].text()) == {"keys": ["treatment"], "rows": [["a"], ["b"]]}
    img = page.by_id("pictures").find("img")[0]
    assert img.attrs["src"].startswith("data:image/png;base64,") and img.attrs["alt"] == "gain"


def test_a_report_without_pictures_has_no_pictures_section(tmp_path: Path) -> None:
    page = parse(render_html.page(sample(), tmp_path))
    assert "pictures" not in [n.attrs["id"] for n in page.find("details")]


def test_a_figure_is_read_from_its_file_and_a_missing_one_says_so(tmp_path: Path) -> None:
    (tmp_path / "gain.png").write_bytes(PNG)
    shown = parse(render_html.page(sample(figure=Figure("gain", file="gain.png")), tmp_path))
    assert shown.by_id("pictures").find("img")
    assert "![gain](gain.png)" in sample(figure=Figure("gain", file="gain.png")).markdown()
    gone = parse(render_html.page(sample(figure=Figure("gain", file="none.png")), tmp_path))
    assert "none.png cannot be read" in gone.by_id("pictures").words()


def test_a_long_table_is_counted_in_report_md_and_whole_on_the_page(tmp_path: Path) -> None:
    rows = tuple((i, i * 2) for i in range(30))
    long = Section(
        "Per level",
        (Table(("level", "n"), rows, id="levels", markdown_rows=3, where="load_levels.csv"),),
    )
    report = Report("R", (), (long,))
    md = report.markdown()
    assert md.count("\n| ") == 4  # the header and three rows
    assert "30 rows: too many to list here; the first 3 above; every row in " in md
    assert "`load_levels.csv`" in md
    page = parse(render_html.page(report, tmp_path))
    assert len(page.by_id("levels").find("tr")) == 31


def test_page_markup_is_the_pages_and_its_stand_in_is_report_mds(tmp_path: Path) -> None:
    cell = Page(Markup.el("div", "cell 1: green", id="cell-1"), markdown="- cell 1: green")
    report = Report("R", (), (Section("Cells", (cell,), open=True),))
    assert "- cell 1: green" in report.markdown()
    page = parse(render_html.page(report, tmp_path))
    assert page.by_id("cell-1").words() == "cell 1: green" and "open" in page.by_id("cells").attrs


def test_write_report_writes_both_from_one_model_and_names_an_unwritable_place(
    tmp_path: Path,
) -> None:
    md, html = write_report(sample(), tmp_path / "analysis")
    closed = dataclasses.replace(sample(), colophon=f"Analysed by pytest-mtpsweep {__version__}.")
    assert md.read_text(encoding="utf-8") == closed.markdown()
    assert html.read_text(encoding="utf-8") == render_html.page(closed, tmp_path / "analysis")
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with pytest.raises(AnalysisError, match=r"cannot write the report into .*; make it writable"):
        write_report(sample(), blocked / "under")
    with pytest.raises(AnalysisError, match=r"cannot write the analysis into .*: it is a file"):
        write_report(sample(), blocked)  # never mkdir'd over: said before a byte is written


def test_an_unknown_block_is_refused_in_one_line(tmp_path: Path) -> None:
    odd = Report("R", (), (Section("S", ("a bare string",)),))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a report block is Text, Table, Figure or Page, not str"):
        odd.markdown()
    with pytest.raises(TypeError, match="not str"):
        render_html.page(odd, tmp_path)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_free_text_in_a_cell_or_a_line_is_text_in_both(value: str) -> None:
    """Whatever a server or a model wrote: on report.md it starts no line of its own and
    closes no row early; on the page it is the text itself, never an element."""
    report = Report(
        "R",
        (Text(f"Question: {Md.text(value)}"),),
        (Section("Headline", (Table(("name", "value"), ((value, 1),), id="t"),), role="headline"),),
    )
    md = report.markdown()
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert len(rows) == 2 and rows[1].endswith(" | 1 |")
    assert [line for line in md.splitlines() if line.startswith("#")] == ["# R", "## Headline"]
    page = parse(render_html.page(report, Path(".")))
    cells = page.by_id("t").find("td")
    assert len(cells) == 2 and cells[1].words() == "1"
    tags = {n.tag for n in page.by_id("t").walk()}
    assert tags <= {"table", "thead", "tbody", "tr", "th", "td"}
    assert cells[0].words() == " ".join(value.split())


PAGE_PARTS = {"render_page", "PageSection", "mdhtml"}


def page_builders(package: Path) -> list[str]:
    """Modules outside report/ that build the page themselves (its skeleton, its sections, or
    report.md's Markdown onto it) or split report.md at its headings."""
    import ast

    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] == "report":
            continue
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] in (
                "report", "document", "mdhtml"):  # fmt: skip
                named = {a.name for a in node.names} | {(node.module or "").split(".")[-1]}
                if PAGE_PARTS & named:
                    found.append(f"{rel}:{node.lineno}")
        if '"\\n## "' in source or '.split("## ' in source:
            found.append(f"{rel}: splits Markdown at its headings")
    return found


def test_no_kind_builds_the_page_or_splits_report_md(tmp_path: Path) -> None:
    """Every kind hands a report model to the renderers; the check is seen to fail first."""
    fake = tmp_path / "pkg"
    (fake / "kinds").mkdir(parents=True)
    (fake / "kinds" / "x.py").write_text(
        "from ..report.document import PageSection\nfrom ..report import mdhtml as md\n"
        'HEAD = text.split("## Headline")\n'
    )
    assert page_builders(fake) == [
        "kinds/x.py:1", "kinds/x.py:2", "kinds/x.py: splits Markdown at its headings"]  # fmt: skip
    assert page_builders(Path(__file__).resolve().parents[2] / "pytest_mtpsweep") == []


def test_an_empty_page_block_shows_nothing_on_either(tmp_path: Path) -> None:
    assert render_html.block(Page(), tmp_path).html == ""
    assert block_markdown(Page()) == ""
