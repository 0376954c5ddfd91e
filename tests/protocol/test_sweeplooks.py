"""A `[stop]` sweep at run time: arms surely not the best leave at a look, their later sessions
are skipped, stop.json says which left when and why, and a settled sweep stops the run
(stand-in server: its `--stub-token-ms` is the swept setting)."""

from __future__ import annotations

import json

import pytest

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.kindapi import SweepLookAt, SweepVerdict
from pytest_mtpsweep.protocol.sweeplooks import SweepLooks
from pytest_mtpsweep.state.rundocs import DroppedArm
from tests.protocol.test_looks import only_run
from tests.protocol.test_session import run_stub, stub_project

SWEEP = """
[sweep]
flag = "--stub-token-ms"
name = "ms"
values = [0.5, 24]
from = "low"
[stop]
rule = "decided"
min_cycles = 2
allow_early_looks = true
"""


def test_an_arm_leaves_once_and_a_failed_look_drops_nobody() -> None:
    asked: list[SweepLookAt] = []

    def ask(at: SweepLookAt) -> SweepVerdict:
        asked.append(at)
        if len(asked) == 2:
            raise RuntimeError("records unreadable")
        return SweepVerdict((("c", "surely slower"),), False, "2 arms still in the run")

    looks = SweepLooks(("a", "b", "c", "d"), 5.0, ("structured",), ask)
    assert looks.look(1, 2, 0.03) == (False, "2 arms still in the run")
    assert looks.active == ("a", "b", "d")
    settled, why = looks.look(2, 4, 0.03)
    assert not settled and "records unreadable" in why
    assert asked[0] == SweepLookAt(("a", "b", "c", "d"), 0.03, 5.0, ("structured",))
    assert asked[1].active == ("a", "b", "d")
    assert looks.dropped == [DroppedArm("c", 1, 2, "surely slower")]


def test_losing_arms_leave_at_the_first_look_and_the_run_stops(
    pytester: pytest.Pytester,
) -> None:
    few = stub_project(pytester, [], prompts=6)
    ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
    text = ladder.read_text().replace("cycles = 2\n", "cycles = 6\n")
    text = text[: text.index('[[treatments]]\nkey = "b"')]  # the sweep's arms replace b
    ladder.write_text(text + SWEEP)
    result = run_stub(pytester, few, "--no-calibration", "--max-tokens=16", "-rs")
    assert result.ret == 0, result.stdout.str()[-3000:]
    run = only_run(pytester)
    stop = json.loads((run / schema.STOP_FILE).read_text())
    left = {d["arm"]: d for d in stop["dropped"]}
    # 12x slower: it leaves at once, even on a busy host
    assert set(left) == {"ms_24"} and left["ms_24"]["look"] == 1
    assert left["ms_24"]["after_cycle"] == 2 and "surely not the best" in left["ms_24"]["why"]
    assert stop["stopped_at"] == 1  # one arm is left: the sweep is settled
    assert "1 arm left beside a: ms_0.50" in stop["looks"][0]["why"]
    assert "not needed: ms_24 left the sweep at look 1 after cycle 2" in result.stdout.str()
    assert "sessions: 6 of the full grid's 18 (12 saved)" in result.stdout.str()
    filed = len(list((run / "sessions").glob("*.json")))
    assert filed == 6  # of the full grid's 3 arms x 6 cycles
    plan = json.loads((run / "plan.json").read_text())
    assert plan["sweep"]["order"] == "mirrored Williams"
    report = (run / "analysis" / "report.md").read_text()
    assert "ms_24 left the run at look 1 (after cycle 2)" in report
    assert "Sessions: 6 of the full grid's 18 (12 saved" in report
    assert "## Sweep" in (run / "preregistration.md").read_text()


def test_a_resumed_sweep_re_takes_the_looks_it_passed_on_their_own_records() -> None:
    asked: list[SweepLookAt] = []

    def ask(at: SweepLookAt) -> SweepVerdict:
        asked.append(at)
        if at.through_cycle == 2:
            return SweepVerdict((("c", "surely slower"),), False, "3 arms still in the run")
        return SweepVerdict((("b", "surely slower"),), False, "asked")

    looks = SweepLooks(("a", "b", "c", "d"), 5.0, (), ask)
    # the run had finished sessions of cycle 5: the looks after cycles 2 and 4 were passed
    looks.replay((2, 4, 6, 8), (0.98, 0.98, 0.98, 0.98), reached=5)
    assert [a.through_cycle for a in asked] == [2, 4]
    assert asked[0].active == ("a", "b", "c", "d") and asked[1].active == ("a", "b", "d")
    assert looks.active == ("a", "d")
    assert [(d.arm, d.look, d.after_cycle) for d in looks.dropped] == [("c", 1, 2), ("b", 2, 4)]
    # a replayed look keeps its verdict when the schedule reaches it again
    assert looks.look(1, 2, 0.02) == (False, "3 arms still in the run") and len(asked) == 2


def test_a_resumed_sweep_leaves_the_look_at_the_cycle_it_reached_to_be_taken_again() -> None:
    asked: list[SweepLookAt] = []

    def ask(at: SweepLookAt) -> SweepVerdict:
        asked.append(at)
        return SweepVerdict()

    looks = SweepLooks(("a", "b", "c"), 0.0, (), ask)
    looks.replay((2, 4, 6), (0.98, 0.98, 0.98), reached=2)
    assert asked == [] and looks.restored == {}
