"""The end of an authoring run, analysis or not: scores.csv and RUN_STATUS.

RUN_STATUS's first line is `ok`, `partial` or `stopped`; the lines after it say why, naming
the cells:
- `stopped`: a protocol rule stopped the run (STOPPED holds the marker; --resume refuses it);
- `partial`: some selected cell has no final outcome: `budget_stopped`, or none at all (an
  interrupted run, a server that died, a session that did not start or was dropped);
- `ok`: every selected cell has a final outcome. API failures and checker errors are outcomes:
  they leave the run `ok` and are listed by name (the census the report discloses too).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ....kindapi import RunReadError
from ....kindapi.records import RunReader, atomic_write_text, schema
from .. import records
from . import cells

SHOWN = 12  # cells named per line before "and n more"


def _names(ids: Sequence[str]) -> str:
    head = ", ".join(ids[:SHOWN])
    return head + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def scores_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(records.SCORES_COLUMNS), extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {k: "" if row.get(k) is None else row.get(k) for k in records.SCORES_COLUMNS}
        )
    return buf.getvalue()


def status(
    selected: Sequence[str], latest: Mapping[str, Mapping[str, Any]], stopped: str | None
) -> list[str]:
    """RUN_STATUS's lines: the status, then why, naming cells."""
    budget = [
        c for c in selected if (latest.get(c) or {}).get(records.OUTCOME) == records.BUDGET_STOPPED
    ]
    missing = [c for c in selected if c not in latest or latest[c].get(records.OUTCOME) is None]
    by = {
        o: [c for c in selected if (latest.get(c) or {}).get(records.OUTCOME) == o]
        for o in (records.API_FAILURE, records.CHECKER_ERROR)
    }
    done = len(selected) - len(budget) - len(missing)
    lines = [f"{done} of {len(selected)} selected cells have a final outcome"]
    if budget:
        why = (latest[budget[0]].get("reason") or "the token budget").strip()
        lines.append(f"{len(budget)} {records.BUDGET_STOPPED} ({why}): {_names(budget)}")
    if missing:
        lines.append(
            f"{len(missing)} without an outcome (not run or interrupted): {_names(missing)}"
        )
    for outcome, ids in by.items():
        if ids:
            lines.append(f"{len(ids)} {outcome} (an outcome, not informative): {_names(ids)}")
    if stopped:
        word = records.RUN_STOPPED
        lines.insert(0, f"stopped by a protocol rule: {stopped}")
    else:
        word = records.RUN_PARTIAL if budget or missing else records.RUN_OK
    return [word, *lines]


def finish_run(run_dir: Path, planned: Sequence[Mapping[str, Any]]) -> list[str]:
    """Write scores.csv (one row per cell) and RUN_STATUS; lines for the terminal.

    `planned` are the selected cells' identities (cell, subject, cohort, task, repeat): a cell
    without a record still gets its row, with an empty outcome.
    """
    latest = cells.latest(run_dir)
    by_id = {str(p["cell"]): p for p in planned}
    selected = list(by_id)
    order = list(dict.fromkeys([*selected, *latest]))
    rows = [latest.get(c) or by_id[c] for c in order]
    atomic_write_text(run_dir / records.SCORES_CSV, scores_csv(rows))
    read = RunReader(run_dir)
    stopped: str | None
    try:  # read bounded: a FIFO or a huge file planted there is no marker's text
        stopped = read.stopped if read.has(schema.STOPPED_FILE) else None
    except RunReadError:
        stopped = "(the STOPPED marker cannot be read)"
    lines = status(selected, latest, stopped)
    atomic_write_text(run_dir / schema.RUN_STATUS_FILE, "\n".join(lines) + "\n")
    return [
        f"RUN_STATUS: {lines[0]}",
        *(f"  {line}" for line in lines[1:]),
        f"scores: {run_dir / records.SCORES_CSV}",
    ]
