"""A sweep's plan from a pilot: when each arm is expected to leave, sessions against the grid."""

from __future__ import annotations

from pytest_mtpsweep.kinds.decode.analysis.sweepplanning import ArmEstimate, plan_sweep

LOOKS, LEVELS = [2, 4, 6], [0.977, 0.975, 0.974]


def test_a_clear_loser_leaves_at_the_first_look_and_saves_its_sessions() -> None:
    est = [ArmEstimate("lo", "s", 0.0, 3.0), ArmEstimate("mid", "s", 30.0, 3.0),
           ArmEstimate("hi", "s", 31.0, 3.0)]  # fmt: skip
    plan = plan_sweep(est, arms=["lo", "mid", "hi"], baseline="none", pilot_cycles=2,
                      looks=LOOKS, confidence=LEVELS, session_s=60.0)  # fmt: skip
    assert plan.leaves_after == {"lo": 2, "mid": None, "hi": None}
    assert plan.stop_after == 6 and plan.grid_sessions == 24
    assert plan.sessions == 2 + 6 + 6 + 6
    assert plan.hours == plan.sessions / 60.0
    assert "lo: leaves after cycle 2" in "\n".join(plan.lines("none"))


def test_one_arm_left_stops_the_sweep_and_a_flat_curve_keeps_every_arm() -> None:
    est = [ArmEstimate("a", "s", 0.0, 2.0), ArmEstimate("b", "s", 40.0, 2.0)]
    plan = plan_sweep(est, arms=["a", "b"], baseline="none", pilot_cycles=2,
                      looks=LOOKS, confidence=LEVELS)  # fmt: skip
    assert plan.stop_after == 2 and plan.sessions == 6 and plan.hours is None
    flat = [ArmEstimate(a, "s", 0.5, 5.0) for a in ("a", "b")]
    kept = plan_sweep(flat, arms=["a", "b"], baseline="none", pilot_cycles=2,
                      looks=LOOKS, confidence=LEVELS)  # fmt: skip
    assert kept.leaves_after == {"a": None, "b": None} and kept.sessions == kept.grid_sessions


def test_an_arm_leaves_only_when_behind_on_every_deciding_subset() -> None:
    est = [ArmEstimate("a", "edits", 0.0, 2.0), ArmEstimate("b", "edits", 40.0, 2.0),
           ArmEstimate("a", "prose", 0.0, 2.0), ArmEstimate("b", "prose", -20.0, 2.0)]  # fmt: skip
    both = plan_sweep(est, arms=["a", "b"], baseline="none", pilot_cycles=2, looks=LOOKS,
                      confidence=LEVELS)  # fmt: skip
    assert both.leaves_after == {"a": None, "b": None}
    edits = plan_sweep(est, arms=["a", "b"], baseline="none", pilot_cycles=2, looks=LOOKS,
                       confidence=LEVELS, subsets=["edits"])  # fmt: skip
    assert edits.leaves_after["a"] == 2
