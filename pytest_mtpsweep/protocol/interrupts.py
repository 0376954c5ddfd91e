"""Ctrl-C during a run: the first interrupts as Python always does (the session in progress is
closed, filed and set aside on the way out); a second ends the process at once and quietly,
with every server it started killed, instead of a traceback from deep inside pytest. Inside
`held()` (filing a session) the first waits until the block is done, so no session is left
half-filed."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn

from ..rig import server

MESSAGE = (
    "\nmtpsweep: interrupted twice: servers killed, exiting now; every record written so far "
    "is on disk (--resume continues the run, `mtpsweep cleanup RUN` stops launched servers).\n"
)
_state: dict[str, Any] = {"previous": None, "count": 0, "held": 0, "pending": False}


def install() -> None:
    """Take over SIGINT for the run (main thread only; elsewhere signals are not ours)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if _state["previous"] is None:
        _state["previous"] = signal.getsignal(signal.SIGINT)
    _state["count"], _state["pending"] = 0, False
    signal.signal(signal.SIGINT, _on_sigint)


def restore() -> None:
    """Give SIGINT back as it was before the run."""
    previous = _state["previous"]
    if previous is None or threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, previous)
    _state["previous"] = None


@contextmanager
def held() -> Iterator[None]:
    """Hold a first Ctrl-C until the block ends, then raise it; a second still quits at once."""
    _state["held"] += 1
    try:
        yield
    finally:
        _state["held"] -= 1
        if _state["held"] == 0 and _state["pending"]:
            _state["pending"] = False
            raise KeyboardInterrupt


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _state["count"] += 1
    if _state["count"] > 1:
        quit_now()
    if _state["held"]:
        _state["pending"] = True  # raised when the held block ends
        return
    raise KeyboardInterrupt


def quit_now() -> NoReturn:
    """Kill what this process started and leave without unwinding (no traceback to print)."""
    os.write(2, MESSAGE.encode())
    server.kill_all()
    os._exit(130)
