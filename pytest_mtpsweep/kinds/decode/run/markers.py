"""Stop markers of a decode measurement: what must stop the run the moment it is seen."""

from __future__ import annotations

from ....kindapi.ladder import Ladder
from ....kindapi.records import schema
from .cases import DecodeCase


def stop_marker(
    case: DecodeCase, m: schema.Measurement, ladder: Ladder, degenerate_stops: bool
) -> str | None:
    """A protocol stop marker for what this measurement showed, if any (a degenerate answer
    is one when the ladder says `degenerate = \"stop\"`)."""
    where = f"{case.slot.name}/{case.prompt.id}"
    if m.unrecognised_delta_fields:
        return f"** UNRECOGNISED-DELTA-FIELDS={','.join(m.unrecognised_delta_fields)} at {where}"
    if m.reasoning_chars and not ladder.reasoning_expected:
        return f"** HIDDEN-REASONING={m.reasoning_chars} chars at {where}"
    if m.degenerate and degenerate_stops:
        return f"** DEGENERATE-TEXT at {where}: {m.degenerate}"
    return None
