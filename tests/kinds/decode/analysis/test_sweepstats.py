"""Sweeps along a setting (kinds/decode/analysis/sweepstats.py): the step-down, the best set and the arms dropped on
data whose answer is known, the refusals before any work, and a fast version of
bench/sweep_coverage.py that fails if the error rates leave their bounds or the naive rules stop
failing."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pandas as pd
import pytest

from pytest_mtpsweep.analysis.sequential import Design
from pytest_mtpsweep.base.errors import AnalysisError
from pytest_mtpsweep.kinds.decode.analysis.contrasts import compute_contrasts
from pytest_mtpsweep.kinds.decode.analysis.runvalues import AnalysisSettings
from pytest_mtpsweep.kinds.decode.analysis.sweeppairs import MAX_SWEEP_ARMS, cell_cube
from pytest_mtpsweep.kinds.decode.analysis.sweepstats import (
    SweepData,
    arms_to_drop,
    best_set,
    where_gain_starts,
)
from tests.strategies import Scenario, replication_records
from tests.sweep_sim import FLAT, INSIDE, LOSERS, run_sequential, simulate, true_mcb

ARMS = ("none", "n2", "n3", "n4", "n5", "n6")
LABELS = ("off", "2", "3", "4", "5", "6")


def sweep(
    effects_pct: tuple[float, ...],
    *,
    prompts: int = 10,
    cycles: int = 4,
    noise: float = 0.01,
    seed: int = 3,
    start: str = "last",
) -> SweepData:
    """Prompts × cycles blocks with the arms' true changes and small normal noise."""
    rng = np.random.default_rng(seed)
    mu = np.log1p(np.array(effects_pct) / 100.0)
    base = 3.0 + 0.3 * rng.standard_normal(prompts)
    y = base[:, None, None] + mu + noise * rng.standard_normal((prompts, cycles, len(mu)))
    return SweepData(
        arms=ARMS[: len(mu)],
        baseline="none",
        log_rates=y.reshape(prompts * cycles, len(mu)),
        clusters=np.tile(np.arange(1, cycles + 1), prompts),
        prompts=np.repeat(np.arange(prompts), cycles),
        subset="prose",
        setting="size_n",
        labels=LABELS[: len(mu)],
        start=start,
    )


class TestWhereGainStarts:
    def test_a_knee_is_found_and_stated_as_a_bound(self) -> None:
        got = where_gain_starts(sweep((0, 0, 0, 10, 12, 12)), boot=1000)
        assert got.order == ("n6", "n5", "n4", "n3", "n2")
        assert got.effective == ("n6", "n5", "n4")
        assert got.first_effective == "n4"
        assert got.tested == ("n6", "n5", "n4", "n3")
        assert got.sentence.startswith("faster than off from size_n 4 up")
        assert "no evidence at 3 or 2" in got.sentence
        assert [iv.arm for iv in got.intervals] == ["n2", "n3", "n4", "n5", "n6"]
        n4 = got.intervals[2]
        assert n4.low_pct < 10.0 < n4.high_pct and n4.low_pct > 0

    def test_the_sequence_stops_at_its_first_non_rejection(self) -> None:
        # n3 is faster, but n4 (tested before it from the top) is not: n3 is never tested.
        got = where_gain_starts(sweep((0, 0, 15, 0, 12, 12)), boot=1000)
        assert got.effective == ("n6", "n5")
        assert got.tested == ("n6", "n5", "n4")
        assert got.intervals[1].low_pct > 0  # n3's own interval excludes 0, unused

    def test_no_gain_and_the_slower_direction_from_the_other_end(self) -> None:
        none = where_gain_starts(sweep((0, 0, 0, 0, 0, 0)), boot=1000)
        assert none.effective == () and none.first_effective is None
        assert none.sentence.startswith("no tested value is shown faster than off")
        loss = sweep((0, -9, -5, 0, 3, 3), start="first")
        got = where_gain_starts(loss, direction="slower", boot=1000)
        assert got.order[0] == "n2" and got.effective == ("n2", "n3")
        assert got.sentence.startswith("slower than off from size_n 3 down")


