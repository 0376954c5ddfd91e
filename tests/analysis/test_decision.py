"""A headline cell's `Decision`: a kind's words read as one, and an interval read as one."""

from __future__ import annotations

import pytest

from pytest_mtpsweep.analysis.decision import Decision, interval_decision
from pytest_mtpsweep.analysis.sequential import DECIDED, CellState


@pytest.mark.parametrize(
    ("word", "decision"),
    [
        ("faster", Decision.FASTER),
        ("equivalent", Decision.EQUIVALENT),
        ("fail", Decision.FAIL),
        ("inconclusive", Decision.UNDECIDED),
        ("insufficient", Decision.UNDECIDED),
        ("", Decision.UNDECIDED),
    ],
)
def test_a_kinds_word_is_read_as_a_decision(word: str, decision: Decision) -> None:
    assert Decision.of(word) is decision
    assert decision.decided is (decision is not Decision.UNDECIDED)


def test_the_decided_words_are_the_decisions_that_settle_a_cell() -> None:
    assert set(DECIDED) == {"faster", "slower", "equivalent", "pass", "fail"}
    assert CellState("t:c", Decision.of("inconclusive"), 1.0).decision is Decision.UNDECIDED


@pytest.mark.parametrize(
    ("low", "high", "margin", "decision"),
    [
        (0.5, 3.0, 1.0, Decision.FASTER),
        (-3.0, -0.5, 1.0, Decision.SLOWER),
        (-0.8, 0.9, 1.0, Decision.EQUIVALENT),
        (-0.8, 1.2, 1.0, Decision.UNDECIDED),  # reaches past the margin
        (-1.0, 0.5, 1.0, Decision.UNDECIDED),  # on the margin is not within it
        (-0.8, 0.9, None, Decision.UNDECIDED),  # no margin: never equivalent
    ],
)
def test_an_interval_is_read_against_zero_then_the_margin(
    low: float, high: float, margin: float | None, decision: Decision
) -> None:
    assert interval_decision(low, high, margin) is decision
