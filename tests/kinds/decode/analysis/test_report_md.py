"""report.md is the findings (question, headline, every limitation, the tables that decide) and
stays short; the diagnostics and the method it only names are on report.html, all of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions, analyse_run
from pytest_mtpsweep.kinds.decode.report.findings import LIMITATIONS
from pytest_mtpsweep.kinds.decode.report.sections import DETAIL, render_full
from pytest_mtpsweep.report.document import anchor
from tests.report.dom import parse
from tests.strategies import Design, make_records, noisy, session_name, write_run

DESIGN = Design(
    treatments=("none", "ngram", "gate"),
    prompts={"prose": tuple(f"prose_{i:02d}" for i in range(1, 7)),
             "structured": tuple(f"structured_{i:02d}" for i in range(1, 7))},
)  # fmt: skip
REPORT_MAX_LINES = 120  # the bound for the demo's report.md


@pytest.fixture(autouse=True)
def _no_plot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)


def records(design: Design = DESIGN, sd: float = 0.02) -> list[dict[str, Any]]:
    return make_records(design, noisy(design, {"ngram": 1.15, "gate": 0.98}, sd=sd))


def limitations(report: str) -> list[str]:
    body = report.split(LIMITATIONS, 1)[1].split("\n## ", 1)[0]
    return [line[2:] for line in body.splitlines() if line.startswith("- ")]


def bullet(report: str, label: str) -> str:
    found = [b for b in limitations(report) if b.startswith(f"**{label}")]
    assert len(found) == 1, (label, limitations(report))
    return found[0]


def host(other_cpu_pct: float, flagged: bool, throttled: dict[str, int] | None = None) -> Any:
    return {"other_cpu_pct": other_cpu_pct, "load_avg_end": [1.0, 1.0, 1.0],
            "throttled": throttled or {}, "flagged": flagged}  # fmt: skip


def facts(
    design: Design,
    noise: dict[str, Any],
    drift: dict[str, float] | None = None,
) -> dict[str, dict[str, Any]]:
    """A session file per session: host noise (quiet unless named) and calibration drift."""
    out = {}
    for o, t, c in design.sessions():
        name = session_name(o, t, c)
        pct = (drift or {}).get(name, 1.0)
        out[name] = {"ordinal": o, "treatment": t, "cycle": c,
                     "host": noise.get(name, host(0.5, False)),
                     "calibration": {"start_tps": 50.0, "end_tps": 50.0 * (1 + pct / 100),
                                     "drift_pct": pct}}  # fmt: skip
    return out


class TestLimitations:
    def test_host_noise_is_named_with_its_sessions_and_where_the_detail_is(
        self, tmp_path: Path
    ) -> None:
        busy, hot, drifted = (session_name(*s) for s in DESIGN.sessions()[1:4])
        noise = {busy: host(23.5, True), hot: host(1.0, False, {"cgroup_nr_throttled": 4})}
        run = write_run(tmp_path, DESIGN, records(),
                        session_facts=facts(DESIGN, noise, {drifted: -31.0}))  # fmt: skip
        line = bullet(analyse_run([run], AnalyseOptions(boot=1000)).report_md, "Host noise")
        assert "1 of 6 sessions ran while other processes used more of the CPU" in line
        assert f"({busy} 23.5 %)" in line
        assert f"1 session(s) were throttled ({hot} (cgroup_nr_throttled 4))" in line
        assert f"calibration moved more than ±10% from start to end ({drifted} -31.00%)" in line
        assert line.endswith("see `report.html#host-noise`.")

    def test_a_quiet_host_is_none_seen_and_an_unrecorded_one_says_so(self, tmp_path: Path) -> None:
        run = write_run(tmp_path, DESIGN, records(), session_facts=facts(DESIGN, {}))
        line = bullet(analyse_run([run], AnalyseOptions(boot=1000)).report_md, "Host noise")
        assert line.startswith("**Host noise:** none seen: no session's other processes")
        assert "every calibration stayed within ±10%" in line
        bare = write_run(tmp_path / "bare", DESIGN, records())
        line = bullet(analyse_run([bare], AnalyseOptions(boot=1000)).report_md, "Host noise")
        assert line.startswith("**Host noise:** not recorded")

    def test_a_step_between_cycles_is_named_and_steady_cycles_are_none_seen(
        self, tmp_path: Path
    ) -> None:
        def rate(step: float) -> Any:
            def at(t: str, c: int, o: int, p: str, r: int) -> float:
                base = 40.0 + int(p[-2:]) * (1.2 if t == "ngram" else 1.0)
                return base * (step if t == "ngram" and c == 2 else 1.0)

            return at

        steady = write_run(tmp_path, DESIGN, make_records(DESIGN, rate(1.0)))
        line = bullet(analyse_run([steady], AnalyseOptions(boot=1000)).report_md, "Drift")
        assert line.startswith("**Drift:** none seen: half the odd- minus even-cycle contrast")
        stepped = write_run(tmp_path / "step", DESIGN, make_records(DESIGN, rate(1.1)))
        line = bullet(analyse_run([stepped], AnalyseOptions(boot=1000)).report_md, "Drift")
        assert "exceeds the ±1% margin in 2 of 4 published cells" in line  # ngram's subsets
        assert "largest ngram" in line and "`report.html#drift`" in line

    def test_every_limitation_is_one_bullet_even_with_no_pairs(self, tmp_path: Path) -> None:
        only = [r for r in records() if r["treatment"] == "none"]
        report = analyse_run(
            [write_run(tmp_path, DESIGN, only)], AnalyseOptions(boot=1000)
        ).report_md
        labels = [b.split(":**")[0] for b in limitations(report)]
        assert "**Host noise" in labels and "**Drift" not in labels  # nothing to drift


class TestLongLists:
    def test_gaps_past_twenty_are_a_count_and_the_csv_that_holds_them(self, tmp_path: Path) -> None:
        recs = [r for r in records() if not (r["treatment"] == "none" and r["cycle"] == 1)]
        result = analyse_run([write_run(tmp_path, DESIGN, recs)], AnalyseOptions(boot=1000))
        census = result.report_md.split("## Census", 1)[1].split("\n## ", 1)[0]
        # ngram and gate lost their partner for all 12 prompts of cycle 1: 24 gaps
        assert "24 gaps: too many to list here; one row each in `gaps.csv` beside this report." in (
            census
        )
        assert "| ngram | treatment without baseline |" not in census
        assert len(pd.read_csv(Path(str(result.out_dir)) / "gaps.csv")) == 24 * 2  # per endpoint

    def test_truncated_prompts_past_twenty_are_counted_in_their_bullet(
        self, tmp_path: Path
    ) -> None:
        design = Design(prompts={"prose": tuple(f"prose_{i:02d}" for i in range(1, 25))})
        recs = [{**r, "finish_reason": "length"} for r in records(design)]
        result = analyse_run([write_run(tmp_path, design, recs)], AnalyseOptions(boot=1000))
        line = bullet(result.report_md, "Truncation")
        assert "96 analysed measurement(s) of 24 prompt(s)" in line
        assert "prose_20 and 4 more)" in line and "prose_21" not in line
        assert "one row each in `truncated.csv`" in line


def every_heading(markdown: str) -> list[str]:
    return [line[3:] for line in markdown.splitlines() if line.startswith("## ")]


class TestTheDetailIsOnReportHtml:
    def test_every_section_report_md_leaves_out_is_a_section_of_report_html(
        self, tmp_path: Path
    ) -> None:
        from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions
        from pytest_mtpsweep.kinds.decode.analysis.io import analyse_run as with_html

        recs = [{**r, "finish_reason": "length"} if r["prompt_id"] == "prose_01" else r
                for r in records()]  # fmt: skip
        run = write_run(tmp_path, DESIGN, recs, session_facts=facts(DESIGN, {}))
        result = with_html([run], AnalyseOptions(boot=1000, draw=True))
        report, full = result.report_md, render_full(result)
        left_out = [t for t in every_heading(full) if t not in every_heading(report)]
        assert left_out == [
            "Endpoints and tie-break", "Small-sample cross-checks", "Content equivalence",
            "Drift", "Position within session", "Truncated measurements",
            "What the model wrote", "Interval endpoint basis", "Host noise",
            "Comparability groups", "Method and multiplicity",
        ]  # fmt: skip
        # report.md names each, once, with its anchor, and nothing it shows is missing there
        pointers = report.split(DETAIL, 1)[1].split("\n## ", 1)[0]
        assert [line.split(":")[0][2:] for line in pointers.splitlines() if line[:2] == "- "] == (
            left_out
        )
        assert set(every_heading(report)) - {DETAIL[3:]} <= set(every_heading(full))
        page = parse((run / "analysis" / "report.html").read_text(encoding="utf-8"))
        for title in left_out:
            assert f"`report.html#{anchor(title)}`" in pointers
            shown = page.by_id(anchor(title))
            assert shown.find("summary")[0].words() == title and shown.find("div", class_="body")
            # the page's section holds what the full set says under that heading
            body = full.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
            first = next(line for line in body.splitlines() if line and line[0] not in "|-")
            assert " ".join(first.replace("**", "").replace("`", "").split()[:6]) in (
                shown.words()
            ), title
        assert "Per-session calibration drift" in page.by_id("host-noise").words()


def test_a_demo_sized_report_stays_within_its_bound(tmp_path: Path) -> None:
    """Three treatments, two subsets, every answer cut, gaps, a noisy host: still short."""
    recs = [{**r, "finish_reason": "length"} for r in records()]
    recs = [r for r in recs if not (r["treatment"] == "gate" and r["prompt_id"] == "prose_02")]
    busy = {session_name(*s): host(30.0, True) for s in DESIGN.sessions()[:2]}
    run = write_run(tmp_path, DESIGN, recs, session_facts=facts(DESIGN, busy))
    report = analyse_run([run], AnalyseOptions(boot=1000)).report_md
    assert len(report.splitlines()) <= REPORT_MAX_LINES, len(report.splitlines())
    bullets = limitations(report)
    for label in ("Multiplicity:", "Truncation:", "Curtailment and stops:",
                  "Conditional on sessions:", "Content equivalence:", "Degenerate output:",
                  "Host noise:", "Drift:", "Position trend:", "Cross-checks"):  # fmt: skip
        assert sum(b.startswith(f"**{label}") for b in bullets) == 1, (label, bullets)
