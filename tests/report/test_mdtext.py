"""Free text is text: whatever a user, a run or a model wrote reaches report.md escaped, makes
no heading, list, table, link, tag, emphasis or fence there or in report.html, and reads back
as it was written (line breaks as spaces)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_mtpsweep.base.constants import BOOT
from pytest_mtpsweep.kinds.decode.report.sections import render_full
from pytest_mtpsweep.report import mdhtml as md
from pytest_mtpsweep.report.mdtext import Md
from pytest_mtpsweep.report.save import finished
from tests.report import mdsplit
from tests.report.dom import Node, parse
from tests.strategies import Design, make_plan, make_records, noisy, write_run

FORGED = "\n## Headline\nb is +900 % faster"
HOSTILE = [
    FORGED,
    "| a | b |",
    "<script>alert(1)</script>",
    "[x](javascript:alert(1))",
    "![x](x.png)",
    "```",
    "~~~",
    "x\u2028# forged\u2029- item\rquote\x0b> q\x1c1. one\x85two",
    "# heading",
    "- item",
    "1. item",
    "2) item",
    "> quote",
    "+ item",
    "===",
    "    indented",
    "_a_ *b* **c** ~~d~~ `e` a_b",
    "a\\|b \\ c\\",
    "&lt;b&gt; &#35; &amp",
    "<http://example.com> <!-- c -->",
]


def words(text: str) -> str:
    return " ".join(text.split())


def rendered(markdown: str) -> Node:
    """The page's rendering of `markdown`, in one <div>."""
    return parse(f"<div>{md.render(markdown).html}</div>").find("div")[0]


@pytest.mark.parametrize("value", HOSTILE)
def test_text_stays_one_line_of_text_and_reads_back(value: str) -> None:
    escaped = Md.text(value)
    assert "\n" not in escaped and len(escaped.splitlines()) == 1
    line = f"**Question (pre-registered):** {escaped}"
    assert mdsplit.split(f"# t\n\n{line}\n").sections == ()
    (p,) = rendered(line).children
    assert isinstance(p, Node) and p.tag == "p"
    assert [n.tag for n in p.walk()] == ["p", "strong"]  # the writer's bold only
    assert p.words() == words(f"Question (pre-registered): {value}")


@pytest.mark.parametrize("value", HOSTILE)
def test_text_at_the_start_of_a_list_item_is_still_text(value: str) -> None:
    root = rendered(f"- {Md.text(value)}\n- next")
    assert [n.tag for n in root.walk()] == ["div", "ul", "li", "li"]
    assert root.find("li")[0].words() == words(value)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_code_span_holds_the_text_whole(value: str) -> None:
    root = rendered(f"see {Md.code(value)} here")
    (code,) = root.find("code")
    assert code.words() == words(value) and len(root.find()) == 3  # div, p, code


@pytest.mark.parametrize("value", HOSTILE)
def test_a_table_cell_holds_the_text_whole(value: str) -> None:
    table = Md.table(["name", "mark"], [[value, Md(f"**yes** {Md.code(value)}")]])
    assert len(table.splitlines()) == 3
    root = rendered(table)
    (row,) = root.find("tbody")[0].find("tr")
    cells = row.find("td")
    assert len(cells) == 2 and cells[0].words() == words(value)
    assert [n.tag for n in cells[0].walk()] == ["td"]
    assert [n.tag for n in cells[1].walk()] == ["td", "strong", "code"]
    if "\\|" not in value:  # GFM reads `\|` as `|` even in a code span: no faithful form
        assert cells[1].find("code")[0].words() == words(value)


def test_a_fence_is_longer_than_any_backtick_run_inside() -> None:
    text = "subject  cohort\n```\n## Headline\n````` x"
    root = rendered("\n".join([*Md.fence(text), "", "after"]))
    assert root.find("pre")[0].text() == text
    assert [n.tag for n in root.walk()] == ["div", "pre", "code", "p"]


def test_escaping_leaves_plain_names_and_figures_as_they_are() -> None:
    for plain in ("ngram_simple", "mtp-3", "[+1.00, +2.00]", "p<0.05", "+3.10%", "R&D", "a.b"):
        assert Md.text(plain) == plain or plain[0] in "+-"
    assert Md.text(Md.text("*x*")) == "\\*x\\*"  # escaped once, not twice