class TestBestSet:
    def test_an_inside_peak_is_the_best_and_neighbours_may_be(self) -> None:
        got = best_set(sweep((0, 3, 9.8, 10, 4, -2)), boot=1000)
        assert got.best == ("n3", "n4")  # 9.8 % and 10 %: within the noise
        by = {iv.arm: iv for iv in got.intervals}
        assert by["n6"].high_pct == 0.0 and by["n6"].low_pct < -5.0
        assert by["n3"].low_pct <= 0.0 < by["n3"].high_pct
        assert "may be best: size_n 3, size_n 4" in got.sentence

    def test_the_baseline_may_be_the_only_best(self) -> None:
        got = best_set(sweep((0, -6, -8, -10, -9, -7)), boot=1000)
        assert got.best == ("none",)
        assert got.sentence.startswith("none may be best but the baseline off")
        assert got.within_margin(0.0)

    def test_one_clear_best_has_a_positive_lower_end(self) -> None:
        got = best_set(sweep((0, 2, 4, 20, 5, 3)), boot=1000)
        assert got.best == ("n4",)
        assert got.intervals[3].low_pct == 0.0 and got.intervals[3].high_pct > 10.0
        assert "is the best" in got.sentence


def test_within_margin_reads_the_lower_ends_of_the_best_set() -> None:
    got = best_set(sweep((0, 3, 9.8, 10, 4, -2)), boot=1000)
    lows = [iv.low_pct for iv in got.intervals if iv.arm in got.best]
    assert got.within_margin(-min(lows) + 0.01) and not got.within_margin(-min(lows) - 0.01)


def test_without_prompts_each_cycle_is_the_cluster() -> None:
    # A per-block endpoint (one value per cycle): twelve cycles are twelve clusters.
    rng = np.random.default_rng(2)
    mu = np.log1p(np.array([0.0, 1.0, 12.0]) / 100.0)
    y = 4.0 + mu + 0.02 * rng.standard_normal((12, 3))
    data = SweepData(("none", "a", "b"), "none", y, np.arange(1, 13), setting="n")
    step = where_gain_starts(data, boot=1000)
    assert step.effective == ("b",) and step.tested == ("b", "a")
    assert best_set(data, boot=1000).best == ("b",)


class TestArmsToDrop:
    def test_drops_only_arms_outside_the_best_set_and_never_the_baseline(self) -> None:
        data = sweep((0, -6, 2, 10, 9, 1))
        best = best_set(data, alpha=0.02, boot=1000)
        dropped = dict(arms_to_drop(data, alpha_look=0.02, boot=1000))
        assert "none" not in dropped
        assert not set(dropped) & set(best.best)
        assert {"n2", "n3", "n6"} <= set(dropped)
        assert re.fullmatch(
            r"surely not the best at the look's 98\.00 % level: size_n [45] is faster by at "
            r"least \d+\.\d %",
            dropped["n2"],
        )

    def test_a_margin_keeps_arms_close_to_the_best(self) -> None:
        data = sweep((0, -6, 6, 10, 9, 1))
        plain = {a for a, _ in arms_to_drop(data, alpha_look=0.02, boot=1000)}
        loose = {a for a, _ in arms_to_drop(data, alpha_look=0.02, margin_pct=5.0, boot=1000)}
        assert "n3" in plain and "n3" not in loose and "n2" in loose

    def test_a_dropped_arm_keeps_its_earlier_cycles(self) -> None:
        data = sweep((0, -6, 2, 10, 9, 1), cycles=6)
        y = np.array(data.log_rates)
        y[np.asarray(data.clusters) > 2, 1] = np.nan  # n2 left after cycle 2
        later = SweepData(data.arms, "none", y, data.clusters, data.prompts, "prose")
        step = where_gain_starts(later, boot=1000)
        assert math.isfinite(step.intervals[0].estimate_pct)


