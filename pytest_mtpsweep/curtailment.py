"""Deadlines and curtailment: which sessions to drop, in the pre-registered order, to finish."""

from __future__ import annotations

import datetime as dt
import re

from .ladder import SessionSlot, session_label


class DeadlineError(ValueError):
    """A --deadline or --time-budget value that cannot be read; the message shows the format."""


def parse_duration(text: str) -> float:
    """Seconds in `90s`, `10m`, `1h30m`, `2h`."""
    m = re.fullmatch(r"\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?\s*", text)
    if not text.strip() or m is None or not any(m.groups()):
        raise DeadlineError(
            f"--time-budget {text!r} is not a duration; write it like 90s, 10m, 1h30m or 2h."
        )
    h, mi, s = (int(g) if g else 0 for g in m.groups())
    return float(h * 3600 + mi * 60 + s)


def parse_deadline(text: str, now: dt.datetime) -> dt.datetime:
    """The next local `HH:MM` after `now` (tomorrow if that time has passed today)."""
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", text.strip())
    if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise DeadlineError(
            f"--deadline {text!r} is not a local time; write it as HH:MM, e.g. 04:00."
        )
    at = now.replace(hour=int(m.group(1)), minute=int(m.group(2)), second=0, microsecond=0)
    return at if at > now else at + dt.timedelta(days=1)


def estimate_s(done: list[tuple[float, int]], planned: int) -> float | None:
    """Seconds a session of `planned` measurements should take, from (seconds, measurements)
    of the sessions done so far; None before any session has finished."""
    rates = [sec / max(n, 1) for sec, n in done]
    return sum(rates) / len(rates) * max(planned, 1) if rates else None


def plan_drops(
    remaining: list[tuple[SessionSlot, float]],
    time_left_s: float,
    drop_order: tuple[str, ...],
    never_drop: str,
) -> list[SessionSlot]:
    """Sessions to drop, first in drop order, until the estimated rest fits the time left.

    `remaining` pairs each session still to run with its estimated seconds. The never-drop
    session is never returned; if dropping every other listed session still does not fit,
    those are all dropped and the run goes on as far as it gets.
    """
    need = sum(sec for _, sec in remaining)
    by_label = {session_label(s): (s, sec) for s, sec in remaining}
    dropped: list[SessionSlot] = []
    for label in drop_order:
        if need <= time_left_s:
            break
        if label == never_drop or label not in by_label:
            continue
        slot, sec = by_label[label]
        dropped.append(slot)
        need -= sec
    return dropped
