"""The planted truth of llama-server's synthetic acceptance, against a direct simulation of the
server's rule (tools/server/server-context.cpp, build 11434)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.kinds.decode.planted import (
    check_rates,
    mean_length,
    planted_rates,
    record_truth,
    synth_len_rates,
)


def simulate(rates: tuple[float, ...], tokens: int, rng: np.random.Generator) -> tuple[int, int]:
    """One record as the server makes it: conditional q_i = r_i / r_(i-1), drafts of
    min(k, remaining - 1), the first token from the prompt pass. Returns (accepted, drafted)."""
    q = [r / prev if prev > 0 else 0.0 for r, prev in zip(rates, (1.0, *rates), strict=False)]
    made, accepted, drafted = 1, 0, 0
    while made < tokens:
        d = min(len(rates), tokens - made - 1)
        drafted += d
        a = 0
        while a < d and rng.random() < q[a]:
            a += 1
        accepted += a
        made += 1 + a
    return accepted, drafted


curves = st.integers(1, 5).flatmap(
    lambda k: st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k).map(
        lambda xs: tuple(sorted(xs, reverse=True))
    )
)


@settings(max_examples=15, deadline=None)
@given(rates=curves, tokens=st.integers(1, 40), seed=st.integers(0, 2**31 - 1))
@example(rates=(1.19e-7,), tokens=40, seed=0)
def test_the_law_matches_the_servers_rule(rates: tuple[float, ...], tokens: int, seed: int) -> None:
    truth = record_truth(rates, tokens)
    assert math.isclose(sum(truth.accepted_pmf), 1.0, abs_tol=1e-9)
    rng = np.random.default_rng(seed)
    runs = [simulate(rates, tokens, rng) for _ in range(2000)]
    acc = np.array([a for a, _ in runs], dtype=float)
    dra = np.array([d for _, d in runs], dtype=float)
    # 5 standard errors: a false failure once in ~3.5 million draws per example
    se = math.sqrt(truth.accepted_var / len(runs)) + 1e-9
    assert abs(acc.mean() - truth.accepted_mean) <= 5 * se
    se_d = dra.std() / math.sqrt(len(runs)) + 1e-9
    # a rate near 0 (hypothesis found 1.19e-7) moves the true mean by ~1e-7 through an event
    # 2000 draws never see: their spread is 0, so the bound allows that much, relative
    assert abs(dra.mean() - truth.drafted_mean) <= 5 * se_d + 1e-6 * truth.drafted_mean


def test_long_answers_converge_on_the_per_step_mean_length() -> None:
    rates = (0.9, 0.6, 0.3)
    truth = record_truth(rates, 2000)
    # the prompt's token and the shortened last drafts fade as the answer grows
    assert truth.tokens_per_step == pytest.approx(mean_length(rates), rel=3e-3)
    short = record_truth(rates, 32)
    assert short.tokens_per_step < mean_length(rates) - 0.05


def test_full_and_no_acceptance_are_deterministic() -> None:
    full = record_truth((1.0, 1.0, 1.0), 64)
    assert full.accepted_var == pytest.approx(0.0, abs=1e-12)
    assert full.accepted_mean == 47  # 63 tokens after the first: 15 steps of 4, then 3
    none = record_truth((0.0, 0.0), 10)
    # after the first token: 7 steps draft 2, the 8th drafts 1, the last drafts none
    assert none.accepted_mean == 0 and none.drafted_mean == 2 * 7 + 1


def test_the_flags_give_the_curve() -> None:
    args = ["--spec-type", "draft-simple", "--spec-synth-rates", "0.9,0.6,0.3"]
    assert planted_rates(args) == (0.9, 0.6, 0.3)
    assert planted_rates(["--spec-type", "ngram-simple"]) is None
    geo = planted_rates(["--spec-draft-n-max", "4", "--spec-synth-len", "3"])
    assert geo is not None and mean_length(geo) == pytest.approx(3.0, abs=1e-6)
    assert synth_len_rates(5.0, 4) == (1.0,) * 4


@pytest.mark.parametrize(
    ("rates", "says"),
    [((0.5, 0.6), "must not increase"), ((1.2,), r"within \[0, 1\]"), ((), "empty")],
)
def test_a_curve_the_server_refuses_is_refused(rates: tuple[float, ...], says: str) -> None:
    with pytest.raises(LadderError, match=says):
        check_rates(rates, "t")


def test_rates_that_are_not_numbers_are_refused() -> None:
    with pytest.raises(LadderError, match="comma-separated"):
        planted_rates(["--spec-synth-rates", "high,low"], "treatment x")
