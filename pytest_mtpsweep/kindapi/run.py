"""The door's run side: the live session a kind measures on, the run's context, the warm-up
prompt, the preflight rows a kind adds, and an attached server's counters around a request."""

from __future__ import annotations

from ..preflight.items import PreflightItem
from ..state.context import WARMUP, RunContext
from ..state.live import LiveSession

__all__ = [  # noqa: RUF022 -- grouped as docs/architecture/10-front-door.md lists them
    # the session and the run
    "LiveSession",
    "RunContext",
    "WARMUP",
    # preflight rows a kind adds
    "PreflightItem",
]