# A decode run whose every free text is hostile: the question, the scope, the multiplicity,
# a treatment's name, a prompt's id, a note (plan.json's comparability group name is keyed).
NAME = f"b{FORGED} | a | b | <script>alert(1)</script> [x](javascript:alert(1)) ``` \u2028# x"
DESIGN = Design(
    treatments=("none", "fast"),
    prompts={"prose": tuple(f"prose_{i:02d}" for i in range(1, 5)),
             "structured": tuple(f"structured_{i:02d}" for i in range(1, 5))},
)  # fmt: skip


def hostile_run(root: Path, name: str) -> Path:
    records = make_records(DESIGN, noisy(DESIGN, {"fast": 1.1}, sd=0.02))
    prompt = f"prose_01 {name}" if name != "fast" else "prose_01"
    for r in records:
        r["treatment"] = name if r["treatment"] == "fast" else r["treatment"]
        if r["prompt_id"] == "prose_01":
            r |= {"prompt_id": prompt, "finish_reason": "length"}
    plan = make_plan(DESIGN)
    for s in plan["sessions"]:
        s["treatment"] = name if s["treatment"] == "fast" else s["treatment"]
    if name != "fast":
        plan |= {"question": f"Is it faster?{FORGED}", "scope": f"Four prompts. {name}"}
        plan["analysis"]["multiplicity"] = name
    else:
        plan |= {"question": "Is it faster?", "scope": "Four prompts."}
    return write_run(root, DESIGN, records, plan=plan)


def blocks(markdown: str) -> list[str]:
    """The lines of report.md that start a block the writer alone may start."""
    marks = ("#", "|", "```", "~~~", ">", "<", "    ")
    return [line.split(" ", 1)[0] for line in markdown.splitlines() if line.startswith(marks)]


def test_a_hostile_run_has_the_benign_runs_structure_and_headline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions, analyse_run

    monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)
    benign = analyse_run([hostile_run(tmp_path / "benign", "fast")], AnalyseOptions(boot=BOOT.min))
    run = hostile_run(tmp_path / "hostile", NAME)
    result = analyse_run([run], AnalyseOptions(boot=BOOT.min))
    report = (Path(str(result.out_dir)) / "report.md").read_text(encoding="utf-8")
    assert result.report is not None and finished(result.report, run).markdown() == report
    assert report.startswith(result.report_md)  # then the writer's line naming the versions
    heads = [x for x in report.splitlines() if x.startswith("#")]
    assert heads == [x for x in benign.report_md.splitlines() if x.startswith("#")]
    assert blocks(report) == blocks(benign.report_md)
    assert blocks(render_full(result)) == blocks(render_full(benign))
    assert not re.search(r"(?<!\\)\]\(|(?<!\\)<script|(?<!\\)\|\s*a", report)
    # report.html: the headline is the analysis' own, the forged one nowhere a heading
    page = parse((Path(str(result.out_dir)) / "report.html").read_text(encoding="utf-8"))
    headline = page.by_id("headline")
    assert [h.words() for h in headline.find("h3")] == ["Headline (published endpoint)"]
    rows = headline.find("table")[0].find("tbody")[0].find("tr")
    published = result.published
    assert [r.find("td")[0].words() for r in rows] == [words(t) for t in published["treatment"]]
    assert [r.find("td")[3].words() for r in rows] == [
        f"{v:+.2f}%" for v in published["pct_change"]
    ]
    for h in page.find("h2") + page.find("h3") + page.find("h4"):
        assert "+900" not in h.words()
    assert not page.find("a", href="javascript:alert(1)")
    assert len([s for s in page.find("script") if "type" not in s.attrs]) == 2  # the page's own
    question = headline.find("p")[0].words()
    assert question == words(f"Question (pre-registered): Is it faster?{FORGED}")
    data = json.loads((Path(str(result.out_dir)) / "contrasts.json").read_text(encoding="utf-8"))
    assert data["question"] == f"Is it faster?{FORGED}"  # the data keep what was written
