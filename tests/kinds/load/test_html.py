"""The load kind's report.html: written by the analysis (at session end and by `mtpsweep
analyse`) beside report.md from the same report model, self-contained, its headline and
limitations report.md's own, the plots inline or the line that says how to get them, every
block and request in filterable tables, and every string a server, a model or a ladder wrote
as text."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from pytest_mtpsweep.kinds.load.analysis import atend, commands, compute
from pytest_mtpsweep.kinds.load.report.witnesses import LAG
from pytest_mtpsweep.report.images import PLOTS_INSTALL
from pytest_mtpsweep.report.model import Section, Table
from pytest_mtpsweep.report.save import finished
from pytest_mtpsweep.state.plandoc import PlanDoc
from pytest_mtpsweep.wishes.request import AnalysisRequest
from tests.kinds.load.run_fixture import (
    HOSTILE_LADDER,
    HOSTILE_PROMPT,
    HOSTILE_SERVER,
    LAG_FLAG,
    SECRET,
    write_run,
)
from tests.report import mdsplit
from tests.report.dom import Node, parse

BOOT = 200


def analysed(tmp_path: Path, **kwargs: bool) -> tuple[Path, Node, str]:
    run = write_run(tmp_path, **kwargs)
    done = compute.analyse(run, boot=BOOT, seed=1)
    assert not isinstance(done, str), done
    page = (run / "analysis" / "report.html").read_text(encoding="utf-8")
    return run, parse(page), page


def bullets(markdown: str | None) -> list[str]:
    """A section's `- ` items as the page reads them (Markdown marks gone, spaces folded)."""
    items = [x[2:] for x in (markdown or "").splitlines() if x.startswith("- ")]
    return [" ".join(re.sub(r"\*\*|`", "", x).split()) for x in items]


def report_md(run: Path) -> mdsplit.Document:
    return mdsplit.split((run / "analysis" / "report.md").read_text(encoding="utf-8"))


def test_the_session_end_analysis_and_mtpsweep_analyse_both_write_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)
    run = write_run(tmp_path)  # two analyses: the plots are another test's
    page = run / "analysis" / "report.html"
    end = atend.analyse_at_end(run, AnalysisRequest(boot=BOOT, seed=1))
    assert end.error is None and end.report == run / "analysis" / "report.md"
    assert page.is_file()
    page.unlink()
    args = argparse.Namespace(expect=None, baseline=None, boot=BOOT, boot_seed=1)
    assert commands.analyse_command(args, [run], [PlanDoc()]) == 0
    assert page.is_file()


def test_the_headline_is_report_mds_and_limitations_name_the_flagged_client_lag(
    tmp_path: Path,
) -> None:
    run, dom, _ = analysed(tmp_path)
    doc = report_md(run)
    headline = dom.by_id("headline")
    want = bullets(doc.section("Headline"))
    assert [li.words() for li in headline.find("li")] == want
    # A 2-cycle run says first whom its figures speak for (issue 43), then the figures.
    assert want[0].startswith("These figures speak only for the server sessions that were run")
    want = want[1:]
    assert want[0].startswith("ngram vs none, e2e gain: conc1 +25.0 %")
    assert "the gain factor changes -12.0 %" in want[0]  # 1.1 / 1.25 - 1
    # the same figures side by side: one row per contrast, a column per level and the change
    grid = dom.by_id("headline-table")
    assert [th.words() for th in grid.find("th")] == [
        "contrast", "conc1", "conc4", "gain change conc4/conc1",
    ]  # fmt: skip
    row = [td.words() for td in grid.find("td")]
    assert row[0] == "ngram vs none" and all(cell in want[0] for cell in row[1:])
    sections = [s.attrs["id"] for s in dom.find("details", class_="section")]
    assert sections[:3] == ["question", "limitations", "pictures"]
    assert sections[-2:] == ["blocks", "requests"]
    lag = [x for x in bullets(doc.section("Witnesses")) if x.startswith(LAG)]
    assert len(lag) == 1 and "1 of 8 blocks over the bound" in lag[0]
    # the flagged block is a limitation of report.md itself, and the page shows report.md's
    assert lag[0] in bullets(doc.section("Limitations"))
    limits = [li.words() for li in dom.by_id("limitations").find("li")]
    assert limits == bullets(doc.section("Limitations"))


def test_without_a_flagged_block_no_client_lag_limitation(tmp_path: Path) -> None:
    run, dom, _ = analysed(tmp_path, lagged=False)
    limits = [li.words() for li in dom.by_id("limitations").find("li")]
    assert limits == bullets(report_md(run).section("Limitations"))
    assert not any(x.startswith(LAG) for x in limits)


