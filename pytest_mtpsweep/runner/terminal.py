"""Live progress on pytest's terminal: a status line while a server loads, a line per session.

On a terminal the status line (session, seconds waited, the server log's last line) is
rewritten in place about once a second and replaced by one line when the server is ready. On
anything else (a CI log, a pipe) nothing is rewritten: plain lines only, a loading line every
30 s and the ready line, with control characters removed. Everything goes through pytest's own
terminal reporter, with output capturing suspended as pytest's live logging does.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

PLAIN_EVERY_S = 30.0
PLAIN_MAX = 240  # a plain line is cut here; a server log line can be very long
# ANSI escape sequences first (a coloured server log), then every other control character.
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x1f\x7f]")


class Reporter(Protocol):
    """The parts of pytest's TerminalReporter this module uses."""

    def isatty(self) -> bool: ...

    def ensure_newline(self) -> None: ...

    def write(self, content: str, *, flush: bool = False, **markup: bool) -> None: ...

    def write_line(self, line: str | bytes, **markup: bool) -> None: ...

    def rewrite(self, line: str, **markup: bool) -> None: ...


def plain(text: str) -> str:
    """The text without escape sequences or control characters."""
    return _CONTROL.sub("", text)


def fit(text: str, width: int) -> str:
    """The text cut to `width` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


class TerminalProgress:
    """A `protocol.progress.Progress` that writes to pytest's terminal reporter."""

    def __init__(self, reporter: Reporter, capture: Any, width: int) -> None:
        self.reporter = reporter
        self.capture = capture  # pytest's CaptureManager, or None
        self.tty = bool(reporter.isatty())
        self.width = max(width - 1, 20) if self.tty else PLAIN_MAX
        self._status: str | None = None  # the session whose status line is on screen
        self._resume: Path | None = None  # the test file pytest's letters were following
        self._next_plain: dict[str, float] = {}

    @contextlib.contextmanager
    def _uncaptured(self) -> Iterator[None]:
        if self.capture is None:
            yield
            return
        with self.capture.global_and_fixture_disabled():
            yield

    def _emit(self, write: Callable[[], None], *, holding: bool = False) -> None:
        """Write with capturing suspended; then, unless a status line stays open (`holding`),
        put back the test file's name that pytest's progress letters follow, so the next
        letter continues its line instead of starting one of its own."""
        with self._uncaptured():
            current = getattr(self.reporter, "currentfspath", None)
            if isinstance(current, Path):
                self._resume = current
            write()
            if holding or self._resume is None:
                return
            start = getattr(self.reporter, "startpath", None)
            name = os.path.relpath(self._resume, start) if start else str(self._resume)
            self.reporter.write(f"{name} ")
            self.reporter.currentfspath = self._resume  # type: ignore[attr-defined]
            self._resume = None

    def loading(self, session: str, what: str, waited_s: float, last_line: str) -> None:
        line = fit(plain(f"mtpsweep {session} ({what}): loading, {waited_s:.0f} s"), self.width)
        tail = plain(last_line)
        if tail:
            line = fit(f"{line}: {tail}", self.width)
        if self.tty:
            first = self._status != session
            self._status = session

            def rewrite() -> None:
                if first:
                    self.reporter.ensure_newline()
                self.reporter.rewrite(line, erase=True)

            self._emit(rewrite, holding=True)
        elif waited_s >= self._next_plain.get(session, PLAIN_EVERY_S):
            self._next_plain[session] = waited_s + PLAIN_EVERY_S
            self._emit(lambda: self.reporter.write_line(line))

    def ready(self, session: str, what: str, load_s: float) -> None:
        line = fit(plain(f"mtpsweep {session} ({what}): ready in {load_s:.1f} s"), self.width)
        self._next_plain.pop(session, None)
        if self._status is not None:
            self._status = None

            def replace() -> None:
                self.reporter.rewrite(line, erase=True)
                self.reporter.write("\n", flush=True)

            self._emit(replace)
        else:
            self._emit(lambda: self.reporter.write_line(line))

    def closed(self, session: str, summary: str) -> None:
        line = fit(plain(f"mtpsweep {session} closed: {summary}"), self.width)
        self._next_plain.pop(session, None)
        ended = self._status is not None  # a server that never became ready
        self._status = None

        def write() -> None:
            if ended:
                self.reporter.write("\n")
            self.reporter.write_line(line)

        self._emit(write)
