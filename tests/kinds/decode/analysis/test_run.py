"""Analysing run directories: comparability, exclusions, census, tie-break and outputs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from pytest_mtpsweep.base.errors import AnalysisError
from pytest_mtpsweep.kinds.decode.analysis.io import OUTPUT_FILES, AnalyseOptions, analyse_run
from pytest_mtpsweep.kinds.decode.analysis.tiebreak import SERVER_CLOCK_AGREE_PP
from pytest_mtpsweep.kinds.decode.report.sections import headline_table, render_full
from tests.strategies import KEYED, Design, make_plan, make_records, noisy, session_name, write_run

REQUIRED_COLUMNS = ["endpoint", "treatment", "baseline", "subset", "n_prompts", "n_pairs",
                    "pct_change", "ci_low", "ci_high", "decision", "published"]  # fmt: skip
DESIGN = Design(
    treatments=("none", "ngram", "gate"),
    prompts={"prose": tuple(f"prose_{i:02d}" for i in range(1, 7)),
             "structured": tuple(f"structured_{i:02d}" for i in range(1, 7))},
)  # fmt: skip
EFFECTS = {"ngram": 1.15, "gate": 0.98}


def draws_plot(test: Any) -> Any:
    """Let this test draw forest.png; elsewhere plotting is off because it costs ~0.3 s."""
    test.draws_plot = True
    return test


@pytest.fixture(autouse=True)
def _plots_only_where_asked(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not getattr(request.function, "draws_plot", False):
        monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)


def records(design: Design = DESIGN, **effects: float) -> list[dict[str, Any]]:
    return make_records(design, noisy(design, effects or EFFECTS, sd=0.02))


def analyse(run: Path | list[Path], **kwargs: Any) -> Any:
    runs = run if isinstance(run, list) else [run]
    return analyse_run(runs, AnalyseOptions(boot=kwargs.pop("boot", 1000), **kwargs))


def exclusions(result: Any) -> dict[str, int]:
    return dict(zip(result.exclusions["reason"], result.exclusions["n"], strict=True))


class TestOutputs:
    @draws_plot
    def test_writes_every_output_with_the_promised_columns(self, tmp_path: Path) -> None:
        run = write_run(tmp_path, DESIGN, records())
        result = analyse(run)
        out = run / "analysis"
        assert result.out_dir == str(out)
        for name in OUTPUT_FILES:
            assert (out / name).is_file(), name
        assert (out / "forest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        table = pd.read_csv(out / "contrasts.csv")
        assert set(REQUIRED_COLUMNS) <= set(table.columns)
        assert set(table["endpoint"]) == {"primary", "interval"}
        assert set(table["subset"]) == {"prose", "structured", "pooled"}
        assert len(table) == 2 * 2 * 3  # endpoints × treatments × subsets
        per_cell = table.groupby(["treatment", "subset"])["published"].sum()
        assert (per_cell == 1).all()
        census = pd.read_csv(out / "census.csv")
        assert {"n_pairs", "gaps_baseline_only", "gaps_treatment_only", "boot_kept"} <= set(
            census.columns
        )
        payload = json.loads((out / "contrasts.json").read_text())
        assert payload["multiplicity"] == {
            "treatments": 2, "subset_cells": 3, "endpoints": 2, "intervals": 12,
            "correction": "none",
        }  # fmt: skip
        report = (out / "report.md").read_text()
        assert "no correction for multiplicity" in report
        assert "forest.png" in report

    def test_detects_the_true_effects(self, tmp_path: Path) -> None:
        result = analyse(write_run(tmp_path, DESIGN, records()))
        pub = result.published.set_index(["treatment", "subset"])
        assert pub.loc[("ngram", "prose"), "decision"] == "faster"
        assert pub.loc[("ngram", "prose"), "pct_change"] == pytest.approx(15.0, abs=3.0)
        assert pub.loc[("gate", "structured"), "pct_change"] < 0

    def test_the_same_records_give_byte_identical_outputs(self, tmp_path: Path) -> None:
        run = write_run(tmp_path, DESIGN, records())
        analyse(run, out=tmp_path / "a")
        analyse(run, out=tmp_path / "b")
        for name in ("contrasts.csv", "census.csv", "gaps.csv", "contrasts.json"):
            assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()

    def test_forest_plot_is_skipped_and_said_so_without_matplotlib(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)
        run = write_run(tmp_path, DESIGN, records())
        analyse(run)
        assert not (run / "analysis" / "forest.png").exists()
        assert "matplotlib is not importable" in (run / "analysis" / "report.md").read_text()

    def test_a_non_registered_baseline_writes_beside_the_primary_analysis(
        self, tmp_path: Path
    ) -> None:
        run = write_run(tmp_path, DESIGN, records())
        result = analyse(run, baseline="ngram")
        assert result.out_dir == str(run / "analysis_vs_ngram")
        assert set(result.contrasts["treatment"]) == {"none", "gate"}
        assert "Secondary, exploratory" in result.report_md
        assert not (run / "analysis").exists()


class TestComparability:
    def test_sessions_with_other_keyed_fields_form_a_separate_group(self, tmp_path: Path) -> None:
        recs = records()
        odd = session_name(2, "ngram", 1)
        for r in recs:
            if r["session"] == odd:
                r["server_build"] = "b9999"
        result = analyse(write_run(tmp_path, DESIGN, recs))
        assert len(result.groups) == 2
        chosen = [g for g in result.groups if g.chosen]
        assert len(chosen) == 1 and odd not in chosen[0].sessions
        assert exclusions(result)["other comparability group"] == 12
        assert "server_build" in " ".join(result.notes)
        cell = result.contrasts.query("treatment == 'ngram' and subset == 'prose'")
        assert (cell["n_pairs"] == 6).all()  # cycle 2 only
        assert "## Comparability groups" in render_full(result)  # on report.html
        assert "`report.html#comparability-groups`" in result.report_md

    def test_the_group_holding_the_baseline_is_analysed_even_when_smaller(
        self, tmp_path: Path
    ) -> None:
        recs = records()
        for r in recs:
            if r["treatment"] != "none":
                r["seed"] = 7
        result = analyse(write_run(tmp_path, DESIGN, recs))
        chosen = next(g for g in result.groups if g.chosen)
        assert chosen.treatments == ("none",)
        assert not result.has_pairs

    def test_two_runs_are_refused_without_pool(self, tmp_path: Path) -> None:
        a = write_run(tmp_path / "a", DESIGN, records())
        b_design = Design(DESIGN.treatments, DESIGN.prompts, run_id="run-2")
        b = write_run(tmp_path / "b", b_design, records(b_design))
        with pytest.raises(AnalysisError, match="without --pool"):
            analyse([a, b])

    def test_two_runs_with_other_keyed_fields_are_refused_naming_them(self, tmp_path: Path) -> None:
        a = write_run(tmp_path / "a", DESIGN, records())
        b_design = Design(DESIGN.treatments, DESIGN.prompts, run_id="run-2")
        keyed = {**KEYED, "seed": 7, "server_build": "other"}
        b_recs = [{**r, **keyed} for r in records(b_design)]
        b = write_run(tmp_path / "b", b_design, b_recs, plan=make_plan(b_design, keyed=keyed))
        with pytest.raises(AnalysisError) as info:
            analyse([a, b], pool=True)
        message = str(info.value)
        assert "seed" in message and "server_build" in message
        assert "ctx_size" not in message
        assert "\n" not in message

    def test_pool_joins_matching_runs_but_never_pairs_across_them(self, tmp_path: Path) -> None:
        a = write_run(tmp_path / "a", DESIGN, records())
        b_design = Design(DESIGN.treatments, DESIGN.prompts, run_id="run-2")
        # run-2 lacks the baseline for prose_01; run-1's baseline must not stand in for it.
        b_recs = [
            r for r in records(b_design)
            if not (r["treatment"] == "none" and r["prompt_id"] == "prose_01")
        ]  # fmt: skip
        b = write_run(tmp_path / "b", b_design, b_recs)
        result = analyse([a, b], pool=True, out=tmp_path / "pooled")
        cell = result.contrasts.query(
            "endpoint == 'primary' and treatment == 'ngram' and subset == 'prose'"
        ).iloc[0]
        assert cell["n_pairs"] == 12 + 10
        assert cell["n_prompts"] == 6
        gaps = result.gaps.query("endpoint == 'primary' and treatment == 'ngram'")
        assert set(gaps["run_id"]) == {"run-2"}
        assert set(gaps["prompt_id"]) == {"prose_01"}


class TestExclusions:
    def test_quarantined_sessions_are_excluded_and_counted(self, tmp_path: Path) -> None:
        recs = records()
        q_name = session_name(2, "ngram", 1)
        q_recs = [r for r in recs if r["session"] == q_name]
        kept = [r for r in recs if r["session"] != q_name]
        run = write_run(tmp_path, DESIGN, kept, quarantine={q_name: (q_recs, "warm-up HTTP 500")})
        result = analyse(run)
        assert exclusions(result)["quarantined session"] == len(q_recs) == 12
        assert list(result.quarantined["reason"]) == ["warm-up HTTP 500"]
        cell = result.census.query("endpoint == 'primary' and treatment == 'ngram'")
        assert (cell.query("subset != 'pooled'")["gaps_baseline_only"] == 6).all()
        assert "warm-up HTTP 500" in result.report_md

    def test_an_unparseable_line_is_counted_not_fatal(self, tmp_path: Path) -> None:
        torn = '{"run_id": "run-1", "treatment": "ngr'
        run = write_run(
            tmp_path, DESIGN, records(), extra_lines={session_name(6, "none", 2): [torn]}
        )
        result = analyse(run)
        assert exclusions(result)["unparseable line"] == 1
        assert result.has_pairs

    def test_invalid_records_are_excluded_with_their_reason(self, tmp_path: Path) -> None:
        recs = records()
        for r in recs[:3]:
            r.update(valid=False, reason="wrong server answered")
        result = analyse(write_run(tmp_path, DESIGN, recs))
        assert exclusions(result)["invalid: wrong server answered"] == 3

    def test_records_missing_optional_keys_are_tolerated(self, tmp_path: Path) -> None:
        optional = ("ttft_s", "anomalies", "draft_n", "chunks", "repeat", "ordinal",
                    "decode_rate_tps_interval", "interval_basis", "started_at")  # fmt: skip
        recs = [{k: v for k, v in r.items() if k not in optional} for r in records()]
        result = analyse(write_run(tmp_path, DESIGN, recs))
        pub = result.published
        assert (pub["endpoint"] == "primary").all()
        assert pub["published_reason"].str.contains("interval basis has no pairs").all()
        assert exclusions(result)["no usable interval rate (that endpoint only)"] == len(recs)

    def test_baseline_unknown_to_the_run_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(AnalysisError, match=r"baseline 'nope' is not a treatment.*--baseline"):
            analyse(write_run(tmp_path, DESIGN, records()), baseline="nope")

    def test_a_run_without_records_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(AnalysisError, match="no records"):
            analyse(write_run(tmp_path, DESIGN, []))
        with pytest.raises(AnalysisError, match="does not exist"):
            analyse(tmp_path / "missing")


class TestCensus:
    def test_gaps_are_listed_in_both_directions(self, tmp_path: Path) -> None:
        recs = [
            r for r in records()
            if not (r["treatment"] == "ngram" and r["prompt_id"] == "prose_02" and r["cycle"] == 2)
            and not (r["treatment"] == "none" and r["prompt_id"] == "structured_03"
                     and r["cycle"] == 1)
        ]  # fmt: skip
        result = analyse(write_run(tmp_path, DESIGN, recs))
        gaps = result.gaps.query("endpoint == 'primary' and treatment == 'ngram'")
        found = {(g.prompt_id, g.cycle, g.direction) for g in gaps.itertuples()}
        assert found == {
            ("prose_02", 2, "baseline without treatment"),
            ("structured_03", 1, "treatment without baseline"),
        }
        # gate lost its partner for structured_03 c1 too
        gate = result.gaps.query("endpoint == 'primary' and treatment == 'gate'")
        assert list(gate["direction"]) == ["treatment without baseline"]
        census = result.census.set_index(["endpoint", "treatment", "subset"])
        assert census.loc[("primary", "ngram", "prose"), "n_pairs"] == 11
        assert census.loc[("primary", "ngram", "pooled"), "gaps_baseline_only"] == 1
        assert census.loc[("primary", "ngram", "pooled"), "gaps_treatment_only"] == 1
        assert "prose_02" in result.report_md

    def test_repeats_are_averaged_within_a_cell_before_pairing(self, tmp_path: Path) -> None:
        design = Design(prompts={"prose": ("p1", "p2")}, repeats=2)

        def rate(t: str, c: int, o: int, p: str, r: int) -> float:
            if t == "ngram":
                return 10.0 if r == 1 else 30.0
            return 10.0

        result = analyse(write_run(tmp_path, design, make_records(design, rate)))
        row = result.contrasts.query("endpoint == 'primary'").iloc[0]
        assert row["n_pairs"] == 4  # prompts × cycles, not records
        assert row["pct_change"] == pytest.approx(100.0)  # mean(10, 30) / 10 - 1

    def test_truncated_measurements_are_listed_by_prompt(self, tmp_path: Path) -> None:
        recs = records()
        for r in recs:
            if r["prompt_id"] == "prose_03" and r["treatment"] == "none":
                r["finish_reason"] = "length"
        result = analyse(write_run(tmp_path, DESIGN, recs))
        assert list(result.truncated["prompt_id"]) == ["prose_03", "prose_03"]
        assert "`prose_03`: none c1, none c2" in render_full(result)

    def test_calibration_drift_is_reported_per_session(self, tmp_path: Path) -> None:
        facts = {
            session_name(1, "none", 1): {"ordinal": 1, "treatment": "none", "cycle": 1,
                                         "calibration": {"start_tps": 50.0, "end_tps": 48.0,
                                                         "drift_pct": -4.0}},
            session_name(2, "ngram", 1): {"ordinal": 2, "treatment": "ngram", "cycle": 1,
                                          "calibration": None},
        }  # fmt: skip
        result = analyse(write_run(tmp_path, DESIGN, records(), session_facts=facts))
        assert list(result.calibration["drift_pct"]) == [-4.0]
        assert "-4.00%" in render_full(result).split("## Host noise")[1]
        assert "every calibration stayed within ±10%" in result.report_md  # the bullet

    def test_a_treatment_holding_one_cycle_is_flagged_order_confounded(
        self, tmp_path: Path
    ) -> None:
        recs = [r for r in records() if not (r["treatment"] == "gate" and r["cycle"] == 2)]
        result = analyse(write_run(tmp_path, DESIGN, recs))
        gate = result.published.query("treatment == 'gate'")
        assert not gate["counterbalanced"].any()
        assert gate["note"].str.contains("not counterbalanced").all()
        assert result.published.query("treatment == 'ngram'")["counterbalanced"].all()
        assert "order-confounded" in headline_table(result)
        assert result.drift.query("treatment == 'gate'").empty


class TestTieBreakAndDecisions:
    @staticmethod
    def _run(tmp_path: Path, interval_factor: float, subset: str | None = None) -> Any:
        design = DESIGN
        rate = noisy(design, {"ngram": 1.10, "gate": 1.0}, sd=0.01)

        def interval(t: str, c: int, o: int, p: str, r: int) -> float:
            hit = t == "ngram" and (subset is None or p.startswith(subset))
            return rate(t, c, o, p, r) * (interval_factor if hit else 1.0)

        recs = make_records(design, rate, interval)
        return analyse(write_run(tmp_path, design, recs))

    def test_beyond_the_tiebreak_the_interval_figure_is_published(self, tmp_path: Path) -> None:
        result = self._run(tmp_path, 1.03)
        ngram = result.published.query("treatment == 'ngram'")
        assert (ngram["divergence_pp"] > 1.0).all()
        # One endpoint for the whole headline: gate agrees within the tie-break yet follows.
        assert (result.published["endpoint"] == "interval").all()
        assert result.published["published_reason"].str.contains("tie-break").all()
        assert (result.published.query("treatment == 'gate'")["divergence_pp"] < 1.0).all()

    def test_within_the_tiebreak_the_primary_figure_stands(self, tmp_path: Path) -> None:
        result = self._run(tmp_path, 1.005)
        assert (result.published["endpoint"] == "primary").all()
        assert (result.published["divergence_pp"] < 1.0).all()

    def test_one_diverging_cell_switches_the_whole_headline(self, tmp_path: Path) -> None:
        result = self._run(tmp_path, 1.03, subset="structured")
        pub = result.published.set_index(["treatment", "subset"])
        assert pub.loc[("ngram", "structured"), "divergence_pp"] > 1.0
        assert pub.loc[("ngram", "prose"), "divergence_pp"] < 1.0
        assert (pub["endpoint"] == "interval").all()
        # The reason names the cell that triggered the switch, the largest divergence.
        assert pub["published_reason"].str.contains("ngram/structured endpoints differ").all()
        section = render_full(result).split("## Endpoints and tie-break")[1].split("## ")[0]
        assert "ANY treatment × subset cell" in section
        assert section.count("**yes**") == 2  # ngram structured and ngram pooled (+1.5 pp)
        head = result.report_md.split("## Headline")[1].split("\n## ")[0]
        assert "Published on the interval endpoint, not the pre-registered primary: " in head

    def test_a_server_clock_beyond_the_agreement_bound_never_heads(self, tmp_path: Path) -> None:
        # Issue 43: predicted_ms 1e-9 made the interval rate ~1e12 times the client's; the
        # tie-break then published +1.46e12 % headline-wide. Past SERVER_CLOCK_AGREE_PP the
        # client's figure stands in every cell, and the reason says why. A rate of 1e12 tok/s is
        # now no record at all (past recordlines' RATE bound), so the clock runs 1000x fast here:
        # a rate a record may hold, +99,900 % against the client's.
        result = self._run(tmp_path, 1e3, subset="structured")
        pub = result.published
        assert (pub["endpoint"] == "primary").all()
        assert pub["pct_change"].abs().max() < 50.0
        assert (
            pub["published_reason"]
            .str.contains(
                f"beyond the {SERVER_CLOCK_AGREE_PP:g} pp within which the server's clock"
            )
            .all()
        )

    def test_a_registered_interval_endpoint_yields_past_the_bound(self, tmp_path: Path) -> None:
        design = DESIGN
        rate = noisy(design, {"ngram": 1.10, "gate": 1.0}, sd=0.01)

        def interval(t: str, c: int, o: int, p: str, r: int) -> float:
            return rate(t, c, o, p, r) * (1.5 if t == "ngram" else 1.0)

        run = write_run(tmp_path, design, make_records(design, rate, interval))
        plan = json.loads((run / "plan.json").read_text())
        plan.setdefault("analysis", {})["primary_endpoint"] = "interval"
        (run / "plan.json").write_text(json.dumps(plan))
        result = analyse(run)
        assert (result.published["endpoint"] == "primary").all()

    def test_a_cell_lacking_an_endpoint_publishes_the_other_one(self, tmp_path: Path) -> None:
        design = DESIGN
        rate = noisy(design, {"ngram": 1.10, "gate": 1.0}, sd=0.01)

        def interval(t: str, c: int, o: int, p: str, r: int) -> float | None:
            if t == "gate":
                return None  # no interval rate at all for gate
            return rate(t, c, o, p, r) * (1.03 if t == "ngram" else 1.0)

        recs = make_records(design, rate)
        for r in recs:
            r["decode_rate_tps_interval"] = interval(
                r["treatment"], r["cycle"], r["ordinal"], r["prompt_id"], r["repeat"]
            )
        result = analyse(write_run(tmp_path, design, recs))
        pub = result.published.set_index(["treatment", "subset"])
        assert (pub.loc["ngram", "endpoint"] == "interval").all()
        assert (pub.loc["gate", "endpoint"] == "primary").all()
        assert pub.loc["gate", "published_reason"].str.contains("interval basis has no pairs").all()

    def test_equivalent_and_underpowered_decisions(self, tmp_path: Path) -> None:
        tight = noisy(DESIGN, {"ngram": 1.001, "gate": 1.0}, sd=0.001)
        result = analyse(write_run(tmp_path / "t", DESIGN, make_records(DESIGN, tight)))
        pub = result.published.set_index(["treatment", "subset"])
        assert pub.loc[("ngram", "pooled"), "decision"] == "equivalent"
        assert not pub.loc[("ngram", "pooled"), "underpowered"]
        loose = noisy(DESIGN, {"ngram": 1.0, "gate": 1.0}, sd=0.3)
        result = analyse(write_run(tmp_path / "l", DESIGN, make_records(DESIGN, loose)))
        pub = result.published.set_index(["treatment", "subset"])
        row = pub.loc[("ngram", "prose")]
        assert row["decision"] not in ("equivalent", "faster", "slower")
        assert row["underpowered"]
        # MDE = (t(0.975, df) + t(0.80, df)) · SE on the log scale, shown in percent.
        multiplier = sps.t.ppf(0.975, row["df"]) + sps.t.ppf(0.80, row["df"])
        assert row["df"] == pytest.approx(5.0)  # 6 prompts, plain t
        assert row["mde_pct"] == pytest.approx(100 * math.expm1(multiplier * row["se_pct"] / 100))

    def test_a_decided_cell_is_never_underpowered(self, tmp_path: Path) -> None:
        # A huge effect measured noisily: decided (faster) although the MDE exceeds the margin.
        loud = noisy(DESIGN, {"ngram": 1.8, "gate": 1.0}, sd=0.1)
        result = analyse(write_run(tmp_path, DESIGN, make_records(DESIGN, loud)))
        row = result.published.set_index(["treatment", "subset"]).loc[("ngram", "prose")]
        assert row["decision"] == "faster" and row["mde_pct"] > 1.0
        assert not row["underpowered"]

    def test_fewer_than_six_prompts_is_insufficient_with_the_reason(self, tmp_path: Path) -> None:
        design = Design(
            treatments=DESIGN.treatments,
            prompts={
                "prose": DESIGN.prompts["prose"][:5],
                "structured": DESIGN.prompts["structured"],
            },
        )
        rate = noisy(design, {"ngram": 1.5, "gate": 1.0}, sd=0.002)
        result = analyse(write_run(tmp_path, design, make_records(design, rate)))
        pub = result.published.set_index(["treatment", "subset"])
        assert pub.loc[("ngram", "structured"), "decision"] == "faster"
        for subset in ("prose", "pooled"):
            assert pub.loc[("ngram", subset), "decision"] == "insufficient"
            assert "fewer than 6 prompts (prose 5)" in pub.loc[("ngram", subset), "note"]
        assert "fewer than 6 prompts" in headline_table(result)
        assert "cannot reject at 5%" in render_full(result)


class TestNoPairs:
    def test_only_the_baseline_selected_gives_a_report_not_a_crash(self, tmp_path: Path) -> None:
        recs = [r for r in records() if r["treatment"] == "none"]
        plan = make_plan(DESIGN, selected=["none"])
        run = write_run(tmp_path, DESIGN, recs, plan=plan)
        result = analyse(run)
        assert result.contrasts.empty and not result.has_pairs
        report = (run / "analysis" / "report.md").read_text()
        assert "No contrasts" in report and "-k" in report
        assert "No contrasts" in headline_table(result)
        assert not (run / "analysis" / "forest.png").exists()
        assert pd.read_csv(run / "analysis" / "contrasts.csv").empty

    def test_a_treatment_without_any_baseline_reports_no_pairs(self, tmp_path: Path) -> None:
        recs = [r for r in records() if r["treatment"] != "none"]
        plan = make_plan(DESIGN, selected=["ngram", "gate"])
        result = analyse(write_run(tmp_path, DESIGN, recs, plan=plan))
        assert not result.has_pairs
        assert "No treatment-baseline pairs" in result.report_md
        assert (result.contrasts["decision"] == "inconclusive").all()
        assert set(result.gaps["direction"]) == {"treatment without baseline"}


class TestSessionsAndPosition:
    def test_two_cycles_say_the_intervals_are_conditional_beside_per_cycle_figures(
        self, tmp_path: Path
    ) -> None:
        result = analyse(write_run(tmp_path, DESIGN, records()))
        assert set(result.contrasts["interval_method"]) == {"boot-t"}
        assert result.contrasts["session_se_pct"].isna().all()
        head = result.report_md.split("## Headline")[1].split("\n## ")[0]
        # Issue 43: the headline's first sentence says whom the figures speak for.
        first = head.split("\n", 1)[1].lstrip("\n")
        assert first.startswith(
            "These figures speak only for the server sessions that were run (2 cycle(s)): "
        )
        assert "conditional on the server sessions that were run" in head
        assert "| per cycle |" in head
        pooled = result.per_cycle.query("subset == 'pooled' and treatment == 'ngram'")
        assert list(pooled["cycle"].drop_duplicates()) == [1, 2]
        assert "c1 +" in head and "c2 +" in head

    def test_two_cycles_of_four_treatments_borrow_the_session_level(self, tmp_path: Path) -> None:
        # Issue 48: with 4 treatments beside the baseline, 2 cycles give the run's arm x cycle
        # interaction 3 df, enough to borrow the session level instead of prompts only.
        wide = Design(("none", "a", "b", "c", "d"), DESIGN.prompts, cycles=2)
        effects = {"none": 1.0, "a": 1.1, "b": 1.0, "c": 0.95, "d": 1.05}
        result = analyse(write_run(tmp_path, wide, make_records(wide, noisy(wide, effects))))
        assert set(result.contrasts["interval_method"]) == {"boot-t+pooled session"}
        assert result.contrasts["session_se_pct"].notna().all()
        assert "**Sessions borrowed:** with 2 cycle(s)" in result.report_md
        # with 2 beside (1 df) the same cycles resample prompts only, and say so
        narrow = analyse(write_run(tmp_path / "n", DESIGN, records()))
        assert set(narrow.contrasts["interval_method"]) == {"boot-t"}

    def test_four_cycles_add_the_session_level(self, tmp_path: Path) -> None:
        design = Design(DESIGN.treatments, DESIGN.prompts, cycles=4)
        inner = noisy(design, EFFECTS, sd=0.01)
        rng = np.random.default_rng(5)
        offset = {(t, c): float(rng.normal(0.0, 0.05)) for _, t, c in design.sessions()}

        def rate(t: str, c: int, o: int, p: str, r: int) -> float:
            return inner(t, c, o, p, r) * math.exp(offset[(t, c)])

        result = analyse(write_run(tmp_path, design, make_records(design, rate)))
        rows = result.contrasts.query("endpoint == 'primary'")
        assert set(rows["interval_method"]) == {"boot-t+session"}
        assert (rows["session_se_pct"] > 0).all()
        # Session offsets of sd 0.05 swamp prompt noise of sd 0.01: the SE is mostly sessions.
        assert (rows["session_se_pct"] > 0.5 * rows["se_pct"]).all()
        assert "conditional on the server sessions" not in result.report_md

    def test_a_treatment_trending_within_its_sessions_is_flagged_stateful(
        self, tmp_path: Path
    ) -> None:
        rng = np.random.default_rng(11)
        order = {
            name: list(rng.permutation(12))
            for name in [session_name(o, t, c) for o, t, c in DESIGN.sessions()]
        }
        recs = records()
        for r in recs:
            prompts = [*DESIGN.prompts["prose"], *DESIGN.prompts["structured"]]
            r["position"] = int(order[r["session"]][prompts.index(r["prompt_id"])])
            if r["treatment"] == "ngram":  # +3 % per position: a cache warming up
                for key in ("decode_rate_tps_primary", "decode_rate_tps_interval"):
                    r[key] *= math.exp(0.03 * r["position"])
        run = write_run(tmp_path, DESIGN, recs)
        result = analyse(run)
        trend = result.position_trend.set_index(["endpoint", "treatment"])
        assert trend.loc[("primary", "ngram"), "stateful"]
        assert trend.loc[("primary", "ngram"), "slope_pct"] == pytest.approx(3.05, abs=0.3)
        assert not trend.loc[("primary", "none"), "stateful"]
        assert (trend["n_sessions"] == 2).all() and (trend["n_obs"] == 24).all()
        table = pd.read_csv(run / "analysis" / "position_trend.csv")
        assert {"slope_pct", "ci_low", "ci_high", "stateful"} <= set(table.columns)
        assert "Stateful: ngram" in render_full(result)
        assert "**Position trend:** stateful: ngram +" in result.report_md

    def test_records_without_positions_leave_the_trend_table_empty(self, tmp_path: Path) -> None:
        recs = records()
        recs[0]["position"] = -3  # a negative position is as good as none
        run = write_run(tmp_path, DESIGN, recs)
        result = analyse(run)
        assert result.position_trend.empty
        assert "Not available: no record carries a `position`" in render_full(result)
        assert "**Position trend:** not estimable" in result.report_md
        assert pd.read_csv(run / "analysis" / "position_trend.csv").empty


class TestDegenerateText:
    def test_counts_per_treatment_and_says_so_plainly(self, tmp_path: Path) -> None:
        recs = records()
        for r in recs:
            if r["treatment"] == "ngram" and r["subset"] == "prose":
                r["degenerate"] = "echo: the content starts with the prompt"
        result = analyse(write_run(tmp_path, DESIGN, recs))
        counts = result.degenerate.set_index("treatment")
        assert int(counts.loc["ngram", "n_degenerate"]) == 12  # 6 prose prompts x 2 cycles
        assert int(counts.loc["none", "n_degenerate"]) == 0
        assert "prose_01: echo" in counts.loc["ngram", "examples"]
        report = (Path(result.out_dir) / "report.md").read_text()
        assert "**Degenerate text: 12 of 72 analysed measurements were not real answers" in report
        assert "ngram 12/24" in report and "## What the model wrote" in render_full(result)
        assert "Degenerate text: 12 of 72" in headline_table(result)

    def test_clean_answers_say_nothing_alarming(self, tmp_path: Path) -> None:
        result = analyse(write_run(tmp_path, DESIGN, records()))
        assert int(result.degenerate["n_degenerate"].sum()) == 0
        report = (Path(result.out_dir) / "report.md").read_text()
        assert "Degenerate text" not in render_full(result)
        assert "- What the model wrote: `report.html#what-the-model-wrote`" in report
