"""Pass-rate contrasts looked at after every repeat (or task batch): the repeated intervals keep
false calls near 5 % under a null, naive peeking does not (so the simulation can fail)."""

from __future__ import annotations

import pytest

from tests.pass_rate_sequential_sim import PASS_SCENARIOS, PassScenario, simulate

REPS = 4000  # Monte Carlo SE of a 5 % rate: 0.0034


@pytest.mark.parametrize(
    "scenario", [s for s in PASS_SCENARIOS if s.effect == 0], ids=lambda s: s.name
)
def test_nulls_keep_their_error_rate_and_peeking_does_not(scenario: PassScenario) -> None:
    got = simulate(scenario, REPS, 4242)
    seq, naive, fixed = got["sequential"], got["naive"], got["fixed"]
    # the repeated intervals: at the fixed interval's own rate or below, within 2 SE of 5 %
    assert seq.false_calls <= 0.057, seq
    assert seq.coverage >= 0.943, seq
    assert naive.false_calls >= 0.08, naive  # peeking at 95 % every look: far past 5 %
    assert fixed.looks == scenario.looks


def test_a_real_gain_is_found_and_covered() -> None:
    s = next(s for s in PASS_SCENARIOS if s.effect > 0 and s.grows == "repeats")
    got = simulate(s, REPS, 99)["sequential"]
    assert got.coverage >= 0.95 and got.false_calls <= 0.01
    assert got.decided > 0.2 and got.looks < s.looks  # some stop early
