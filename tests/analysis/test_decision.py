"""A headline cell's `Decision`: a kind's words read as one."""

from __future__ import annotations

import pytest

from pytest_mtpsweep.analysis.decision import Decision
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
