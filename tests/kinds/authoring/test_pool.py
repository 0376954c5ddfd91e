"""The cell pool: every cell once, in order, `concurrency` at a time, never a deadlock."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_mtpsweep.kinds.authoring.run.pool import CellPool, Throttle


@dataclass(frozen=True)
class Cell:
    id: str


def cells(n: int) -> list[Cell]:
    return [Cell(f"c{i}") for i in range(n)]


def drain(pool: CellPool, order: list[Cell], work: Any, wait_s: float = 20.0) -> list[Any]:
    """Ask for each cell in order from another thread; fail (not hang) if it never ends."""
    out: list[Any] = []

    def ask() -> None:
        for c in order:
            try:
                out.append(pool.result(c, work))
            except Exception as e:  # the test reads what each cell gave
                out.append(e)
        pool.close()

    t = threading.Thread(target=ask, daemon=True)
    t.start()
    t.join(wait_s)
    assert not t.is_alive(), f"the pool hung after {len(out)} of {len(order)} cells"
    return out


@pytest.mark.parametrize("concurrency", [1, 2, 4, 8])
def test_cells_that_finish_at_once_never_deadlock(concurrency: int) -> None:
    # A cell that is done before its start returns once ran its follow-up under the held lock.
    order = cells(300)
    out = drain(CellPool(order, concurrency), order, lambda c: {"id": c.id})
    assert [o["id"] for o in out] == [c.id for c in order]


def test_no_more_than_concurrency_cells_in_flight() -> None:
    order = cells(40)
    lock = threading.Lock()
    now = peak = 0

    def work(c: Cell) -> dict[str, Any]:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        threading.Event().wait(0.002)
        with lock:
            now -= 1
        return {"id": c.id}

    drain(CellPool(order, 3), order, work)
    assert peak == 3


def test_a_cell_that_fails_still_starts_the_next() -> None:
    order = cells(10)

    def work(c: Cell) -> dict[str, Any]:
        if c.id == "c0":
            raise RuntimeError("refused")
        return {"id": c.id}

    out = drain(CellPool(order, 1), order, work)
    assert isinstance(out[0], RuntimeError)
    assert [o["id"] for o in out[1:]] == [c.id for c in order[1:]]


def test_a_cell_outside_the_order_runs_alone() -> None:
    order = cells(3)
    rerun = Cell("again")
    out = drain(CellPool(order, 2), [*order, rerun], lambda c: {"id": c.id})
    assert [o["id"] for o in out] == ["c0", "c1", "c2", "again"]


def test_a_429_halves_the_limit_and_answers_raise_it_again() -> None:
    t = Throttle(8)
    t.acquire()
    t.release(saw_429=True)
    assert (t.current, t.lowest, t.throttled) == (4, 4, 1)
    for _ in range(8):
        t.acquire()
        t.release(saw_429=False)
    assert t.current == 5 and t.facts()["concurrency_lowest"] == 4