def test_the_page_is_self_contained_and_hostile_strings_stay_text(tmp_path: Path) -> None:
    run, dom, page = analysed(tmp_path)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//)""", page, re.I)
    scripts = dom.find("script")
    assert len(scripts) == 4 and not [s for s in scripts if "src" in s.attrs]
    assert {s.attrs.get("type") for s in scripts} == {None, "application/json"}
    assert all(i.attrs["src"].startswith("data:image/png;base64,") for i in dom.find("img"))
    # nothing a record or a ladder holds became an element or an attribute
    assert not [n for n in dom.walk() if any(a.startswith("on") for a in n.attrs)]
    assert "<script>alert" not in page and "<b>x</b>" not in page
    assert SECRET not in page  # the page shows chosen fields, never a whole record or plan
    assert dom.find("title")[0].text() == f"mtpsweep: {HOSTILE_LADDER}/20260101T000000Z-1"
    # every request, one row each, the hostile prompt and server string as cell text
    rows = dom.by_id("request-rows").find("tr")[1:]
    requests = [json.loads(x) for f in sorted((run / "records").glob("*.jsonl"))
                for x in f.read_text().splitlines() if '"record": "request"' in x]  # fmt: skip
    assert len(rows) == len(requests) == 2 * 2 * 2 * 6
    cells = [[td.text() for td in tr.find("td")] for tr in rows]
    assert sum(c[5] == HOSTILE_PROMPT for c in cells) == 8  # p0 in each of the 8 blocks
    failed = [c for c in cells if c[11] == "failed"]
    assert len(failed) == 1 and failed[0][10] == HOSTILE_SERVER
    assert failed[0][12] == f"{HOSTILE_SERVER}; HTTP 500"
    # the facets are JSON data beside the table, the hostile prompt among them, whole
    facets = [s for s in scripts if s.attrs.get("data-for") == "request-rows"]
    spec = json.loads(facets[0].text())
    assert spec["keys"] == ["treatment", "cycle", "level", "prompt", "status"]
    assert HOSTILE_PROMPT in {r[3] for r in spec["rows"]}
    blocks = [[td.text() for td in tr.find("td")] for tr in dom.by_id("block-rows").find("tr")[1:]]
    assert len(blocks) == 8 and sum(LAG_FLAG in b[-1] for b in blocks) == 1


def test_the_plots_are_inline_in_the_pages_order(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plots extra draws the load plots")
    _, dom, _ = analysed(tmp_path)
    pictures = dom.by_id("pictures").find("img")
    assert [i.attrs["alt"] for i in pictures] == [
        "gain against the level",
        "latency percentiles against the level",
        "throughput against the level",
    ]
    assert all(i.attrs["src"].startswith("data:image/png;base64,") for i in pictures)


def test_without_matplotlib_the_page_has_the_tables_and_says_how_to_get_plots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write_run(tmp_path)
    stale = run / "analysis" / "load_gain.png"
    stale.parent.mkdir()
    stale.write_bytes(b"\x89PNG an earlier analysis' plot")  # drawn when matplotlib was there
    monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)
    done = compute.analyse(run, boot=BOOT, seed=1)
    assert not isinstance(done, str), done
    dom = parse((run / "analysis" / "report.html").read_text(encoding="utf-8"))
    assert not dom.find("img")  # the earlier analysis' plot is not this one's
    assert PLOTS_INSTALL in dom.by_id("pictures").words()
    assert dom.by_id("headline-table").find("td") and dom.by_id("request-rows").find("td")
    assert dom.by_id("per-level").find("table")  # report.md's tables are all there


def test_report_md_and_the_page_are_rendered_from_one_model(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    done = compute.analyse(run, boot=BOOT, seed=1)
    assert not isinstance(done, str) and done.model is not None, done
    model, out = done.model, run / "analysis"
    text = (out / "report.md").read_text(encoding="utf-8")
    assert finished(model, run).markdown() == text  # with the writer's versions line
    dom = parse((out / "report.html").read_text(encoding="utf-8"))

    def cells(node: Node) -> list[list[str]]:
        return [[td.text() for td in tr.find("td")] for tr in node.find("tr")[1:]]

    def table(section: Section, table_id: str) -> Table:
        return next(b for b in section.blocks if isinstance(b, Table) and b.id == table_id)

    # the headline's grid: the page's alone (report.md has its figures as the bullets)
    (headline,) = model.of("headline")
    grid = table(headline, "headline-table")
    assert grid.rows and cells(dom.by_id("headline-table")) == [
        [str(c) for c in r] for r in grid.rows
    ]
    assert "| contrast | conc1 | conc4 |" not in text
    # every block and every request: one page row per model row, none of them in report.md
    by_anchor = {s.anchor: s for s in model.sections if s.anchor}
    for anchor, rows_id in (("blocks", "block-rows"), ("requests", "request-rows")):
        rows = table(by_anchor[anchor], rows_id).rows
        assert not by_anchor[anchor].markdown and len(cells(dom.by_id(rows_id))) == len(rows)
        assert by_anchor[anchor].title not in text


FORGED = "\n## Headline\nb is +900 % faster | a | b | [x](javascript:alert(1)) ```"


def test_a_forged_heading_in_the_question_or_scope_is_text(tmp_path: Path) -> None:
    plain, _, _ = analysed(tmp_path / "plain")
    run = write_run(tmp_path / "forged")
    plan = json.loads((run / "plan.json").read_text(encoding="utf-8"))
    plan |= {"question": plan["question"] + FORGED, "scope": FORGED}
    (run / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    assert not isinstance(compute.analyse(run, boot=BOOT, seed=1), str)

    def heads(r: Path) -> list[str]:
        return [t for t, _ in report_md(r).sections]

    assert heads(run) == heads(plain)
    page = parse((run / "analysis" / "report.html").read_text(encoding="utf-8"))
    headline = page.by_id("headline")
    assert [h.words() for h in headline.find("h3")] == ["Headline"]
    assert "+900" in headline.find("p")[0].words() and not page.find(
        "a", href="javascript:alert(1)"
    )
    assert all("+900" not in h.words() for h in page.find("h2") + page.find("h3"))
