"""A gate's message carries its decision, the estimate with its interval, and the margin."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.analysis.gatetext import (
    DECISIONS,
    GateOutcome,
    gate_message,
    gate_properties,
)


def outcome(decision: str, est: float, lo: float, hi: float, margin: float = 3.0) -> GateOutcome:
    return GateOutcome("slow", "base", "prose", decision, est, lo, hi, margin)


def test_a_met_gate_says_the_bound_clears_the_margin() -> None:
    text = gate_message(outcome("not-slower", -0.8, -2.1, 0.6))
    assert text == (
        "slow:prose:not-slower:3: NOT-SLOWER (met): slow against base on prose: "
        "\u22120.8 % [\u22122.1, +0.6] (90 %); the lower bound is above the margin \u22123.0 %."
    )


def test_a_slower_build_is_named_with_its_loss() -> None:
    text = gate_message(outcome("slower", -48.2, -51.0, -45.1))
    assert "SLOWER (failed)" in text and "\u221248.2 % [\u221251.0, \u221245.1]" in text
    assert "slow is slower than base by more than 3 %." in text


def test_an_undecided_gate_fails_and_says_what_narrows_it() -> None:
    text = gate_message(outcome("inconclusive", -1.0, -4.5, 2.5))
    assert "INCONCLUSIVE (failed)" in text and "a loss over 3 % is not ruled out" in text


def test_a_gate_not_judged_says_why() -> None:
    o = GateOutcome("slow", "base", "prose", "not-judged", float("nan"), float("nan"),
                    float("nan"), 3.0, reason="--no-analysis")  # fmt: skip
    assert gate_message(o).endswith("was not judged (--no-analysis).")
    assert gate_properties(o)["met"] == "false"


finite = st.floats(-99.0, 500.0, allow_nan=False)


@given(st.sampled_from(DECISIONS), finite, finite, finite, st.floats(0.1, 50.0))
def test_every_message_is_one_line_with_the_margin(
    decision: str, est: float, lo: float, hi: float, margin: float
) -> None:
    o = outcome(decision, est, lo, hi, margin)
    text = gate_message(o)
    assert "\n" not in text and text.startswith(f"slow:prose:not-slower:{margin:g}: ")
    assert ("(met)" in text) == o.met == (decision == "not-slower")
    props = gate_properties(o)
    assert props["margin_pct"] == f"{margin:g}" and props["decision"] == decision
    if decision != "not-judged":
        assert f"{-margin:+.1f}".replace("-", "\u2212") in text
