"""Per-item time limits from the ladder's `measurement_timeout_s` (pytest-timeout applies them).

pytest-timeout times a whole item: setup, call and teardown. Most measurement items only
measure, so their limit is `measurement_timeout_s`. But the item that opens a session also
starts its server and warms it up, and the item that closes one (the next session's first item,
or the last item of the run) also runs the close. Those items get the bounds of those steps on
top, each built from limits the ladder already states, so that a hung request trips the alarm
and a slow but healthy model load does not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..interface.kind import Case
    from ..ladder import Ladder

# Stopping a server: SIGTERM, up to 10 s, SIGKILL, up to 30 s more, then the port check (5 s).
STOP_S = 60.0
LAUNCHER_MIN_S = 120.0  # a rig's launch/stop script runs within max(this, ready_timeout_s)


def _start_s(ladder: Ladder, request_s: float) -> float:
    """One server start: its launch script, its load, a warm-up and a calibration request."""
    launcher = max(LAUNCHER_MIN_S, ladder.ready_timeout_s) if ladder.launchers else 0.0
    return launcher + ladder.ready_timeout_s + 2 * request_s


def _stop_s(ladder: Ladder, request_s: float) -> float:
    """One session end: the closing calibration request and the stop."""
    launcher = max(LAUNCHER_MIN_S, ladder.ready_timeout_s) if ladder.launchers else 0.0
    return request_s + STOP_S + launcher


def opening_s(ladder: Ladder, request_s: float) -> float:
    """The most opening a session may take: a failed warm-up gets one fresh server."""
    return 2 * (_start_s(ladder, request_s) + _stop_s(ladder, request_s))


def closing_s(ladder: Ladder, request_s: float, measurements: int) -> float:
    """The most closing a session may take: its end, then the one re-run of a partial census
    (a start, every measurement again, an end)."""
    end = _stop_s(ladder, request_s)
    return end + _start_s(ladder, request_s) + measurements * request_s + end


def item_limits(cases: Sequence[Case], ladder: Ladder) -> list[float] | None:
    """The limit in seconds of each selected case, in run order; None without a limit."""
    request_s = ladder.measurement_timeout_s
    if request_s is None:
        return None
    per_session = Counter(c.slot.name for c in cases)
    limits: list[float] = []
    for i, case in enumerate(cases):
        limit = request_s
        name = case.slot.name
        if i == 0 or cases[i - 1].slot.name != name:
            limit += opening_s(ladder, request_s)
            if i > 0:  # the previous session closes when this one's server is first asked for
                limit += closing_s(ladder, request_s, per_session[cases[i - 1].slot.name])
        if i == len(cases) - 1:
            limit += closing_s(ladder, request_s, per_session[name])
        limits.append(limit)
    return limits
