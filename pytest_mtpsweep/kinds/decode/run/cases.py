"""A decode case: one prompt in one session, at its position in that session's order."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from ....kindapi.ladder import Prompt, PromptSet, SessionSlot


@dataclass(frozen=True)
class DecodeCase:
    """One measurement: a prompt in a session, at its position in that session's order."""

    slot: SessionSlot
    prompt: Prompt
    position: int
    repeat: int = 1

    repeats: int = 1  # how many times each prompt runs in the session

    @property
    def id(self) -> str:
        tail = f"-r{self.repeat}" if self.repeats > 1 else ""
        return f"{self.slot.id}-{self.prompt.id}{tail}"


def decode_cases(
    plan: list[SessionSlot], prompts: PromptSet, repeats: int, seed: int
) -> list[DecodeCase]:
    """Each session runs its cycle's order once per repeat (whole passes, so a repeat meets the
    same drift as its first run); the analysis averages repeats before pairing."""
    out: list[DecodeCase] = []
    n = len(prompts.prompts)
    for slot in plan:
        order = prompts.in_order(slot.cycle, seed)
        out += [
            DecodeCase(slot, p, (r - 1) * n + i, r, repeats)
            for r in range(1, repeats + 1)
            for i, p in enumerate(order)
        ]
    return out


def measurement_seed(seed: int, case: DecodeCase) -> int:
    """The request seed of `request_seeds = "per-measurement"`: fixed by the ladder's seed and
    the case's prompt, cycle and repeat (not its treatment: the pair shares it)."""
    cell = f"{case.prompt.id}:{case.slot.cycle}:{case.repeat}".encode()
    return (seed * 1_000_003 + zlib.crc32(cell)) % (2**31 - 1)
