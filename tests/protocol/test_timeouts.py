"""pytest-timeout limits per item: a measurement's own, plus what opening or closing a session
may take on the items that do it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_mtpsweep.ladder import Ladder, SessionSlot
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.protocol.timeouts import STOP_S, closing_s, item_limits, opening_s

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class FakeCase:
    slot: SessionSlot
    position: int

    @property
    def id(self) -> str:
        return f"{self.slot.id}-p{self.position}"


@pytest.fixture
def ladder() -> Ladder:
    lad = load_ladder(REPO / "experiments" / "ladders" / "drafters-cpu.toml")
    return dataclasses.replace(lad, measurement_timeout_s=10.0, ready_timeout_s=100.0)


def cases(*sessions: tuple[int, int]) -> list[FakeCase]:
    """(ordinal, measurements) per session, in run order."""
    return [
        FakeCase(SessionSlot(ordinal, f"t{ordinal}", 1), pos)
        for ordinal, n in sessions
        for pos in range(n)
    ]


def test_no_limit_without_the_ladder_field(ladder: Ladder) -> None:
    lad = dataclasses.replace(ladder, measurement_timeout_s=None)
    assert item_limits(cases((1, 3)), lad) is None


def test_the_bounds_are_built_from_the_ladder_limits(ladder: Ladder) -> None:
    # a start: load (100) + warm-up and calibration (2 x 10); an end: calibration + stop
    start, end = 100 + 2 * 10, 10 + STOP_S
    assert opening_s(ladder, 10) == 2 * (start + end)  # a failed warm-up gets a fresh server
    assert closing_s(ladder, 10, 4) == end + start + 4 * 10 + end  # one re-run of 4


def test_only_the_items_that_open_or_close_a_session_get_more(ladder: Ladder) -> None:
    run = cases((1, 3), (2, 2))
    limits = item_limits(run, ladder)
    t, opening = 10.0, opening_s(ladder, 10)
    assert limits == [
        t + opening,  # opens session 1
        t,
        t,
        t + opening + closing_s(ladder, 10, 3),  # closes session 1, opens session 2
        t + closing_s(ladder, 10, 2),  # the last item: its teardown closes session 2
    ]


def test_a_session_of_one_selected_item_opens_and_closes_on_it(ladder: Ladder) -> None:
    limits = item_limits(cases((4, 1)), ladder)
    assert limits == [10 + opening_s(ladder, 10) + closing_s(ladder, 10, 1)]


def test_a_rig_launcher_adds_its_own_timeout(ladder: Ladder, tmp_path: Path) -> None:
    from pytest_mtpsweep.ladder.values import ExternalLaunchers

    rigged = dataclasses.replace(ladder, launchers=ExternalLaunchers(tmp_path, tmp_path))
    assert opening_s(rigged, 10) == opening_s(ladder, 10) + 2 * 2 * 120
