"""Ctrl-C during a run: the first interrupts as Python always does (the session in progress is
closed, filed and set aside on the way out); a second ends the process at once and quietly,
with every server it started killed, instead of a traceback from deep inside pytest."""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType
from typing import Any, NoReturn

from ..rig import server

MESSAGE = (
    "\nmtpsweep: interrupted twice: servers killed, exiting now; every record written so far "
    "is on disk (--resume continues the run, `mtpsweep cleanup RUN` stops launched servers).\n"
)
_state: dict[str, Any] = {"previous": None, "count": 0}


def install() -> None:
    """Take over SIGINT for the run (main thread only; elsewhere signals are not ours)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if _state["previous"] is None:
        _state["previous"] = signal.getsignal(signal.SIGINT)
    _state["count"] = 0
    signal.signal(signal.SIGINT, _on_sigint)


def restore() -> None:
    """Give SIGINT back as it was before the run."""
    previous = _state["previous"]
    if previous is None or threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, previous)
    _state["previous"] = None


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _state["count"] += 1
    if _state["count"] == 1:
        raise KeyboardInterrupt
    quit_now()


def quit_now() -> NoReturn:
    """Kill what this process started and leave without unwinding (no traceback to print)."""
    os.write(2, MESSAGE.encode())
    server.kill_all()
    os._exit(130)
