"""The report page's builder: what a run wrote is text wherever it lands, and the page is whole."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from pytest_mtpsweep.report import Markup, PageSection, json_script, text
from pytest_mtpsweep.report.assets import ERRORS_JS, PAGE_JS
from pytest_mtpsweep.report.document import CSP, render_page
from pytest_mtpsweep.report.model import Report, Section, Text
from pytest_mtpsweep.report.pagetables import filterable, table
from pytest_mtpsweep.report.save import write_report
from tests.report.dom import parse

HOSTILE = '</script><script>alert(1)</script> "><img src=x onerror=alert(1)> \u2028\u2029 & end'


def test_text_and_attributes_are_escaped() -> None:
    built = Markup.el("td", HOSTILE, title=HOSTILE, data_cell=HOSTILE)
    root = parse(built.html)
    (td,) = root.find("td")
    assert td.text() == HOSTILE and td.attrs["title"] == HOSTILE == td.attrs["data-cell"]
    assert not root.find("script") and not root.find("img")
    assert text(HOSTILE).html.count("<") == 0


@pytest.mark.parametrize(
    ("tag", "attrs"),
    [
        ("script", {}),
        ("style", {}),
        ("iframe", {}),
        ("a", {"onclick": "x()"}),
        ("a", {"href": "javascript:alert(1)"}),
        ("a", {"href": "https://example.org/"}),
        ("img", {"src": "x"}),
        ("div", {'x" onload="y': "1"}),
    ],
)
def test_the_builder_refuses_what_could_run_or_fetch(tag: str, attrs: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="not"):
        Markup.el(tag, **attrs)


def test_json_for_scripts_cannot_end_its_element_and_reads_back_whole() -> None:
    data = {"rows": [[HOSTILE, "<!--", "]]>"]]}
    built = json_script(data, class_="facets", data_for="x").html
    body = built[built.index(">") + 1 : -len("</script>")]
    assert not re.search(r"[<>&\u2028\u2029]", body)
    assert json.loads(body) == data
    (script,) = parse(built).find("script")
    assert script.attrs == {"type": "application/json", "class": "facets", "data-for": "x"}


def test_the_policy_forbids_every_request_and_allows_exactly_the_two_scripts() -> None:
    def digest(script: str) -> str:
        return base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()

    directives = dict(d.strip().split(" ", 1) for d in CSP.split(";"))
    assert directives["default-src"] == "'none'" and directives["img-src"] == "data:"
    assert directives["script-src"].split() == [
        "'unsafe-inline'",
        f"'sha256-{digest(ERRORS_JS)}'",
        f"'sha256-{digest(PAGE_JS)}'",
    ]
    page = parse(render_page("t", [PageSection("A", text("a"))]))
    (meta,) = page.find("meta", http_equiv="Content-Security-Policy")
    assert meta.attrs["content"] == CSP
    scripts = [s.text() for s in page.find("script")]
    assert scripts == [ERRORS_JS, PAGE_JS]  # the hashes above are of exactly these texts


def test_sections_open_or_collapsed_with_contents_and_the_error_box_first(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "analysis").mkdir(parents=True)
    (run / "plan.json").write_text(json.dumps({"run_id": "r1", "ladder": "demo"}))
    report = Report("R", (), (Section("Limitations", (Text("none"),), role="limitations"),
                              Section("Method", (Text("m"),))))  # fmt: skip
    _, path = write_report(report, run / "analysis", run)
    assert path == run / "analysis" / "report.html"
    page = parse(path.read_text(encoding="utf-8"))
    body = page.find("body")[0]
    first = next(c for c in body.children if not isinstance(c, str))
    assert first.attrs == {"id": "js-errors", "hidden": ""}
    assert page.find("title")[0].text() == "mtpsweep: demo/r1"
    question, limits, method = page.find("details", class_="section")
    assert (question.attrs["id"], "open" in question.attrs) == ("question", True)
    assert (limits.attrs["id"], "open" in limits.attrs) == ("limitations", True)
    assert (method.attrs["id"], "open" in method.attrs) == ("method", False)
    hrefs = [a.attrs["href"] for a in page.find("nav")[0].find("a")]
    assert hrefs == ["#question", "#limitations", "#method"]
    assert not list(run.glob("analysis/.report.*"))  # written through a temporary file


def test_tables_show_values_as_text_and_filterable_ones_carry_their_facets() -> None:
    plain = parse(table(["a", "b"], [[1.23456, None], [HOSTILE, float("nan")]]).html)
    assert [td.text() for td in plain.find("td")] == ["1.235", "-", HOSTILE, "-"]
    built = parse(filterable("t", ["treatment", "verdict"], [["x", HOSTILE], ["y", "ok"]],
                             ["verdict"]).html)  # fmt: skip
    (facets,) = built.find("script", class_="facets")
    assert json.loads(facets.text()) == {"keys": ["verdict"], "rows": [[HOSTILE], ["ok"]]}
    assert [tr.attrs.get("data-i") for tr in built.find("tr")] == [None, "0", "1"]
    assert not built.find("img")
