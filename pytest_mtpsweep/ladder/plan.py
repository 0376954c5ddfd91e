"""The run plan: server sessions in counterbalanced order (ABC CBA …)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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


def run_plan(treatment_keys: Sequence[str], cycles: int) -> list[SessionSlot]:
    """Odd cycles in ladder order, even cycles in exact reverse (ABC CBA …), numbered from 1."""
    slots: list[SessionSlot] = []
    for cycle in range(1, cycles + 1):
        order = list(treatment_keys) if cycle % 2 == 1 else list(reversed(treatment_keys))
        for key in order:
            slots.append(SessionSlot(len(slots) + 1, key, cycle))
    return slots


def session_label(slot: SessionSlot) -> str:
    """How a ladder names a session in its drop order: `treatment:cN`."""
    return slot.label


def run_order_key(slot: SessionSlot, position: int) -> tuple[int, int]:
    """Sort key of a measurement: its session's ordinal, then its position in the session."""
    return (slot.ordinal, position)
