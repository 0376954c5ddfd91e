"""Properties of the contrast statistics, checked on synthetic in-memory runs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from pytest_mtpsweep.analysis.stats import Resamples, Spread, row_quantiles
from pytest_mtpsweep.base.constants import INTERVAL
from pytest_mtpsweep.kinds.decode.analysis.contraststats import (
    fixed_effects_slope,
    sign_flip_pvalue,
)
from pytest_mtpsweep.kinds.decode.analysis.pipeline import analyse
from pytest_mtpsweep.kinds.decode.analysis.runvalues import DecodeAnalysis
from tests.strategies import (
    Design,
    RateFn,
    designs,
    effects,
    make_records,
    noisy,
    noisy_rates,
    run_data,
    scales,
    sign_flip_samples,
)

FAST = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NUMERIC = ["pct_change", "ci_low", "ci_high", "ci90_low", "ci90_high", "arith_pct_change",
           "boot_ci_low", "boot_ci_high", "perm_p", "se_pct", "df", "mde_pct"]  # fmt: skip


def run(
    design: Design,
    rate: RateFn,
    *,
    boot: int = 1000,
    seed: int = 42,
    interval: RateFn | None = None,
) -> DecodeAnalysis:
    return analyse([run_data(design, make_records(design, rate, interval))], boot=boot, seed=seed)


def from_cells(cells: dict[tuple[str, int, str], float], scale: float = 1.0) -> RateFn:
    return lambda t, c, o, p, r: cells[(t, c, p)] * scale


class TestEffectRecovery:
    @FAST
    @given(data=st.data(), design=designs(max_prompts=7))
    def test_a_multiplicative_effect_on_every_pair_is_recovered_exactly(
        self, data: st.DataObject, design: Design
    ) -> None:
        cells = data.draw(noisy_rates(design))
        factor = {t: data.draw(effects, label=t) for t in design.treatments[1:]}
        for t, c, p in list(cells):
            if t != "none":
                cells[(t, c, p)] = cells[("none", c, p)] * factor[t]
        result = run(design, from_cells(cells))
        for _, row in result.contrasts.iterrows():
            expected = 100.0 * (factor[row["treatment"]] - 1.0)
            for column in ("pct_change", "ci_low", "ci_high", "ci90_low", "ci90_high",
                           "arith_pct_change", "boot_ci_low", "boot_ci_high"):  # fmt: skip
                assert row[column] == pytest.approx(expected, rel=1e-9, abs=1e-9), column
            assert row["boot_kept"] == 1000
            sizes = [len(p) for s, p in design.prompts.items() if row["subset"] in (s, "pooled")]
            if min(sizes) < INTERVAL.min_prompts:
                assert row["decision"] == "insufficient"
            elif abs(expected) < 1.0 - 1e-6:
                assert row["decision"] == "equivalent"
            elif abs(expected) > 1.0 + 1e-6:
                assert row["decision"] == ("faster" if expected > 0 else "slower")

    @FAST
    @given(data=st.data(), design=designs(), scale=scales)
    def test_scaling_every_rate_by_a_constant_changes_nothing(
        self, data: st.DataObject, design: Design, scale: float
    ) -> None:
        cells = data.draw(noisy_rates(design))
        plain = run(design, from_cells(cells)).contrasts
        scaled = run(design, from_cells(cells, scale)).contrasts
        pd.testing.assert_frame_equal(
            plain[NUMERIC], scaled[NUMERIC], check_exact=False, rtol=1e-7, atol=1e-7
        )
        assert list(plain["decision"]) == list(scaled["decision"])

    def test_arithmetic_mean_is_the_mean_over_prompts_of_ratio_minus_one(self) -> None:
        design = Design(prompts={"prose": ("p1", "p2")}, cycles=2)
        table = {("p1", 1): 3.0, ("p1", 2): 1.0, ("p2", 1): 0.4, ("p2", 2): 0.4}
        result = run(design, lambda t, c, o, p, r: 10.0 * (table[(p, c)] if t == "ngram" else 1))
        row = result.contrasts.query("endpoint == 'primary' and subset == 'prose'").iloc[0]
        # p1: mean(2.0, 0.0) = 1.0; p2: mean(-0.6, -0.6) = -0.6; over prompts: +0.2
        assert row["arith_pct_change"] == pytest.approx(20.0)
        # geometric: p1 cluster = log(3)/2, p2 = log(0.4); their mean is negative
        expected = 100 * math.expm1((math.log(3) / 2 + math.log(0.4)) / 2)
        assert row["pct_change"] == pytest.approx(expected) and expected < 0
        assert row["sign_disagreement"]


class TestPooledAndIntervals:
    @FAST
    @given(data=st.data(), design=designs())
    def test_pooled_estimate_is_the_equal_weight_mean_of_the_subset_estimates(
        self, data: st.DataObject, design: Design
    ) -> None:
        result = run(design, from_cells(data.draw(noisy_rates(design))))
        c = result.contrasts.set_index(["endpoint", "treatment", "subset"])["pct_change"]
        for endpoint, treatment in {(k[0], k[1]) for k in c.index}:
            logs = [math.log1p(c[(endpoint, treatment, s)] / 100) for s in ("prose", "structured")]
            pooled = math.log1p(c[(endpoint, treatment, "pooled")] / 100)
            assert pooled == pytest.approx(sum(logs) / 2, rel=1e-9, abs=1e-12)

    @FAST
    @given(data=st.data(), design=designs())
    def test_intervals_contain_the_point_estimate_and_nest(
        self, data: st.DataObject, design: Design
    ) -> None:
        result = run(design, from_cells(data.draw(noisy_rates(design))))
        for _, r in result.contrasts.iterrows():
            tol = 1e-9 * max(1.0, abs(r["pct_change"]))
            assert r["ci_low"] - tol <= r["pct_change"] <= r["ci_high"] + tol
            assert r["boot_ci_low"] - tol <= r["pct_change"] <= r["boot_ci_high"] + tol
            assert r["ci_low"] - tol <= r["ci90_low"] <= r["ci90_high"] <= r["ci_high"] + tol

    def test_same_seed_identical_numbers_and_another_seed_other_intervals(self) -> None:
        design = Design(
            treatments=("none", "ngram", "gate"),
            prompts={"prose": tuple(f"p{i}" for i in range(8)),
                     "structured": tuple(f"s{i}" for i in range(8))},
        )  # fmt: skip
        rate = noisy(design, {"ngram": 1.1, "gate": 0.97}, sd=0.05)
        first, again = run(design, rate), run(design, rate)
        pd.testing.assert_frame_equal(first.contrasts, again.contrasts, check_exact=True)
        other = run(design, rate, seed=7).contrasts
        assert (first.contrasts["pct_change"] == other["pct_change"]).all()
        assert (first.contrasts["se_pct"] == other["se_pct"]).all()
        for column in ("boot_ci_low", "boot_ci_high"):
            assert not np.allclose(first.contrasts[column], other[column]), column

    def test_one_index_matrix_serves_every_treatment(self) -> None:
        # Two treatments with identical data get identical intervals only if they share draws.
        design = Design(
            treatments=("none", "a", "b"),
            prompts={"prose": tuple(f"p{i}" for i in range(6)),
                     "structured": tuple(f"s{i}" for i in range(6))},
        )  # fmt: skip
        inner = noisy(design, {"a": 1.05}, sd=0.08)

        def rate(t: str, c: int, o: int, p: str, r: int) -> float:
            return inner("a" if t == "b" else t, c, o, p, r)

        c = run(design, rate).contrasts.set_index(["endpoint", "subset", "treatment"])
        for endpoint, subset in itertools.product(("primary", "interval"), ("prose", "pooled")):
            a, b = c.loc[(endpoint, subset, "a")], c.loc[(endpoint, subset, "b")]
            for column in ("ci_low", "ci_high", "boot_ci_low", "boot_ci_high"):
                assert a[column] == b[column], column

    def test_resamples_that_draw_no_pair_are_dropped_and_counted(self) -> None:
        design = Design(prompts={"prose": ("p0", "p1", "p2", "p3")}, cycles=2)
        records = [
            r for r in make_records(design, noisy(design, {"ngram": 1.1}))
            if r["treatment"] == "none" or r["prompt_id"] == "p2"
        ]  # fmt: skip
        result = analyse([run_data(design, records)], boot=1000, seed=5)
        row = result.contrasts.query("endpoint == 'primary'").iloc[0]
        idx = Resamples.indices(4, 1000, 5, "prose")
        assert row["boot_requested"] == 1000
        assert row["boot_kept"] == int((idx == 2).any(axis=1).sum())
        assert row["boot_kept"] < 1000


class TestDrift:
    @FAST
    @given(
        design=designs(max_prompts=4),
        drift=st.floats(min_value=-0.05, max_value=0.05, allow_nan=False),
        effect=effects,
    )
    def test_counterbalanced_linear_drift_cancels_in_the_cycle_mean(
        self, design: Design, drift: float, effect: float
    ) -> None:
        assume(abs(drift) > 1e-4)
        treatment = design.treatments[1]

        def rate(t: str, c: int, o: int, p: str, r: int) -> float:
            base = 40.0 + len(p)
            return base * (effect if t == treatment else 1.0) * math.exp(drift * o)

        result = run(design, rate)
        row = result.contrasts.query(
            "endpoint == 'primary' and treatment == @treatment and subset == 'prose'"
        ).iloc[0]
        assert row["pct_change"] == pytest.approx(100 * (effect - 1), rel=1e-9, abs=1e-9)
        order = {t: o for o, t, c in design.sessions() if c == 1}
        gap = order[treatment] - order["none"]
        d = result.drift.query("endpoint == 'primary' and treatment == @treatment")
        expected_drift = 100 * effect * math.sinh(drift * gap)
        assert d["drift_pp"].to_numpy() == pytest.approx(expected_drift, rel=1e-6, abs=1e-9)
        cycle1 = result.per_cycle.query(
            "endpoint == 'primary' and treatment == @treatment and cycle == 1"
        )["pct_change"]
        assert cycle1.to_numpy() == pytest.approx(100 * (effect * math.exp(drift * gap) - 1))


def brute_force_p(values: list[float], weights: list[float]) -> float:
    observed = abs(sum(w * v for w, v in zip(weights, values, strict=True)))
    scale = sum(abs(w * v) for w, v in zip(weights, values, strict=True))
    hits = 0
    patterns = list(itertools.product((1.0, -1.0), repeat=len(values)))
    for signs in patterns:
        flipped = abs(sum(s * w * v for s, w, v in zip(signs, weights, values, strict=True)))
        hits += flipped >= observed - 1e-9 * scale
    return hits / len(patterns)


class TestSignFlip:
    @settings(max_examples=60, deadline=None)
    @given(values=sign_flip_samples())
    def test_small_n_p_value_is_exact(self, values: list[float]) -> None:
        weights = [1.0 / len(values)] * len(values)
        p, method = sign_flip_pvalue(np.array(values), np.array(weights), seed=42, n_mc=10)
        assert method == "exact"
        assert p == brute_force_p(values, weights)

    def test_known_values(self) -> None:
        one = np.array([1.0, 1.0, 1.0])
        p, _ = sign_flip_pvalue(one, one / 3, seed=0, n_mc=1)
        assert p == pytest.approx(2 / 8)  # only all-plus and all-minus reach |mean| = 1
        p, _ = sign_flip_pvalue(np.zeros(4), np.full(4, 0.25), seed=0, n_mc=1)
        assert p == 1.0

    def test_large_n_is_monte_carlo_near_the_exact_value(self) -> None:
        rng = np.random.default_rng(3)
        values = rng.normal(0.05, 0.2, size=18)
        weights = np.full(18, 1 / 18)
        signs = 1.0 - 2.0 * ((np.arange(2**18)[:, None] >> np.arange(18)) & 1)
        exact = float(np.mean(np.abs(signs @ (weights * values)) >= abs(values.mean()) - 1e-12))
        p, method = sign_flip_pvalue(values, weights, seed=42, n_mc=20000)
        again, _ = sign_flip_pvalue(values, weights, seed=42, n_mc=20000)
        assert method == "monte-carlo"
        assert p == again
        assert p == pytest.approx(exact, abs=0.02)


class TestSmallHelpers:
    def test_without_a_bootstrap_quantile_the_interval_is_scipys_t_interval(self) -> None:
        x = np.array([0.1, -0.05, 0.2, 0.07])
        lo, hi = Spread.of_prompts([x]).interval(float(x.mean()), math.nan, 0.95)
        ref = sps.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
        assert (lo, hi) == pytest.approx(ref)
        # A larger bootstrap-t quantile widens it; a smaller one never narrows it.
        wide = Spread.of_prompts([x]).interval(float(x.mean()), 10.0, 0.95)
        assert wide[0] < lo and wide[1] > hi
        assert Spread.of_prompts([x]).interval(float(x.mean()), 0.1, 0.95) == (lo, hi)

    def test_a_runaway_bootstrap_quantile_widens_the_interval_at_most_twice(self) -> None:
        x = np.array([0.1, -0.05, 0.2, 0.07])
        spread = Spread.of_prompts([x])
        lo, hi = spread.interval(float(x.mean()), math.nan, 0.95)
        capped = spread.interval(float(x.mean()), 500.0, 0.95)
        assert capped[1] - capped[0] == pytest.approx(INTERVAL.boot_t_max_factor * (hi - lo))
        # Below the cap the bootstrap-t quantile is used as it is.
        q = 1.5 * sps.t.ppf(0.975, 3)
        inside = spread.interval(float(x.mean()), q, 0.95)
        assert inside[1] - inside[0] == pytest.approx(2 * q * spread.se)

    def test_two_groups_use_welch_satterthwaite(self) -> None:
        a, b = np.array([0.1, 0.2, 0.3]), np.array([-0.2, 0.0, 0.1, 0.3])
        spread = Spread.of_prompts([a, b])
        va, vb = a.var(ddof=1) / 3 / 4, b.var(ddof=1) / 4 / 4
        assert spread.se == pytest.approx(math.sqrt(va + vb))
        assert spread.df == pytest.approx((va + vb) ** 2 / (va**2 / 2 + vb**2 / 3))
        assert math.isnan(Spread.of_prompts([a[:1], b]).se)

    def test_index_matrix_is_fixed_by_seed_and_subset(self) -> None:
        m = Resamples.indices(5, 50, 42, "prose")
        assert m.shape == (50, 5) and m.min() >= 0 and m.max() <= 4
        assert np.array_equal(m, Resamples.indices(5, 50, 42, "prose"))
        assert not np.array_equal(m, Resamples.indices(5, 50, 43, "prose"))
        assert not np.array_equal(m, Resamples.indices(5, 50, 42, "structured"))


class TestSessionAndTrendHelpers:
    def test_row_quantiles_match_numpy_on_rows_with_gaps(self) -> None:
        rng = np.random.default_rng(1)
        values = rng.normal(size=(5, 40))
        values[1, ::3] = np.nan
        values[4, :] = np.nan
        got = row_quantiles(values, (0.025, 0.5, 0.95))
        for r in range(4):
            kept = values[r][np.isfinite(values[r])]
            assert got[r] == pytest.approx(np.quantile(kept, [0.025, 0.5, 0.95]), rel=1e-12)
        assert np.isnan(got[4]).all()

    def test_session_variance_is_the_two_way_anova_identity_on_a_complete_matrix(self) -> None:
        rng = np.random.default_rng(2)
        n, k = 6, 4
        y = (
            rng.normal(size=(n, 1)) * 0.1
            + rng.normal(size=(1, k)) * 0.2
            + rng.normal(size=(n, k)) * 0.05
        )
        spread = Spread.of_sessions([y.mean(axis=1)], [y])
        grand, rows, cols = y.mean(), y.mean(axis=1), y.mean(axis=0)
        ms_p = k * ((rows - grand) ** 2).sum() / (n - 1)
        ms_c = n * ((cols - grand) ** 2).sum() / (k - 1)
        resid = y - rows[:, None] - cols[None, :] + grand
        ms_e = (resid**2).sum() / ((n - 1) * (k - 1))
        assert ms_c > ms_e  # the cycle level is there, so nothing is truncated
        assert spread.method == "boot-t+session"
        assert spread.se**2 == pytest.approx((ms_p + ms_c - ms_e) / (n * k))
        parts = [(ms_p / (n * k)) ** 2 / (n - 1), (ms_c / (n * k)) ** 2 / (k - 1),
                 (ms_e / (n * k)) ** 2 / ((n - 1) * (k - 1))]  # fmt: skip
        assert spread.df == pytest.approx(spread.se**4 / sum(parts))

    def test_without_a_cycle_level_the_session_term_is_truncated_to_the_t_interval(self) -> None:
        y = np.array([[0.1, 0.1, 0.1, 0.1], [0.3, 0.3, 0.3, 0.3], [0.2, 0.2, 0.2, 0.2]])
        y = y + np.array([[0.01, -0.01, 0.01, -0.01], [-0.01, 0.01, -0.01, 0.01], [0, 0, 0, 0]])
        spread, plain = (
            Spread.of_sessions([y.mean(axis=1)], [y]),
            Spread.of_prompts([y.mean(axis=1)]),
        )
        assert spread.method == "boot-t+session" and spread.session_var == 0.0
        assert (spread.se, spread.df) == (plain.se, plain.df)

    def test_fixed_effects_slope_recovers_a_trend_and_refuses_a_confounded_one(self) -> None:
        prompts = np.repeat(np.arange(4), 3)
        sessions = np.tile(np.arange(3), 4)
        position = np.array([0, 3, 1, 1, 0, 2, 2, 1, 3, 3, 2, 0], dtype=np.float64)
        rng = np.random.default_rng(3)
        y = 0.5 * prompts + 0.2 * sessions + 0.01 * position + rng.normal(0, 1e-4, 12)
        slope = fixed_effects_slope(y, position, [sessions, prompts])
        assert slope.estimate == pytest.approx(0.01, abs=3e-4)
        assert slope.df == 12 - (1 + 2 + 3) - 1
        # Every session in the same order: position is the prompt, so no slope is identified.
        same = prompts.astype(np.float64)
        assert math.isnan(fixed_effects_slope(y, same, [sessions, prompts]).estimate)
