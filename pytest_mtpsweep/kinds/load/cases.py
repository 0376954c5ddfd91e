"""A load case: one level block in one session, at its place in that session's block order."""

from __future__ import annotations

from dataclasses import dataclass

from ...ladder.plan import SessionSlot
from .ladder import Level, LoadSettings


@dataclass(frozen=True)
class LoadCase:
    """One level block: its session, its level, its position among the session's blocks."""

    slot: SessionSlot
    level: Level
    position: int

    @property
    def id(self) -> str:
        """`c1-ngram-conc4`: `-k` selects by cycle, treatment and level."""
        return f"{self.slot.id}-{self.level.label}"


def load_cases(plan: list[SessionSlot], settings: LoadSettings) -> list[LoadCase]:
    """Every session runs its cycle's block order; every treatment of a cycle the same one."""
    return [
        LoadCase(slot, level, i)
        for slot in plan
        for i, level in enumerate(settings.block_order(slot.cycle))
    ]
