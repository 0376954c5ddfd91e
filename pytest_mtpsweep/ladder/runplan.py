"""The run plan: server sessions in counterbalanced order (ABC CBA …; a sweep's many arms in
mirrored Williams order)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .values import Ladder

MIRROR = "ABC CBA"
WILLIAMS = "mirrored Williams"


@dataclass(frozen=True)
class SessionSlot:
    """One server session of the plan: a (treatment, cycle) at its ordinal in the full plan."""

    ordinal: int
    treatment: str
    cycle: int

    @property
    def name(self) -> str:
        return f"{self.ordinal:02d}_{self.treatment}_c{self.cycle}"

    @property
    def id(self) -> str:
        return f"c{self.cycle}-{self.treatment}"

    @property
    def block(self) -> int:
        """The counterbalanced block this session belongs to, numbered from 1: a cycle pair
        (ABC CBA), or the last cycle alone when the count is odd. A distributed run keeps each
        block on one worker, so a pair is never split across devices."""
        return (self.cycle - 1) // 2 + 1

    @property
    def label(self) -> str:
        """How a ladder names this session in its drop order: `treatment:cN`."""
        return f"{self.treatment}:c{self.cycle}"


def run_plan(treatment_keys: Sequence[str], cycles: int, design: str = MIRROR) -> list[SessionSlot]:
    """Odd cycles in ladder order, even cycles in exact reverse (ABC CBA …), numbered from 1.

    With `design=WILLIAMS` (a sweep) the odd cycle of pair k runs row k of a Williams square
    (rows taken in turn) and the even cycle its exact reverse: each pair still cancels a linear
    drift, and over 2n cycles every arm directly follows every other equally often (twice), so
    first-order carry-over is balanced too, for an even or odd number of arms."""
    slots: list[SessionSlot] = []
    keys = list(treatment_keys)
    for cycle in range(1, cycles + 1):
        row = williams_row(keys, (cycle - 1) // 2) if design == WILLIAMS else keys
        order = row if cycle % 2 == 1 else list(reversed(row))
        for key in order:
            slots.append(SessionSlot(len(slots) + 1, key, cycle))
    return slots


def session_label(slot: SessionSlot) -> str:
    """How a ladder names a session in its drop order: `treatment:cN`."""
    return slot.label


def run_order_key(slot: SessionSlot, position: int) -> tuple[int, int]:
    """Sort key of a measurement: its session's ordinal, then its position in the session."""
    return (slot.ordinal, position)


def williams_row(keys: Sequence[str], row: int) -> list[str]:
    """Row `row` (mod n) of the cyclic Williams square on `keys`: 0, 1, n-1, 2, n-2, … shifted.

    Its rows and their reverses hold every ordered neighbour pair equally often (Williams 1949).
    """
    n = len(keys)
    first: list[int] = []
    low, high = 0, n - 1
    for i in range(n):
        if i % 2 == 0:
            first.append(low)
            low += 1
        else:
            first.append(high)
            high -= 1
    # 0, n-1, 1, n-2 …: rotate so the sequence reads 0, 1, n-1, 2, n-2 (the usual first row)
    first = [0] + [(n - x) % n for x in first[1:]] if n > 1 else first
    return [keys[(x + row) % n] for x in first]


def plan_design(ladder: Ladder) -> str:
    """The ladder's cycle order: mirrored Williams for a sweep, ABC CBA otherwise."""
    return WILLIAMS if ladder.sweep is not None else MIRROR


def ladder_plan(ladder: Ladder) -> list[SessionSlot]:
    """The ladder's sessions in run order, in its design."""
    return run_plan(ladder.treatment_keys, ladder.cycles, plan_design(ladder))
