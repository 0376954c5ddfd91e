"""A load case: one level block in one session, at its place in that session's block order."""

from __future__ import annotations

from dataclasses import dataclass

from ....kindapi.ladder import SessionSlot
from ..ladder import Level, LoadSettings


@dataclass(frozen=True)
class LoadCase:
    """One level block: its session, its level, its position among the session's blocks."""

    slot: SessionSlot
    level: Level  # a capacity probe's: its mode and `low`, until the search picks its level
    position: int
    probe: int = 0  # a capacity probe's number in its session (1, 2, ...); 0: a level block
    leader: str = ""  # a following probe: the session of its cycle whose levels it replays

    @property
    def id(self) -> str:
        """`c1-ngram-conc4` (`c1-ngram-probe3` in a capacity search): `-k` selects by cycle,
        treatment and level."""
        return f"{self.slot.id}-{self.level.label if not self.probe else f'probe{self.probe}'}"


def load_cases(plan: list[SessionSlot], settings: LoadSettings) -> list[LoadCase]:
    """Every session runs its cycle's block order; every treatment of a cycle the same one. A
    capacity search: its probes, a leader's bounded by the search's depth, a follower's twice
    that (the leader's levels replayed, then its own search)."""
    c = settings.capacity
    if c is not None:
        first: dict[int, str] = {}
        for slot in plan:
            first.setdefault(slot.cycle, slot.name)
        out = []
        for slot in plan:
            leader = "" if first[slot.cycle] == slot.name else first[slot.cycle]
            n = c.max_probes() * (2 if leader else 1)
            out += [LoadCase(slot, Level(c.mode, c.low), i, i + 1, leader) for i in range(n)]
        return out
    return [
        LoadCase(slot, level, i)
        for slot in plan
        for i, level in enumerate(settings.block_order(slot.cycle))
    ]