class TestRefusals:
    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"boot": 10}, "resample count 10 is below"),
            ({"boot": 10_000_000}, "above"),
            ({"seed": -1}, "seed -1 is negative"),
        ],
    )
    def test_resampling_bounds(self, change: dict[str, int], message: str) -> None:
        with pytest.raises(AnalysisError, match=message):
            best_set(sweep((0, 1, 2)), **change)

    def test_shapes_and_keys(self) -> None:
        data = sweep((0, 1, 2))
        bad = [
            (SweepData(data.arms, "other", data.log_rates, data.clusters), "baseline 'other'"),
            (SweepData(("a", "a", "b"), "a", data.log_rates, data.clusters), "repeat a key"),
            (SweepData(data.arms, "none", data.log_rates[:, :2], data.clusters), "not \\(blocks"),
            (SweepData(data.arms, "none", data.log_rates, data.clusters[:3]), "clusters is"),
            (SweepData(data.arms, "none", data.log_rates, data.clusters, start="middle"), "'mid"),
        ]
        for value, message in bad:
            with pytest.raises(AnalysisError, match=message):
                where_gain_starts(value, boot=1000)
        many = tuple(f"a{i}" for i in range(MAX_SWEEP_ARMS + 1))
        wide = SweepData(many, "a0", np.zeros((4, len(many))), np.arange(4))
        with pytest.raises(AnalysisError, match=f"2 to {MAX_SWEEP_ARMS} arms"):
            best_set(wide, boot=1000)
        with pytest.raises(AnalysisError, match="pairs × 100000 resamples"):
            best_set(SweepData(many[:-1], "a0", np.zeros((4, 32)), np.arange(4)), boot=100_000)
        with pytest.raises(AnalysisError, match="alpha_look"):
            arms_to_drop(data, alpha_look=0.9, boot=1000)
        with pytest.raises(AnalysisError, match="margin_pct"):
            arms_to_drop(data, alpha_look=0.02, margin_pct=-1.0, boot=1000)


def test_cells_average_repeats_and_keep_gaps() -> None:
    y = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])
    data = SweepData(("a", "b"), "a", y, np.array([1, 1, 2]), np.array([0, 0, 0]))
    cube = cell_cube(data)
    assert cube.shape == (1, 2, 2)
    assert cube[0, 0].tolist() == [2.0, 2.0] and cube[0, 1].tolist() == [5.0, 6.0]
    by_cycle = cell_cube(SweepData(("a", "b"), "a", y, np.array([1, 1, 2])))
    assert by_cycle.shape == (2, 1, 2)  # without prompts each cycle is the cluster


