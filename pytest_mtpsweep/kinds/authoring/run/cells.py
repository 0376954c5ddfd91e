"""An authoring run's cells on disk: what a cell record holds, and what the run already has.

Cells and turns are appended (fsync'd) to `cells/<session>.jsonl` and `turns/<session>.jsonl`;
the full conversation goes to `conversations/<session>/<cell>.json`. A cell record is written
last, so it is the commit point: a cell whose record has a final outcome is never run again; a
cell without one (interrupted, its server gone) or `budget_stopped` runs again on --resume.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ....kindapi.records import RunReader, schema
from ....kindapi.run import RunContext
from ..records import (
    CELLS_DIR,
    COMPLETION_TOKENS,
    FINAL_OUTCOMES,
    OUTCOME,
    PROMPT_TOKENS,
    TURNS_DIR,
    CellResult,
)

_APPEND = threading.Lock()  # cells in flight together (pool.py) append to one turns file


def append(ctx: RunContext, relpath: str, record: Mapping[str, Any]) -> None:
    """One fsync'd line; a failed write raises RunDirError (the protocol stops the run)."""
    with _APPEND:
        ctx.run_dir.append(relpath, record)


def records(run_dir: Path, subdir: str) -> Iterator[dict[str, Any]]:
    """Every record under `subdir` (cells/ or turns/), file by file in name order."""
    yield from RunReader(run_dir).records(subdir).records


def latest(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Each cell's last record (a later attempt replaces an earlier one)."""
    out: dict[str, dict[str, Any]] = {}
    for rec in records(run_dir, CELLS_DIR):
        cell = rec.get("cell")
        if isinstance(cell, str):
            out[cell] = rec
    return out


def is_final(record: Mapping[str, Any] | None) -> bool:
    return record is not None and record.get(OUTCOME) in FINAL_OUTCOMES


def spent(run_dir: Path) -> int:
    """Tokens the run has spent so far, by its turn records (every attempt): what the budget
    was charged (a turn without usage: its bound), else the reported usage (older records)."""
    total = 0
    for rec in records(run_dir, TURNS_DIR):
        charged = rec.get("budget_tokens")
        keys = ("budget_tokens",) if type(charged) is int else (PROMPT_TOKENS, COMPLETION_TOKENS)
        for key in keys:
            value = rec.get(key)
            total += value if type(value) is int and value >= 0 else 0
    return total


def attempt(run_dir: Path) -> int:
    """0 for the first invocation, n after the n-th --resume (resume.log has a line each)."""
    log = run_dir / schema.RESUME_LOG
    if not log.is_file():
        return 0
    text = RunReader(run_dir).text(schema.RESUME_LOG)  # bounded: one line a --resume
    return sum(1 for line in text.splitlines() if line.strip())


def result_of(record: Mapping[str, Any]) -> CellResult:
    """The test's result from a cell record."""
    return CellResult(
        cell=str(record.get("cell")),
        valid=bool(record.get("valid")),
        reason=record.get("reason"),
        outcome=record.get(OUTCOME),
        green_turn=record.get("green_turn"),
        turns_used=int(record.get("turns_used") or 0),
        prompt_tokens=record.get(PROMPT_TOKENS),
        completion_tokens=record.get(COMPLETION_TOKENS),
    )
