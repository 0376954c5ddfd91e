"""The load analysis, pure: gains recovered exactly when the data hold them, intervals that
hold their estimate, the interaction that vanishes when the gain does not move, clusters that
are prompts, and the per-level percentiles."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.load.analysis import contrast, frame
from tests.kinds.load.synthetic import gains, lines

PAIRS = [("ngram", "none")]
ORDER = ["conc1", "conc4"]
MODES = {"closed": ORDER}


def tables(records: list[dict[str, object]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    return frame.frames(records)


def rows_by(rows: list[contrast.Row]) -> dict[tuple[str, str], contrast.Row]:
    return {(r.endpoint, r.level): r for r in rows}


def test_an_exact_gain_per_level_and_its_interaction_are_recovered() -> None:
    rq, lv = tables(lines(gains({"conc1": 1.25, "conc4": 0.9})))
    rows = rows_by(contrast.contrast_rows(rq, lv, PAIRS, ORDER, boot=200, seed=1))
    for endpoint in ("ttft", "itl", "e2e"):
        assert rows[(endpoint, "conc1")].gain_pct == pytest.approx(25.0)
        assert rows[(endpoint, "conc4")].gain_pct == pytest.approx(-10.0)
        assert rows[(endpoint, "conc1")].n_prompts == 6
        assert rows[(endpoint, "conc1")].n_pairs == 12  # 6 prompts x 2 cycles
    inter = rows_by(contrast.interaction_rows(rq, lv, PAIRS, MODES, boot=200, seed=1))
    e2e = inter[("e2e", "conc4/conc1")]
    assert e2e.gain_pct == pytest.approx(100.0 * (0.9 / 1.25 - 1.0))
    assert e2e.gain_low_pct == pytest.approx(25.0) and e2e.gain_high_pct == pytest.approx(-10.0)


def test_throughput_is_paired_by_cycle_with_cycles_minus_one_df() -> None:
    tps = {("none", 1): 100.0, ("none", 2): 110.0, ("ngram", 1): 120.0, ("ngram", 2): 143.0}
    records = lines(
        gains({"conc1": 1.0, "conc4": 1.0}),
        throughput=lambda t, c, level: tps[(t, c)] * (2 if level == "conc4" else 1),
    )
    rq, lv = tables(records)
    rows = rows_by(contrast.contrast_rows(rq, lv, PAIRS, ORDER, boot=200, seed=1))
    row = rows[("output_tok_s", "conc1")]
    expected = (math.log(1.2) + math.log(1.3)) / 2
    assert row.gain_pct == pytest.approx(100 * math.expm1(expected))
    assert row.df == 1 and row.cycles == 2 and row.method == contrast.BY_CYCLE
    # t(0.975, 1) = 12.706: the interval is as wide as one df makes it
    half = 12.706 * abs(math.log(1.3) - math.log(1.2)) / 2
    assert row.ci_high == pytest.approx(100 * math.expm1(expected + half), rel=1e-3)
    inter = rows_by(contrast.interaction_rows(rq, lv, PAIRS, MODES, boot=200, seed=1))
    assert inter[("output_tok_s", "conc4/conc1")].gain_pct == pytest.approx(0.0, abs=1e-9)


noise = st.lists(st.floats(-0.3, 0.3), min_size=24, max_size=24)


@settings(max_examples=40, deadline=None)
@given(noise, st.floats(0.5, 2.0), st.floats(0.5, 2.0), st.floats(0.1, 50.0))
def test_intervals_hold_their_estimate_and_units_do_not_matter(
    eps: list[float], g1: float, g4: float, scale: float
) -> None:
    by = {"conc1": g1, "conc4": g4}

    def e2e(t: str, cycle: int, level: str, p: int, i: int) -> float:
        k = (cycle - 1) * 12 + (level == "conc4") * 6 + p
        ms = (100.0 + 10 * p) * math.exp(eps[k] if t == "ngram" else 0.0)
        return ms / (by[level] if t == "ngram" else 1.0)

    rq, lv = tables(lines(e2e))
    rows = contrast.contrast_rows(rq, lv, PAIRS, ORDER, boot=200, seed=3)
    for r in rows:
        assert r.ci_low <= r.gain_pct <= r.ci_high
    scaled = rq.assign(e2e_ms=rq["e2e_ms"] * scale)
    again = rows_by(contrast.contrast_rows(scaled, lv, PAIRS, ORDER, boot=200, seed=3))
    for r in rows:
        if r.endpoint == "e2e":
            assert again[("e2e", r.level)].gain_pct == pytest.approx(r.gain_pct, rel=1e-9)
    # the other way round is the same gain inverted
    swapped = rows_by(contrast.contrast_rows(rq, lv, [("none", "ngram")], ORDER, boot=200, seed=3))
    for r in rows:
        back = swapped[(r.endpoint, r.level)].gain_pct
        assert (1 + back / 100) * (1 + r.gain_pct / 100) == pytest.approx(1.0, rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.5, 2.0), st.lists(st.floats(0.5, 3.0), min_size=6, max_size=6))
def test_a_gain_that_does_not_move_has_no_interaction_whatever_the_prompts(
    g: float, prompt_effect: list[float]
) -> None:
    rq, lv = tables(lines(gains({"conc1": g, "conc4": g}, base=lambda p: 80 * prompt_effect[p])))
    inter = contrast.interaction_rows(rq, lv, PAIRS, MODES, boot=200, seed=2)
    for r in inter:
        assert r.gain_pct == pytest.approx(0.0, abs=1e-6)


def test_requests_of_one_prompt_are_one_cluster() -> None:
    rq, lv = tables(lines(gains({"conc1": 1.5, "conc4": 1.5}), per_prompt=3))
    rows = rows_by(contrast.contrast_rows(rq, lv, PAIRS, ORDER, boot=200, seed=1))
    assert rows[("e2e", "conc1")].n_prompts == 6 and rows[("e2e", "conc1")].n_pairs == 36


def test_a_pair_needs_both_halves_valid() -> None:
    records = lines(gains({"conc1": 2.0, "conc4": 2.0}))
    for r in records:
        if r["record"] == "request" and r["treatment"] == "ngram" and r["prompt_id"] == "p0":
            r["valid"] = False
    rq, lv = tables(records)
    rows = rows_by(contrast.contrast_rows(rq, lv, PAIRS, ORDER, boot=200, seed=1))
    assert rows[("e2e", "conc1")].n_prompts == 5


def test_the_clustered_interval_is_the_published_t_interval_over_prompts() -> None:
    values = np.array([[0.1, 0.3], [0.2, 0.2], [0.0, 0.4], [0.5, 0.1]])  # prompts x cycles
    e = contrast.clustered(values, 8, boot=500, seed=4, key="k")
    per = values.mean(axis=1)
    se = per.std(ddof=1) / math.sqrt(per.size)
    assert e.est == pytest.approx(per.mean()) and e.se == pytest.approx(se) and e.df == 3
    assert e.low <= e.est - 3.182 * se + 1e-9  # never narrower than Student's t at 3 df


def test_percentiles_pool_every_cycle_and_itl_pools_chunk_gaps() -> None:
    rq, lv = tables(lines(gains({"conc1": 2.0, "conc4": 1.0})))
    table = frame.percentile_table(rq, lv)
    none1 = table[(table["treatment"] == "none") & (table["level"] == "conc1")].iloc[0]
    e2e = rq[(rq["treatment"] == "none") & (rq["level"] == "conc1")]["e2e_ms"]
    assert none1["e2e_p50_ms"] == pytest.approx(float(np.percentile(e2e, 50)))
    assert none1["e2e_p99_ms"] == pytest.approx(float(np.percentile(e2e, 99)))
    assert none1["itl_p50_ms"] == pytest.approx(float(np.percentile(e2e / 40, 50)))
    assert none1["requests"] == 12 and none1["cycles"] == 2 and none1["queued"] == 0
    assert list(table["level"][:2]) == ORDER