class TestSimulation:
    """A fast version of bench/sweep_coverage.py on its known curves (tests/sweep_sim.py: t3
    prompt responses and cell noise, session offsets per arm and cycle, 8 prompts); the seeds are
    fixed, and each bound sits a few binomial SEs from the bench's figure at 300 replications."""

    def test_the_step_down_holds_family_wise_error_where_per_arm_tests_do_not(self) -> None:
        # The bench: step-down 0.030, per-arm 95 % intervals 0.110, flat null at 6 cycles.
        rng = np.random.default_rng(20261206)
        reps, step_false, per_arm_false = 150, 0, 0
        for r in range(reps):
            data = simulate(FLAT, 4, rng)["prose"]
            up = where_gain_starts(data, boot=1000, seed=r)
            down = where_gain_starts(data, direction="slower", boot=1000, seed=r, start="first")
            step_false += bool(up.effective or down.effective)  # every arm is a true null
            # the naive rule: each arm's own interval, on the prompt-and-own-cycles spread
            naive = where_gain_starts(dataclasses.replace(data, pool_sessions=False), seed=r,
                                      boot=1000)  # fmt: skip
            per_arm_false += any(iv.low_pct > 0 or iv.high_pct < 0 for iv in naive.intervals)
        assert step_false / reps <= 0.06
        assert per_arm_false / reps > 0.06  # the naive rule must fail, or the test proves nothing

    def test_the_best_set_holds_the_best_where_the_naive_pick_misses(self) -> None:
        # The bench: best in set 1.000, naive wrong 0.320, coverage 1.000 (300 replications).
        rng = np.random.default_rng(7)
        truth = true_mcb(INSIDE.effects["prose"])
        reps, held, naive_wrong, covered = 60, 0, 0, 0
        for r in range(reps):
            got = best_set(simulate(INSIDE, 6, rng)["prose"], boot=1000, seed=r)
            held += "v3" in got.best
            # The largest point estimate is the arm whose estimate against the others is top.
            naive_wrong += max(got.intervals, key=lambda iv: iv.estimate_pct).arm != "v3"
            covered += all(
                iv.low_pct - 1e-9 <= 100 * math.expm1(t) <= iv.high_pct + 1e-9
                for iv, t in zip(got.intervals, truth, strict=True)
            )
        assert held / reps >= 0.95 and covered / reps >= 0.93
        assert naive_wrong / reps >= 0.15  # the largest point estimate is often not the best

    def test_looks_drop_losers_and_keep_the_best(self) -> None:
        design = Design.plan("decided", 2, 8, "pocock", None)
        rng = np.random.default_rng(11)
        got = [run_sequential(LOSERS, design, rng, 1000, seed=r) for r in range(10)]
        assert not any(g.best_dropped for g in got)
        assert all(g.truth_in_best for g in got)
        used = sum(g.sessions for g in got) / sum(g.grid for g in got)
        assert used < 0.8  # losers leave early: fewer sessions than the grid


def _from_records(frame: pd.DataFrame, arms: tuple[str, ...], subset: str) -> SweepData:
    """One subset's SweepData from a decode records frame: a block per (prompt, cycle)."""
    part = frame[frame["subset"] == subset]
    wide = part.pivot_table(
        index=["prompt_id", "cycle"], columns="treatment", values="rate_primary", aggfunc="mean"
    )[list(arms)]
    keys = wide.index.to_frame(index=False)
    return SweepData(
        arms=arms,
        baseline="none",
        log_rates=np.log(wide.to_numpy(dtype=np.float64)),
        clusters=keys["cycle"].to_numpy(),
        prompts=keys["prompt_id"].astype(str).to_numpy(),
        subset=subset,
    )


@pytest.mark.parametrize("cycles", [2, 4])
def test_the_step_down_reads_decodes_own_published_intervals(cycles: int) -> None:
    # Same pairs, same prompt resamples (seeded by the subset): never narrower than decode's
    # interval, so an arm the step-down declares is one decode's contrasts call faster.
    scenario = Scenario(prompts=7, cycles=cycles, prompt_sd=0.03, noise_sd=0.03)
    frame, treatments = replication_records(scenario, 3, seed=5)
    settings = AnalysisSettings(baseline="none", boot=1000, seed=9)
    tables = compute_contrasts(
        frame, treatments=treatments, subsets=["prose", "structured"], settings=settings
    )
    c = tables.contrasts
    arms = ("none", *treatments)
    for subset in ("prose", "structured"):
        step = where_gain_starts(_from_records(frame, arms, subset), boot=1000, seed=9)
        rows = c[(c["endpoint"] == "primary") & (c["subset"] == subset)].set_index("treatment")
        for iv in step.intervals:
            row = rows.loc[iv.arm]
            assert iv.estimate_pct == pytest.approx(row["pct_change"], abs=1e-9)
            # The sweep always carries the run's session level (at 2 cycles from 2 df, which a
            # contrast table does not borrow), so its interval is never narrower than decode's.
            assert iv.low_pct <= row["ci_low"] + 1e-9
            assert iv.high_pct >= row["ci_high"] - 1e-9
