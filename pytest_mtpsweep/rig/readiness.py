"""Waiting for a server to be ready, written once: a launched server's `/health`
(`server.py`) and an attached server's ready path (`endpoint.py`) are polled by the same loop."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

TICK_S = 1.0  # how often the caller hears how long it has waited


@dataclass(frozen=True)
class Waited:
    """How a wait ended: ready or not, after how long, and the last answer before the end."""

    ready: bool
    seconds: float
    last: str


def wait_until_ready(
    probe: Callable[[], str | None],
    timeout_s: float,
    interval_s: float,
    on_wait: Callable[[float, str], None] | None = None,
    t0: float | None = None,
) -> Waited:
    """Poll `probe` (None: ready; else why not; it raises to end the wait at once) until it is
    ready or `timeout_s` has passed since `t0` (default: now).

    `on_wait`, if given, hears (seconds waited, the last answer) about once a second.
    """
    t0 = time.monotonic() if t0 is None else t0
    last = "no answer"
    tick = t0 + TICK_S
    while True:
        now = time.monotonic()
        if on_wait is not None and now >= tick:
            on_wait(now - t0, last)
            tick = now + TICK_S
        why = probe()
        if why is None:
            return Waited(True, time.monotonic() - t0, last)
        last = why
        if time.monotonic() - t0 > timeout_s:
            return Waited(False, time.monotonic() - t0, last)
        time.sleep(interval_s)
