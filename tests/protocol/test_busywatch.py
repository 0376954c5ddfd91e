"""When a session has gone slow enough to ask the host rule (protocol/busywatch.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.protocol import busywatch


def test_the_calibration_is_the_reference_when_there_is_one() -> None:
    assert busywatch.reference(35.0, []) == 35.0
    assert busywatch.reference(None, [30.0, 40.0]) is None  # not yet FIRST measurements
    assert busywatch.reference(None, [30.0, 40.0, 36.0, 1.0]) == 36.0  # median of the first 3
    assert busywatch.reference(0.0, [30.0, 40.0, 36.0]) == 36.0  # a failed calibration


@pytest.mark.parametrize(
    ("rates", "calibrated", "slow"),
    [
        ([35.0, 0.9, 0.9, 0.9], True, True),  # the host: 35 -> 0.9 tok/s
        ([35.0, 0.9, 20.0, 0.9], True, False),  # not three in a row
        ([35.0, 0.9, 0.9], True, False),
        ([35.0, 36.0, 34.0, 0.9, 0.9, 0.9], False, True),
        ([35.0, 36.0, 34.0, 0.9, 0.9], False, False),  # the first three are the reference
        ([35.0, 36.0, 34.0, 12.0, 12.0, 12.0], False, False),  # just over a third
    ],
)
def test_slow_is_three_in_a_row_under_a_third(
    rates: list[float], calibrated: bool, slow: bool
) -> None:
    ref = busywatch.reference(35.0 if calibrated else None, rates)
    assert busywatch.slow(rates, ref, calibrated) is slow


@given(st.lists(st.floats(1.0, 2.0), min_size=1, max_size=40), st.floats(1.0, 500.0))
def test_a_spread_within_2x_of_the_reference_never_asks(spread: list[float], ref: float) -> None:
    """Prompts differ in draft acceptance by up to ~2x: that is never slow."""
    rates = [ref * s for s in spread]
    assert not busywatch.slow(rates, ref * 2, True)  # the reference at the top of the spread
    own = busywatch.reference(None, rates)
    assert not busywatch.slow(rates, own, False)


def test_an_earlier_session_s_calibration_raises_the_reference() -> None:
    """A host that turned busy before this session began slows its calibration too."""
    assert busywatch.reference(0.9, [], earlier_tps=35.0) == 35.0
    assert busywatch.reference(40.0, [], earlier_tps=35.0) == 40.0
    assert busywatch.reference(None, [1.0, 1.0], earlier_tps=35.0) is None  # needs its own
    assert busywatch.slow([0.9, 0.9, 0.9], busywatch.reference(0.9, [], 35.0), True)


def test_a_calibration_is_read_where_there_is_one() -> None:
    assert busywatch.calibration_of({"calibration": {"start_tps": 35.5}}) == 35.5
    assert busywatch.calibration_of({"calibration": {"start_tps": None}}) is None
    assert busywatch.calibration_of({"calibration": {"start_tps": 0}}) is None
    assert busywatch.calibration_of({}) is None
