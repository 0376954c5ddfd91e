"""Planning from a pilot: variance components, the predicted half-width by the published
estimator's own formulas, cycles to a target with their range, wall time and lint's sentences."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mtpsweep.analysis.cellplan import CellPlan
from pytest_mtpsweep.analysis.planning import components, cycle_seconds, half_width, variances
from pytest_mtpsweep.kinds.decode.analysis.contrasts import compute_contrasts
from pytest_mtpsweep.kinds.decode.analysis.design import design_warnings, prompts_for_equivalence
from pytest_mtpsweep.kinds.decode.analysis.plan import cell_matrix, plan_cells
from pytest_mtpsweep.kinds.decode.analysis.runvalues import AnalysisSettings
from tests.strategies import Scenario, replication_records

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pilot(scenario: Scenario, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pairs, primary per-subset rows) of one simulated run, analysed for real."""
    records, treatments = replication_records(scenario, 1, seed)
    tables = compute_contrasts(
        records,
        treatments=treatments,
        subsets=list(scenario.subsets),
        settings=AnalysisSettings(baseline="none", boot=1000, seed=seed, pool_sessions=False),
    )
    rows = tables.contrasts[tables.contrasts["endpoint"] == "primary"]
    return tables.pairs, rows[rows["subset"].isin(scenario.subsets)].reset_index(drop=True)


def one_cell(scenario: Scenario, seed: int = 1) -> tuple[np.ndarray, dict[str, Any]]:
    pairs, rows = pilot(scenario, seed)
    row = rows.iloc[0].to_dict()
    return cell_matrix(pairs, "primary", str(row["treatment"]), str(row["subset"])), row


def plan_now(row: dict[str, Any]) -> float:
    return (float(row["ci_high"]) - float(row["ci_low"])) / 2.0


class TestComponents:
    def test_the_mean_squares_of_an_additive_matrix(self) -> None:
        prompt = np.array([0.0, 0.1, 0.2, 0.3])[:, None]
        cycle = np.array([0.0, 0.05])[None, :]
        comp = components(prompt + cycle)
        assert comp is not None and comp.rows == 4 and comp.cycles == 2
        assert comp.ms_noise == pytest.approx(0.0, abs=1e-20)
        assert comp.ms_prompt == pytest.approx(2 * np.var([0, 0.1, 0.2, 0.3], ddof=1))
        assert comp.ms_cycle == pytest.approx(4 * np.var([0.0, 0.05], ddof=1))
        sa, sb, se = variances(np.array(comp.ms_prompt), np.array(comp.ms_cycle),
                               np.array(comp.ms_noise), 2, 4)  # fmt: skip
        assert sa == pytest.approx(np.var([0, 0.1, 0.2, 0.3], ddof=1))
        assert sb == pytest.approx(np.var([0.0, 0.05], ddof=1)) and se == pytest.approx(0.0)

    def test_one_cycle_or_one_complete_prompt_separates_nothing(self) -> None:
        assert components(np.array([[0.1], [0.2], [0.3]])) is None
        assert components(np.array([[0.1, np.nan], [0.2, 0.3], [np.nan, 0.1]])) is None

    def test_rows_missing_a_cycle_count_as_clusters_but_not_in_the_mean_squares(self) -> None:
        matrix = np.array([[0.1, 0.2], [0.2, 0.1], [0.3, 0.35], [0.0, np.nan]])
        comp = components(matrix)
        assert comp is not None and comp.n == 4 and comp.rows == 3


class TestPredictedWidth:
    @pytest.mark.parametrize("cycles", [2, 4, 6])
    def test_at_the_pilot_s_own_cycles_it_is_the_published_half_width(self, cycles: int) -> None:
        # No component truncated (prompts and sessions clearly vary): the expected terms are
        # then exactly the sample's, so the prediction must reproduce the published interval.
        s = Scenario(prompts=8, cycles=cycles, prompt_sd=0.08, noise_sd=0.03, session_sd=0.04,
                     subsets=("prose",), effect=0.1)  # fmt: skip
        for seed in range(1, 6):
            matrix, row = one_cell(s, seed)
            comp = components(matrix)
            assert comp is not None
            var = variances(np.array(comp.ms_prompt), np.array(comp.ms_cycle),
                            np.array(comp.ms_noise), comp.cycles, comp.rows)  # fmt: skip
            if var[0] <= 0 or var[1] <= 0:
                continue
            plan = CellPlan.by_prompt(
                "r0001:prose", "primary", matrix, row, target=1.0, max_cycles=8
            )
            est = math.log1p(float(row["pct_change"]) / 100.0)
            from pytest_mtpsweep.analysis.planning import pilot_ratio

            ratio = pilot_ratio(row, comp.n, 0.95)
            got = float(half_width(var, comp.n, cycles, est, ratio))
            assert got == pytest.approx(plan.now, rel=1e-6), (seed, got, plan.now)

    def test_the_prompt_spread_is_a_floor_no_cycles_go_below(self) -> None:
        var = np.array([0.05**2, 0.0, 0.05**2])
        widths = [float(half_width(var, 8, k, 0.0)) for k in (2, 8, 64)]
        floor = float(half_width(var, 8, 10**9, 0.0))
        assert widths[0] > widths[1] > widths[2] > floor > 0
        t = 2.3646  # t(0.975, 7)
        assert floor == pytest.approx(100 * math.sinh(t * 0.05 / math.sqrt(8)), rel=1e-3)

    def test_the_session_level_joins_at_four_cycles_as_the_estimator_adds_it(self) -> None:
        var = np.array([0.0, 0.03**2, 0.01**2])
        assert float(half_width(var, 8, 4, 0.0)) > float(half_width(var, 8, 2, 0.0))


