"""The authoring report opens with the question, the design, a headline and Limitations that
name what holds (identical repeats, feedback that never rescued, few tasks, one subject,
cells without an outcome, lowered concurrency); report.html opens with the same text, both
rendered from the one report model the analysis returns."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.kinds.authoring import records
from pytest_mtpsweep.kinds.authoring.analysis.io import analyse_dir
from pytest_mtpsweep.kinds.authoring.report.findings import LIMITATIONS
from pytest_mtpsweep.kinds.authoring.report.sections import COHORT_HEADERS
from pytest_mtpsweep.report.document import REPORT_HTML
from pytest_mtpsweep.report.model import Table
from pytest_mtpsweep.report.save import finished
from tests.kinds.authoring.analysis.test_contrast import cell
from tests.kinds.authoring.analysis.test_repeats import turn
from tests.report.dom import Node, parse

QUESTION = "Does the doctest cohort reach green more often?"
PLAN = {
    "kind": "authoring", "run_id": "run-7", "ladder": "tiny", "baseline_cohort": "a",
    "question": QUESTION, "scope": "Eight toy tasks; says nothing of larger programs.",
    "max_turns": 2, "keyed": {"temperature": 0.0},
    "analysis": {"multiplicity": "1 contrast x 1 subject x 4 endpoints, no correction."},
}  # fmt: skip


def write(run: Path, copies: bool, rescued: bool = False) -> None:
    """Subject s, cohorts a and b, four tasks, three repeats; t3 never green in cohort b."""
    cells, turns = [], []
    for cohort in ("a", "b"):
        for task in ("t0", "t1", "t2", "t3"):
            for r in (1, 2, 3):
                missed = cohort == "b" and task == "t3"
                outcome = records.EXHAUSTED if missed else records.FIRST_ATTEMPT_GREEN
                if missed and rescued and r == 1:
                    outcome = records.GREEN_AFTER_K
                c = cell("s", cohort, task, r, outcome)
                cells.append(c)
                sha = f"{cohort}{task}" if copies else f"{cohort}{task}-{r}"
                turns.append(turn(c, 1, sha, "assert 1 == 2" if missed else None))
                if missed:
                    last = turn(c, 2, sha, "assert 1 == 2")
                    turns.append(last | {"feedback_chars": None})  # the last turn's goes nowhere
    for folder, rows in ((records.CELLS_DIR, cells), (records.TURNS_DIR, turns)):
        (run / folder).mkdir(parents=True)
        (run / folder / "01_s_c1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
    (run / schema.PLAN_FILE).write_text(json.dumps(PLAN))


def limitations(report: str) -> list[str]:
    body = report.split(LIMITATIONS, 1)[1].split("\n## ", 1)[0]
    return [line[2:] for line in body.splitlines() if line.startswith("- ")]


def labels(report: str) -> list[str]:
    return [b.split(":**")[0].strip("*") for b in limitations(report)]


def analysed(run: Path) -> str:
    analyse_dir(run, "a", 1000, 42, pooled=False)
    return (run / schema.ANALYSIS_DIR / schema.REPORT_MD).read_text(encoding="utf-8")


def page_of(run: Path) -> Node:
    return parse((run / schema.ANALYSIS_DIR / REPORT_HTML).read_text(encoding="utf-8"))


def test_opens_with_question_scope_design_and_headline(tmp_path: Path) -> None:
    write(tmp_path, copies=True)
    lines = analysed(tmp_path).splitlines()
    assert lines[0] == "# Authoring report: tiny/run-7"
    assert lines[2] == f"**Question (pre-registered):** {QUESTION}"
    assert lines[4] == f"**Scope:** {PLAN['scope']}"
    assert lines[6] == (
        "**Design:** 1 subject(s) (s) × 2 cohort(s) (a, b; baseline a) × 4 task(s) × 3 "
        "repeat(s) = 24 cells; at most 2 turn(s) per cell; temperature 0."
    )
    assert lines[8].startswith("**Headline:** s: b vs a reached green -25.0 pp [")
    assert lines[8].endswith("over 4 tasks (the interval includes 0).")
    assert lines[10] == LIMITATIONS


def test_identical_repeats_and_feedback_that_never_rescued_are_limitations(
    tmp_path: Path,
) -> None:
    write(tmp_path, copies=True)
    report = analysed(tmp_path)
    assert labels(report) == [
        "Outcomes", "Repeats identical", "Feedback never rescued a cell", "Few tasks",
        "One subject", "Multiplicity (pre-registered)",
    ]  # fmt: skip
    same, never = limitations(report)[1:3]
    assert "s wrote the same artefacts in every repeat of every cell (3 repeats)" in same
    assert "2 of 3 repeats add no information" in same
    assert "of 3 cells not green at turn 1, none reached green" in never
    assert "(3 error message(s) went back)" in never
    assert "4 task(s); every interval is over tasks" in limitations(report)[3]


def test_sampled_repeats_and_a_rescue_leave_those_bullets_out(tmp_path: Path) -> None:
    write(tmp_path, copies=False, rescued=True)
    found = labels(analysed(tmp_path))
    assert "Repeats identical" not in found and "Feedback never rescued a cell" not in found
    assert found[0] == "Outcomes" and "Few tasks" in found


def test_cells_without_an_outcome_and_lowered_concurrency_are_named(tmp_path: Path) -> None:
    write(tmp_path, copies=False)
    path = tmp_path / records.CELLS_DIR / "01_s_c1.jsonl"
    extra = [cell("s", "a", "t4", 1, records.API_FAILURE) | {"api_error": "HTTP 500"},
             cell("s", "b", "t4", 1, None) | {"reason": "the server died"}]  # fmt: skip
    path.write_text(path.read_text() + "".join(json.dumps(x) + "\n" for x in extra))
    (tmp_path / schema.SESSIONS_DIR).mkdir()
    (tmp_path / schema.session_file("01_s_c1")).write_text(json.dumps(
        {"treatment": "s", "concurrency": 4, "concurrency_lowest": 1, "throttled_requests": 9}
    ))  # fmt: skip
    bullets = limitations(analysed(tmp_path))
    assert bullets[0].startswith("**Concurrency lowered:** s ran 4 cells in flight; HTTP 429s")
    assert "to 1 (9 request(s) throttled)" in bullets[0]
    assert bullets[1] == (
        "**Cells without an informative outcome:** 2 of 26 (api_failure 1, no outcome 1): "
        "counted, left out of the rates and token means; each is named in the census "
        "(`census.csv`)."
    )


def test_a_long_census_list_is_a_count_and_its_csv(tmp_path: Path) -> None:
    write(tmp_path, copies=False)
    path = tmp_path / records.CELLS_DIR / "01_s_c1.jsonl"
    failed = [cell("s", "a", f"x{i}", 1, records.API_FAILURE) | {"api_error": "HTTP 500"}
              for i in range(21)]  # fmt: skip
    path.write_text(path.read_text() + "".join(json.dumps(x) + "\n" for x in failed))
    census = analysed(tmp_path).split("## Census", 1)[1].split("\n## ", 1)[0]
    assert "- 21 cells without an informative outcome: too many to list here; one row each in " \
        "`census.csv` beside this report" in census  # fmt: skip
    assert "s-a-x0-r1" not in census


def plain(markdown: str) -> str:
    return " ".join(re.sub(r"\*\*|`", "", markdown).split())


def test_report_html_opens_with_the_same_question_headline_and_limitations(
    tmp_path: Path,
) -> None:
    write(tmp_path, copies=True)
    report = analysed(tmp_path)
    page = page_of(tmp_path)
    sections = [s.attrs["id"] for s in page.find("details", class_="section")]
    assert sections[:3] == ["question", "limitations", "conversations"]
    opening = page.by_id("question").words()
    for line in report.split(LIMITATIONS)[0].splitlines()[2:]:
        if line:
            assert plain(line) in opening, line
    shown = [li.words() for li in page.by_id("limitations").find("li")]
    assert shown == [plain(b) for b in limitations(report)]
    assert sections[-2:] == ["census", "notes"]


FORGED = "\n## Headline\nb is +900 % faster | a | b | <script>alert(1)</script> ```"


def test_a_forged_heading_in_the_question_or_scope_is_text(tmp_path: Path) -> None:
    plain, forged = tmp_path / "plain", tmp_path / "forged"
    for run in (plain, forged):
        write(run, copies=False)
    hostile = PLAN | {"question": QUESTION + FORGED, "scope": FORGED, "ladder": f"t{FORGED}"}
    (forged / schema.PLAN_FILE).write_text(json.dumps(hostile))
    report, benign = analysed(forged), analysed(plain)

    def blocks(text: str) -> list[str]:  # what starts each block, the title's words aside
        marks = ("# ", "## ", "`", "|")
        return [x[:3] if x[:2] == "# " else x for x in text.splitlines() if x.startswith(marks)]

    assert blocks(report) == blocks(benign)
    page = page_of(forged)
    headline = page.by_id("headline")
    assert " ".join(f"{QUESTION}{FORGED}".split()) in headline.find("p")[0].words()
    assert all("+900" not in h.words() for h in page.find("h2") + page.find("h3"))


def test_report_md_and_report_html_are_rendered_from_the_one_model(tmp_path: Path) -> None:
    write(tmp_path, copies=False)
    result = analyse_dir(tmp_path, "a", 1000, 42, pooled=False)
    report = (tmp_path / schema.ANALYSIS_DIR / schema.REPORT_MD).read_text(encoding="utf-8")
    assert finished(result.report, tmp_path).markdown() == report  # and the versions' line
    [table] = [b for s in result.report.of("headline") for b in s.blocks if isinstance(b, Table)]
    assert table.headers == COHORT_HEADERS
    assert [r[:3] for r in table.rows] == [("s", "a", "12"), ("s", "b", "12")]
    cohorts = page_of(tmp_path).by_id("headline").by_id("cohorts")
    assert [th.words() for th in cohorts.find("th")] == list(COHORT_HEADERS)
    assert [tuple(td.words() for td in tr.find("td")) for tr in cohorts.find("tr")[1:]] == list(
        table.rows
    )
    for row in table.rows:  # report.md holds the same rows, cell for cell
        assert "| " + " | ".join(map(str, row)) + " |" in report.splitlines()
    # the conversations are the page's alone: one element per cell there, none in report.md
    assert "## Conversations" not in report
    shown = page_of(tmp_path).by_id("conversations").find("details", class_="cell")
    assert sorted(c.attrs["id"] for c in shown) == sorted(f"cell-{c}" for c in result.census.cell)
