"""Live progress, kind-neutral: what the protocol says while it works, to whoever listens.

The protocol calls a `Progress`; the plugin supplies one that writes to pytest's terminal
(`terminal.py`); without one, nothing is said. The rig prints nothing itself: it only calls back
while a server loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..ladder.runplan import SessionSlot


class Progress(Protocol):
    """Hears about sessions as they start and close."""

    def loading(self, session: str, what: str, waited_s: float, last_line: str) -> None:
        """About once a second while a server loads; `last_line` is its log's last line."""

    def ready(self, session: str, what: str, load_s: float) -> None:
        """Once, when the server answers."""

    def closed(self, session: str, summary: str) -> None:
        """Once, when the session's file is written."""


class Silent:
    """A Progress that says nothing."""

    def loading(self, session: str, what: str, waited_s: float, last_line: str) -> None:
        pass

    def ready(self, session: str, what: str, load_s: float) -> None:
        pass

    def closed(self, session: str, summary: str) -> None:
        pass


def describe(slot: SessionSlot) -> str:
    """How a status line names a session's contents: `ngram-simple, cycle 2`."""
    return f"{slot.treatment}, cycle {slot.cycle}"


def session_summary(info: Mapping[str, Any], note: str = "") -> str:
    """One line from a closed session's file: `16/16 valid, median 38.2 tok/s, drift +0.4 %`.

    `note` is the kind's own word on the session (e.g. a median rate).
    """
    parts = [f"{info.get('valid', 0)}/{info.get('planned_measurements', 0)} valid"]
    if note:
        parts.append(note)
    drift = (info.get("calibration") or {}).get("drift_pct")
    if drift is not None:
        parts.append(f"calibration drift {drift:+.1f} %")
    if info.get("rerun"):
        parts.append("re-run")
    for key in ("quarantined", "error"):
        if info.get(key):
            parts.append(f"{key}: {str(info[key]).splitlines()[0]}")
    return ", ".join(parts)