class TestPlan:
    def test_a_noisy_cell_needs_more_cycles_and_a_quiet_one_is_reached(self) -> None:
        s = Scenario(prompts=16, cycles=2, prompt_sd=0.0, noise_sd=0.05, subsets=("prose",))
        matrix, row = one_cell(s, seed=2)
        plan = CellPlan.by_prompt("r0001:prose", "primary", matrix, row, target=1.0, max_cycles=64)
        assert plan.cycles is not None and plan.cycles > 2 and plan.cycles % 2 == 0
        assert plan.low is not None and plan.low <= plan.cycles
        assert plan.high is None or plan.high >= plan.cycles
        wide = CellPlan.by_prompt("r0001:prose", "primary", matrix, row, target=50.0, max_cycles=64)
        assert wide.cycles == 2 and wide.note.startswith("reached: this run's interval is ±")

    def test_a_run_already_within_the_target_is_reached_whatever_the_model_says(self) -> None:
        # Prompts that agree better than the noise: σa² truncated at 0, so the model's width at
        # the pilot's own cycles exceeds the published one; the run's own interval decides.
        s = Scenario(prompts=6, cycles=2, prompt_sd=0.0, noise_sd=0.05, subsets=("prose",))
        for seed in range(1, 40):
            matrix, row = one_cell(s, seed)
            comp = components(matrix)
            assert comp is not None
            if comp.ms_prompt < comp.ms_noise:
                break
        else:
            pytest.fail("no seed truncated the prompt component")
        plan = CellPlan.by_prompt(
            "c", "primary", matrix, row, target=plan_now(row) + 0.01, max_cycles=8
        )
        assert plan.cycles == 2 and plan.low == 2 and plan.note.startswith("reached")

    def test_prompts_that_disagree_cannot_reach_a_narrow_target(self) -> None:
        s = Scenario(prompts=8, cycles=2, prompt_sd=0.2, noise_sd=0.01, subsets=("prose",))
        matrix, row = one_cell(s)
        plan = CellPlan.by_prompt("r0001:prose", "primary", matrix, row, target=1.0, max_cycles=16)
        assert plan.cycles is None and not plan.reachable
        assert plan.floor > 1.0 and plan.width_at_max > 1.0
        assert "add prompts" in plan.note

    def test_a_one_cycle_pilot_says_so(self) -> None:
        s = Scenario(prompts=8, cycles=1, subsets=("prose",))
        matrix, row = one_cell(s)
        plan = CellPlan.by_prompt("r0001:prose", "primary", matrix, row, target=5.0, max_cycles=8)
        assert plan.cycles is None and "run a cycle pair" in plan.note

    def test_a_cell_without_pairs_says_so(self) -> None:
        row = {"pct_change": math.nan, "ci_low": math.nan, "ci_high": math.nan,
               "se_pct": math.nan, "df": math.nan}  # fmt: skip
        plan = CellPlan.by_prompt("t:prose", "primary", np.full((0, 0), np.nan), row,
                                  target=5.0, max_cycles=8)  # fmt: skip
        assert plan.cycles is None and math.isnan(plan.now)
        assert plan.note == "no pair of this treatment and the baseline yet"

    def test_every_published_subset_cell_but_the_skipped_one(self) -> None:
        s = Scenario(prompts=6, cycles=2)
        records, treatments = replication_records(s, 2, 3)
        tables = compute_contrasts(records, treatments=treatments, subsets=["prose", "structured"],
                                   settings=AnalysisSettings(baseline="none", boot=1000,
                                                            pool_sessions=False))  # fmt: skip
        published = tables.contrasts[tables.contrasts["endpoint"] == "primary"]
        cells = plan_cells(tables.pairs, published, target=5.0, max_cycles=8,
                           skip_subsets=("pooled",))  # fmt: skip
        assert [c.cell for c in cells] == [
            "r0001:prose", "r0001:structured", "r0002:prose", "r0002:structured"
        ]  # fmt: skip
        assert all(c.n_prompts == 6 and c.pilot_cycles == 2 for c in cells)

    @FAST
    @given(
        seed=st.integers(1, 10_000),
        prompt_sd=st.floats(0.0, 0.2),
        noise_sd=st.floats(0.001, 0.2),
        session_sd=st.floats(0.0, 0.05),
        widths=st.lists(st.floats(0.1, 60.0), min_size=2, max_size=2, unique=True),
        cycles=st.sampled_from([2, 4]),
    )
    def test_cycles_needed_never_grow_with_the_target_width(
        self,
        seed: int,
        prompt_sd: float,
        noise_sd: float,
        session_sd: float,
        widths: list[float],
        cycles: int,
    ) -> None:
        s = Scenario(prompts=6, cycles=cycles, prompt_sd=prompt_sd, noise_sd=noise_sd,
                     session_sd=session_sd, subsets=("prose",))  # fmt: skip
        matrix, row = one_cell(s, seed)
        narrow, wide = sorted(widths)
        a, b = (CellPlan.by_prompt("c", "primary", matrix, row, target=w, max_cycles=32,
                                   draws=400) for w in (narrow, wide))  # fmt: skip
        inf = math.inf
        assert (b.cycles or inf) <= (a.cycles or inf)
        assert (b.low or inf) <= (a.low or inf) and (b.high or inf) <= (a.high or inf)
        assert (a.low or inf) <= (a.high or inf)


