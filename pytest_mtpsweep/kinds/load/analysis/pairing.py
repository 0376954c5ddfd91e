"""How a level's requests paired by slot (pure): the slots (cycle, request) both sides of a
contrast completed, and those only one did, which no per-request interval holds.

A counted block gives every treatment the same slots, so a slot goes unpaired only when a
request failed; a timed closed-loop block reaches as many slots as its server serves in the
time, so a faster treatment reaches later slots the baseline never sent. The report says both
counts for every level rather than pool them silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ....kindapi.report import Md

if TYPE_CHECKING:
    import pandas as pd

    from .contrast import Row


@dataclass(frozen=True)
class Pairing:
    """A level's slots, summed over cycles: completed by both sides (paired) or by one."""

    level: str
    paired: int
    unpaired: int
    completed_t: int  # slots the treatment completed
    completed_b: int  # slots the baseline completed


def slot_pairing(requests: pd.DataFrame, treatment: str, baseline: str, level: str) -> Pairing:
    """The slots each side completed validly at a level, and how many the other did too: what
    `contrast.request_gains` pairs and what it leaves out."""
    ok = requests[requests["valid"].astype(bool) & (requests["level"] == level)]

    def slots(t: str) -> set[tuple[int, int]]:
        mine = ok[ok["treatment"] == t]
        return set(zip(mine["cycle"].astype(int), mine["request"].astype(int), strict=True))

    st, sb = slots(treatment), slots(baseline)
    return Pairing(level, len(st & sb), len(st ^ sb), len(st), len(sb))


def pairing_lines(requests: pd.DataFrame, contrasts: Sequence[Row]) -> list[str]:
    """Per contrast, every level's paired and unpaired slots: `conc4: 37 paired slots, 5
    unpaired (ngram completed 42, none 37)`."""
    out = []
    for t, b in dict.fromkeys((r.treatment, r.baseline) for r in contrasts):
        parts = []
        for level in dict.fromkeys(
            r.level for r in contrasts if (r.treatment, r.baseline) == (t, b)
        ):
            p = slot_pairing(requests, t, b, level)
            said = f"{level}: {p.paired} paired slots, {p.unpaired} unpaired"
            if p.unpaired:
                said += f" ({t} completed {p.completed_t}, {b} {p.completed_b})"
            parts.append(said)
        out.append(
            f"- Pairing by slot, {Md.text(f'{t} vs {b}: ' + '; '.join(parts))}; unpaired slots "
            "are in no per-request interval."
        )
    return out
