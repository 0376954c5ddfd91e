"""A fast version of bench/sweep_looks.py: a sweep's statements at every look hold their rate
with the run's pooled session level, where the naive spread (prompts only under 4 cycles) does
not (tests/sweep_looks_sim.py; seeds fixed, bounds a few binomial SEs from the bench's figures)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_mtpsweep.kinds.decode.analysis.sessionpool import borrow_session, pooled_session_level
from tests.sweep_looks_sim import KNEE, Plan, World, rates, wilson_upper


def test_early_looks_keep_their_rate_only_with_the_pooled_session_level() -> None:
    # lowerarm-sweep's design (looks after 2, 4, 6) on the knee, sessions of 3 % sd
    world = World(KNEE, session_sd=0.03)
    naive = rates(world, Plan.of(2, 6, 1.0, pool=False), 40, 1000, 11)
    pooled = rates(world, Plan.of(2, 6, 1.0, pool=True), 40, 1000, 11)
    assert naive.false_faster_any + naive.false_slower_any >= 0.15  # the naive spread fails
    assert pooled.false_faster_any <= 0.075 and pooled.false_slower_any <= 0.075
    assert pooled.best_dropped <= 0.05 and pooled.best_in_every_look >= 0.9
    assert pooled.sessions < pooled.grid  # the looks still save sessions


def test_the_pooled_level_reads_the_interaction_and_the_baselines_own_spread() -> None:
    rng = np.random.default_rng(3)
    # 200 cycles x 6 arms: arm offsets sd 0.02, the baseline's (in the cycle effect) sd 0.05
    arms = 0.02 * rng.standard_normal((200, 6))
    base = 0.05 * rng.standard_normal((200, 1))
    got = pooled_session_level(arms - base + np.arange(6) * 0.1)
    assert got is not None and got.df == 199 * 5
    assert math.sqrt(got.ms) == pytest.approx(0.02, rel=0.1)
    assert math.sqrt(got.base) == pytest.approx(math.sqrt(0.05**2 + 0.02**2 / 6), rel=0.15)
    assert got.of_pair(False)[0] == pytest.approx(2 * got.ms)
    assert got.of_pair(True)[0] == pytest.approx(got.ms + got.base)
    # a baseline spread below the arms' is floored at theirs: it never narrows an interval
    calm = pooled_session_level(arms + np.arange(6) * 0.1)
    assert calm is not None and calm.base < calm.ms
    assert calm.of_pair(True) == pytest.approx((2 * calm.ms, calm.df))
    # one arm beside the baseline at 2 cycles has no df to borrow from; a missing cell is skipped
    assert pooled_session_level(np.zeros((2, 1))) is None
    sparse = np.array([[0.0, 0.1, 0.2], [0.1, np.nan, 0.3]])
    assert pooled_session_level(sparse) is not None


def test_borrowing_widens_a_prompt_level_interval_by_its_session_share() -> None:
    se, df = borrow_session(0.01, 7.0, 2, (0.0004, 5.0)) or (math.nan, math.nan)
    assert se == pytest.approx(math.sqrt(0.01**2 + 0.0002))
    assert 5.0 <= df <= 12.0
    assert borrow_session(0.01, 7.0, 2, None) is None


def test_wilson_upper_end() -> None:
    assert wilson_upper(0.04, 200) == pytest.approx(0.0771, abs=5e-4)


def test_the_run_path_simulation_takes_the_ladders_looks_and_skips_dropped_sessions() -> None:
    from tests.sweep_run_sim import Truth, ladder, plan_doc, replicate

    # sweep-demo: lookup lengths 4, 12 and 24 of a drafter; the two short ones clearly lose
    lad = ladder("sweep-demo")
    truth = Truth({"prose": (-30, -30, 0), "structured": (-30, -30, 15)}, session_sd=0.01)
    got = replicate(lad, plan_doc(lad), truth, seed=3, boot=1000)
    assert got.sessions < got.grid  # the looks dropped arms and their sessions never ran
    assert not got.best_dropped
    assert got.looks and not any(j.false_faster or j.false_slower for j in got.looks)