class TestByCycle:
    def test_more_cycles_always_narrow_a_per_cycle_gain(self) -> None:
        values = np.log(np.array([1.10, 1.14]))
        plan = CellPlan.by_cycle("t@conc1", "req_s", values, target=3.0, max_cycles=32)
        from scipy.stats import t

        s = float(np.std(values, ddof=1))
        assert plan.now == pytest.approx(
            100 * math.exp(values.mean()) * math.sinh(t.ppf(0.975, 1) * s / math.sqrt(2))
        )
        assert plan.cycles is not None and plan.floor == 0.0 and plan.n_prompts == 0
        assert plan.low is not None and plan.low <= plan.cycles
        width = 100 * math.exp(values.mean()) * math.sinh(t.ppf(0.975, plan.cycles - 1) * s /
                                                          math.sqrt(plan.cycles))  # fmt: skip
        assert width <= 3.0

    def test_one_cycle_says_so(self) -> None:
        plan = CellPlan.by_cycle("t@conc1", "req_s", np.array([0.1]), target=3.0, max_cycles=8)
        assert plan.cycles is None and "run a cycle pair" in plan.note


class TestWallTime:
    def test_a_cycle_is_each_treatment_s_mean_session_summed(self) -> None:
        sessions: list[dict[str, object]] = [
            {"treatment": "a", "duration_s": 10.0},
            {"treatment": "a", "duration_s": 20.0},
            {"treatment": "b", "duration_s": 30},
            {"treatment": "b", "duration_s": True},  # not a duration
            {"treatment": "c"},
        ]
        assert cycle_seconds(sessions) == pytest.approx(45.0)
        assert cycle_seconds([{"treatment": "a"}]) is None


class TestDesignWarnings:
    def test_a_sound_design_says_nothing(self) -> None:
        assert design_warnings({"prose": 16, "structured": 16}, 4, 5.0) == []

    def test_each_shortfall_is_one_sentence_with_its_fix(self) -> None:
        said = design_warnings({"prose": 4, "structured": 8}, 2, 1.0)
        assert len(said) == 3, said
        few, cycles, margin = said
        assert few.startswith("subset prose has 4 prompt(s)") and "add prompts" in few
        assert "set cycles = 4 or more" in cycles
        need = prompts_for_equivalence(1.0)
        assert f"needs about {need} prompts" in margin and "smallest subset has 8" in margin
        assert all(s.endswith(".") and s.count(". ") == 0 for s in said)

    def test_a_width_rule_the_prompts_cannot_meet_is_said(self) -> None:
        (said,) = design_warnings({"prose": 8, "structured": 8}, 4, 5.0, width_pct=1.0)
        need = prompts_for_equivalence(1.0, level=0.95)
        assert said.startswith(f"the stop rule's ±1 % needs about {need} prompts per subset")
        assert said.endswith("add prompts or widen stop.width_pct.")
        assert design_warnings({"prose": 16}, 4, 5.0, width_pct=5.0) == []

    def test_the_prompts_for_equivalence_fit_the_margin_exactly(self) -> None:
        from scipy.stats import t

        for margin in (1.0, 2.0, 5.0):
            n = prompts_for_equivalence(margin)
            assert t.ppf(0.95, n - 1) * 2.0 / math.sqrt(n) < margin
            assert n == 2 or t.ppf(0.95, n - 2) * 2.0 / math.sqrt(n - 1) >= margin
