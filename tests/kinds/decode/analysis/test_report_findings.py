"""report.md as a findings document: question first, limitations before the tables that
decide, the detail only named (it is on report.html); content equivalence and draft acceptance
wired into the analysis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.decode.analysis.equivalence import content_equivalence
from pytest_mtpsweep.kinds.decode.analysis.frame import parse_records
from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions, analyse_run
from pytest_mtpsweep.kinds.decode.analysis.runvalues import RecordFile
from pytest_mtpsweep.kinds.decode.report.findings import LIMITATIONS
from pytest_mtpsweep.kinds.decode.report.sections import DETAIL, render_full
from pytest_mtpsweep.report.document import anchor
from tests.strategies import Design, make_plan, make_records, noisy, write_run

DESIGN = Design(
    treatments=("none", "gate"),
    prompts={"prose": tuple(f"prose_{i:02d}" for i in range(1, 7)),
             "structured": tuple(f"structured_{i:02d}" for i in range(1, 7))},
)  # fmt: skip
QUESTION = "Does the gate slow prose down?"
SCOPE = "This design bounds where the gain starts; it does not locate a knee."


@pytest.fixture(autouse=True)
def _no_plot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)


def records(edit: dict[tuple[str, int, str], dict[str, Any]] | None = None) -> list[Any]:
    recs = make_records(DESIGN, noisy(DESIGN, {"gate": 0.95}, sd=0.02))
    for r in recs:
        r.update((edit or {}).get((r["treatment"], r["cycle"], r["prompt_id"]), {}))
    return recs


def plan(**extra: Any) -> dict[str, Any]:
    doc = make_plan(DESIGN)
    doc.update(question=QUESTION, scope=SCOPE)
    doc.update(extra)
    return doc


def run(tmp_path: Path, recs: list[Any], **plan_extra: Any) -> Any:
    path = write_run(tmp_path, DESIGN, recs, plan=plan(**plan_extra))
    return analyse_run([path], AnalyseOptions(boot=1000))


def section(report: str, heading: str) -> str:
    return report.split(heading, 1)[1].split("\n## ", 1)[0]


class TestFindingsDocument:
    def test_opens_with_the_question_and_its_scope(self, tmp_path: Path) -> None:
        lines = run(tmp_path, records()).report_md.splitlines()
        assert lines[0].startswith("# mtpsweep analysis:")
        assert lines[2] == f"**Question (pre-registered):** {QUESTION}"
        assert lines[4] == f"**Scope:** {SCOPE}"

    def test_a_run_without_a_recorded_question_says_so(self, tmp_path: Path) -> None:
        path = write_run(tmp_path, DESIGN, records())  # make_plan has no question
        report = analyse_run([path], AnalyseOptions(boot=1000)).report_md
        assert report.splitlines()[2].startswith("**Question (pre-registered):** not recorded")
        assert "**Scope:**" not in report

    def test_headline_then_limitations_then_the_tables_that_decide(self, tmp_path: Path) -> None:
        result = run(tmp_path, records())
        report = result.report_md
        order = ["**Question", "## Headline", LIMITATIONS, "## Draft acceptance", "## Census",
                 DETAIL, "## Plot"]  # fmt: skip
        at = [report.index(h) for h in order]
        assert at == sorted(at), dict(zip(order, at, strict=True))
        limits = section(report, LIMITATIONS)
        for item in ("**Multiplicity:** 1 treatment(s) × 3 subset cell(s) = 3 headline",
                     "**Truncation:** no analysed measurement", "**Curtailment and stops:** none",
                     "**Conditional on sessions:** with 2 cycle(s)",
                     "**Content equivalence:** every treatment's answers are identical",
                     "**Degenerate output:** none detected", "**Host noise:** not recorded",
                     "**Drift:** ", "**Position trend:** not estimable",
                     "**Cross-checks:** the arithmetic mean"):  # fmt: skip
            assert item in limits, item
        # the diagnostics and the method: in the full set (report.html), in its order, and
        # named in report.md by one line each, never shown there
        full = render_full(result)
        detail = ["## Endpoints and tie-break", "## Content equivalence", "## Draft acceptance",
                  "## Census", "## Method and multiplicity"]  # fmt: skip
        at = [full.index(h) for h in detail]
        assert at == sorted(at), dict(zip(detail, at, strict=True))
        pointers = section(report, DETAIL)
        for moved in ("Endpoints and tie-break", "Content equivalence", "Method and multiplicity"):
            assert f"## {moved}" not in report
            assert f"- {moved}: `report.html#{anchor(moved)}`" in pointers

    def test_one_cycle_claims_no_self_identity(self, tmp_path: Path) -> None:
        one = [r for r in records() if r["cycle"] == 1]
        limits = section(run(tmp_path, one).report_md, LIMITATIONS)
        assert "all 12 compared (prompt, cycle) cells" in limits
        assert (
            "nothing was compared across cycles" in limits and "identical to itself" not in limits
        )

    def test_the_preregistered_multiplicity_is_quoted(self, tmp_path: Path) -> None:
        doc = plan()
        doc["analysis"]["multiplicity"] = "two arms, no correction."
        path = write_run(tmp_path, DESIGN, records(), plan=doc)
        limits = section(analyse_run([path], AnalyseOptions(boot=1000)).report_md, LIMITATIONS)
        assert "Pre-registered: two arms, no correction." in limits

    def test_a_deadline_stop_and_unselected_sessions_are_limitations(self, tmp_path: Path) -> None:
        doc = plan()
        doc["sessions"].append(
            {
                "ordinal": 5,
                "treatment": "gate",
                "cycle": 3,
                "session": "05_gate_c3",
                "selected": False,
            }
        )
        doc["sessions"].append(
            {
                "ordinal": 6,
                "treatment": "none",
                "cycle": 3,
                "session": "06_none_c3",
                "selected": True,
            }
        )
        path = write_run(tmp_path, DESIGN, records(), plan=doc)
        (path / "curtailment.json").write_text(
            json.dumps(
                {
                    "dropped": [],
                    "affected_treatments": [],
                    "sentence": "",
                    "deadline_stop": {
                        "deadline": "04:00",
                        "after": "04_none_c2",
                        "not_run": ["06_none_c3"],
                    },
                }
            )
        )
        limits = section(analyse_run([path], AnalyseOptions(boot=1000)).report_md, LIMITATIONS)
        assert "**Curtailment and stops:** the run was stopped by its deadline (04:00)" in limits
        assert "did not run 06_none_c3" in limits
        assert "**Not selected:** 1 planned session(s) were not selected" in limits
        assert "05_gate_c3" in limits.split("**Not selected:**")[1]
        # selected, never reached: no records, no session file, no quarantine
        assert (
            "**Not run:** 1 selected session(s) left neither records nor a session file "
            "(06_none_c3)" in limits
        )
        assert "01_none_c1" not in limits

    def test_truncated_prompts_are_named_as_a_limitation(self, tmp_path: Path) -> None:
        cut = {"finish_reason": "length"}
        result = run(
            tmp_path, records({("none", 1, "prose_03"): cut, ("gate", 1, "prose_03"): cut})
        )
        limits = section(result.report_md, LIMITATIONS)
        assert "2 analysed measurement(s) of 1 prompt(s) hit the token cap (prose_03)" in limits
        eq = section(render_full(result), "## Content equivalence")
        assert "| gate | prose | prose_03 | c1 | identical up to the cap | both |" in eq


class TestContentEquivalence:
    def test_one_differing_cell_is_listed_and_flagged(self, tmp_path: Path) -> None:
        other = {"content_sha256": "f" * 64, "content_chars": 380}
        result = run(tmp_path, records({("gate", 2, "structured_04"): other}))
        limits = section(result.report_md, LIMITATIONS)
        assert (
            "**Correctness flag:** `gate` answers differ from `none`'s in 1 of 12 structured "
            "(prompt, cycle) cells at temperature 0 (structured_04)" in limits
        )
        assert "not identical to itself across cycles in 1 of 6 prompts (structured_04)" in limits
        eq = section(render_full(result), "## Content equivalence")
        cells, selves = eq.split("Answers unlike their own first cycle:")
        listed = [line for line in cells.splitlines() if line.startswith("| gate |")]
        assert listed == ["| gate | structured | structured_04 | c2 | differs | - | 380 | 400 |"]
        listed = [line for line in selves.splitlines() if line.startswith("| gate |")]
        assert listed == ["| gate | structured | structured_04 | c1,c2 | differs | 400,380 |"]
        assert "gate (prose): identical to none in all 12 (prompt, cycle) cells" in eq
        table = pd.read_csv(Path(result.out_dir) / "equivalence.csv")
        differs = table[table["verdict"] == "differs"]
        assert list(zip(differs["prompt_id"], differs["cycle"], strict=True)) == [
            ("structured_04", 2)
        ]
        assert len(table) == 24  # every (prompt, cycle) of gate

    def test_not_checked_above_temperature_zero(self, tmp_path: Path) -> None:
        other = {"content_sha256": "f" * 64, "temperature": 0.7}
        recs = [{**r, "temperature": 0.7} for r in records({("gate", 1, "prose_01"): other})]
        result = run(tmp_path, recs)
        assert result.equivalence is None
        assert "temperature 0.7" in section(result.report_md, LIMITATIONS)
        assert "Correctness flag" not in render_full(result)
        table = pd.read_csv(Path(result.out_dir) / "equivalence.csv")
        assert table.empty and "verdict" in table.columns
        payload = json.loads((Path(result.out_dir) / "contrasts.json").read_text())
        assert payload["equivalence"]["checked"] is False

    def test_pooled_runs_compare_within_each_run(self) -> None:
        files = []
        for run_id in ("run-1", "run-2"):
            design = Design(DESIGN.treatments, DESIGN.prompts, run_id=run_id)
            recs = make_records(design, lambda *a: 10.0)
            for r in recs:
                changed = (r["treatment"], r["prompt_id"]) in {("gate", "prose_01"),
                                                               ("none", "prose_02")}  # fmt: skip
                if run_id == "run-2" and changed:
                    r["content_sha256"] = "e" * 64
            files.append(RecordFile(run_id, "all", tuple(json.dumps(r) for r in recs)))
        frame = parse_records(files, session_facts={}, plan_keyed={})[0]
        eq = content_equivalence(frame, "none")
        differ = eq.pairs[eq.pairs["verdict"] == "differs"]
        # run-2's gate changed prose_01 and run-2's baseline changed prose_02: both differ, in
        # both cycles, against run-2's own baseline only; run-1 is identical throughout.
        assert sorted(zip(differ["run_id"], differ["prompt_id"], strict=True)) == [
            ("run-2", "prose_01"), ("run-2", "prose_01"), ("run-2", "prose_02"),
            ("run-2", "prose_02"),
        ]  # fmt: skip
        assert len(eq.pairs) == 2 * 24


@settings(max_examples=25, deadline=None)
@given(st.sets(st.tuples(st.sampled_from(DESIGN.prompts["prose"]), st.integers(1, 2)), max_size=6))
def test_the_flagged_prompts_are_exactly_the_changed_cells(cells: set[tuple[str, int]]) -> None:
    recs = make_records(DESIGN, lambda *a: 10.0)
    for r in recs:
        if r["treatment"] == "gate" and (r["prompt_id"], r["cycle"]) in cells:
            r["content_sha256"] = "f" * 64
    frame = parse_records(
        [RecordFile("run-1", "all", tuple(json.dumps(r) for r in recs))],
        session_facts={},
        plan_keyed={},
    )[0]
    eq = content_equivalence(frame, "none")
    differ = eq.pairs[eq.pairs["verdict"] == "differs"]
    assert set(zip(differ["prompt_id"], differ["cycle"], strict=True)) == cells
    prose = eq.summary.set_index(["treatment", "subset"]).loc[("gate", "prose")]
    assert prose["differing_prompts"].split() == sorted({p for p, _ in cells})
    # A prompt changed in exactly one cycle is unlike itself; in both (same text), like itself.
    once = {p for p, _ in cells if sum(q == p for q, _ in cells) == 1}
    assert set(prose["self_differing_prompts"].split()) == once


class TestDraftAcceptance:
    def test_per_treatment_drafted_accepted_and_rate(self, tmp_path: Path) -> None:
        recs = records()
        for r in recs:
            if r["treatment"] == "gate":
                r.update(draft_n=10, draft_n_accepted=7)
        result = run(tmp_path, recs)
        acc = section(result.report_md, "## Draft acceptance")
        assert "| gate | pooled | 24 | 24 | 240 | 168 | 70.0% |" in acc
        assert "| none | pooled | 24 | 0 | - | - | - |" in acc
        table = pd.read_csv(Path(result.out_dir) / "acceptance.csv")
        assert set(table.columns) >= {"treatment", "draft_n", "draft_n_accepted", "acceptance_pct"}


class TestLongLists:
    def test_more_than_twenty_rows_are_a_count_and_the_csv_that_holds_them(
        self, tmp_path: Path
    ) -> None:
        cut = {"finish_reason": "length"}
        edit = {("gate" if g else "none", c, p): cut for g in (0, 1) for c in (1, 2)
                for p in [*DESIGN.prompts["prose"], *DESIGN.prompts["structured"][:1]]}  # fmt: skip
        result = run(tmp_path, records(edit))
        out = Path(result.out_dir)
        eq = section(render_full(result), "## Content equivalence")
        assert "Truncated cells that do not differ:" in eq
        assert eq.count("| identical up to the cap |") == 14  # 7 prompts x 2 cycles: listed
        truncated = section(render_full(result), "## Truncated measurements")
        assert (
            "28 measurements of 7 prompt(s), by prompt: `prose_01` (4), `prose_02` (4)" in truncated
        )
        assert "one row each in `truncated.csv` beside this report" in truncated
        assert "- `prose_01`:" not in truncated
        assert len(pd.read_csv(out / "truncated.csv")) == 28
        # past twenty compared cells the list is the count and the file
        edit.update({("none", c, p): cut for c in (1, 2) for p in DESIGN.prompts["structured"]})
        edit.update({("gate", c, p): cut for c in (1, 2) for p in DESIGN.prompts["structured"]})
        result = run(tmp_path / "more", records(edit))
        eq = section(render_full(result), "## Content equivalence")
        line = (
            "24 cells: too many to list here; one row each in `equivalence.csv` beside this report."
        )
        assert line in eq and "| identical up to the cap |" not in eq
        equivalence = pd.read_csv(Path(result.out_dir) / "equivalence.csv")
        assert (equivalence["verdict"] == "identical up to the cap").sum() == 24
