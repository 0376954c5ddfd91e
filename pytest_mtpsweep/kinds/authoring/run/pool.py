"""Cells of one subject in flight together, for a remote subject (or local `--parallel` slots).

A session's pending cells start in their pre-registered order, at most `concurrency` at a time:
each finished cell starts the next. The test of a cell waits for that cell's conversation,
then records it, so cell records stay in run order while turns are written as they happen.
Requests pass a `Throttle`: an HTTP 429 (after the chat client's own retries of it) halves how
many requests may be in flight, down to one; a run of answered requests raises it again by one
(additive increase, multiplicative decrease). The session file says how far it went.

The token budget holds exactly with cells in flight: a turn reserves its bound before it is
sent and settles to what it was charged after (budget.py).

The worker that finishes a cell starts the next one itself. A done-callback would not do: a
future that is already finished runs its callback at once, in the thread that adds it, which
holds the lock (a deadlock that hung a run for its whole timeout).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

RAISE_AFTER = 8  # answered requests without a 429 before one more may be in flight


@dataclass
class Throttle:
    """How many requests may be in flight: lowered by 429s, raised again by answers."""

    limit: int
    current: int = 0
    lowest: int = 0
    throttled: int = 0  # replies that came after at least one 429
    _in_flight: int = 0
    _calm: int = 0
    _cv: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        self.current = self.lowest = self.limit

    def acquire(self) -> None:
        with self._cv:
            self._cv.wait_for(lambda: self._in_flight < self.current)
            self._in_flight += 1

    def release(self, saw_429: bool) -> None:
        with self._cv:
            self._in_flight -= 1
            if saw_429:
                self.throttled += 1
                self._calm = 0
                self.current = max(1, self.current // 2)
                self.lowest = min(self.lowest, self.current)
            else:
                self._calm += 1
                if self._calm >= RAISE_AFTER and self.current < self.limit:
                    self.current += 1
                    self._calm = 0
            self._cv.notify_all()

    def facts(self) -> dict[str, Any]:
        return {
            "concurrency": self.limit,
            "concurrency_lowest": self.lowest,
            "throttled_requests": self.throttled,
        }


class CellPool:
    """Runs `work(case)` for the session's pending cases, `concurrency` at a time, in order."""

    def __init__(self, cases: Sequence[Any], concurrency: int) -> None:
        self.order = list(cases)
        self.concurrency = concurrency
        self.throttle = Throttle(concurrency)
        self._futures: dict[str, Future[dict[str, Any]]] = {}
        self._next = 0
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._work: Callable[[Any], dict[str, Any]] | None = None
        self._closed = False

    def result(self, case: Any, work: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        """The cell body of `case`: started now if it is not running yet, then waited for."""
        with self._lock:
            if self._executor is None:
                self._work = work
                self._executor = ThreadPoolExecutor(self.concurrency, "mtpsweep-cell")
                for _ in range(self.concurrency):
                    self._start_next()
            future = self._futures.get(case.id)
            if future is None:  # not in the session's order (a re-run): run it alone
                future = self._executor.submit(work, case)
                self._futures[case.id] = future
        try:
            return future.result()
        finally:
            with self._lock:
                self._futures.pop(case.id, None)

    def _start_next(self) -> None:
        """Start the next cell in order (the lock is held)."""
        if self._closed or self._next >= len(self.order):
            return
        case = self.order[self._next]
        self._next += 1
        assert self._executor is not None
        self._futures[case.id] = self._executor.submit(self._cell, case)

    def _cell(self, case: Any) -> dict[str, Any]:
        """One cell in order; on the way out (even by an error) it starts the next."""
        assert self._work is not None
        try:
            return self._work(case)
        finally:
            with self._lock:
                self._start_next()

    def close(self) -> None:
        """Start nothing more; wait for the cells in flight (their requests have timeouts)."""
        with self._lock:
            self._closed = True
            executor = self._executor
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
