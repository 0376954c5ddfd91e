"""After the last session: the row table and the memory witness, from the session files.

Everything is rebuilt from what the run directory holds (its session files, the quarantined
ones included), so a resumed run's table has every session, before and after the interruption.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..base import schema
from ..base.errors import RunDirError
from ..base.fileio import load_json_bounded, read_bounded
from ..ladder import Ladder
from ..state.rundir import RunDir
from . import rowtable
from . import serveridentity as witnesses


@dataclass(frozen=True)
class Summary:
    """What the terminal shows at the end of a run."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    memory_lines: list[str] = field(default_factory=list)
    kind_lines: list[str] = field(default_factory=list)  # the kind's own end lines (a run status)
    shakedown: str = ""  # the first session's shakedown, printed once

    def table(self, width: int | None = None) -> str:
        return rowtable.render(self.rows, width) if self.rows else ""

    @property
    def notes(self) -> list[str]:
        """The lines under the table: the first session's shakedown, then the memory steps."""
        return [line for line in (self.shakedown, *self.memory_lines) if line]


def _quarantined_session_files(run_dir: RunDir) -> list[dict[str, Any]]:
    """The facts of every quarantined attempt; one killed before it was filed (a kill -9, set
    aside on --resume) is a row too, from its directory name and reason."""

    out: list[dict[str, Any]] = []
    member = schema.QUARANTINE_MEMBERS["session"]
    for qdir in sorted(p for p in (run_dir.path / schema.QUARANTINE_DIR).glob("*") if p.is_dir()):
        try:
            facts = load_json_bounded(qdir / member)  # a FIFO or deep file: read as unfiled
        except ValueError:
            facts = _unfiled(qdir)
        if isinstance(facts, dict):
            out.append(facts)
    return out


MAX_REASON_BYTES = 1 << 16  # a quarantine's reason.txt: a few lines the run wrote


def _unfiled(qdir: Path) -> dict[str, Any] | None:
    # 03_b_c2, or 03_b_c2.2 for a second attempt (a treatment key may hold dots: gate_0.25)
    m = re.fullmatch(r"(\d+)_(.+)_c(\d+)(?:\.\d+)?", qdir.name)
    if m is None:
        return None
    ordinal, treatment, cycle = m.groups()
    name = f"{ordinal}_{treatment}_c{cycle}"
    try:
        raw = read_bounded(qdir / schema.QUARANTINE_REASON, MAX_REASON_BYTES)
        reason = raw.decode("utf-8", errors="replace").strip()
    except ValueError:
        reason = "set aside without a session file"
    return {
        "session": name,
        "ordinal": int(ordinal),
        "treatment": treatment,
        "cycle": int(cycle),
        "quarantined": reason or "set aside",
    }


def summarise(run_dir: RunDir, ladder: Ladder) -> Summary:
    """Write sessions.csv and memory_check.json; return the rows and memory lines."""
    kept = list(run_dir.session_files())
    every = kept + _quarantined_session_files(run_dir)
    rows = sorted(
        (rowtable.session_row(info) for info in every),
        key=lambda r: (r.get("ordinal") or 0, bool(r.get("rerun")), bool(r.get("quarantined"))),
    )
    lines: list[str] = []
    # The summary is printed even when the disk is full: a failed write is one line of it.
    try:
        run_dir.write_sessions_csv(rows)
    except RunDirError as exc:
        lines.append(f"{schema.SESSIONS_CSV} not written: {exc}")
    declared = {
        t.key: t.memory_step_mib for t in ladder.treatments if t.memory_step_mib is not None
    }
    usable = [info for info in kept if not info.get("quarantined") and not info.get("error")]
    if declared and usable:
        steps = witnesses.memory_steps(usable, declared, ladder.baseline)
        lines += [witnesses.describe(s) for s in steps]
        try:
            run_dir.write_json(schema.MEMORY_CHECK_FILE, [asdict(s) for s in steps])
        except RunDirError as exc:
            lines.append(f"{schema.MEMORY_CHECK_FILE} not written: {exc}")
    return Summary(rows, lines, shakedown=_first_shakedown(every))


def _first_shakedown(sessions: Sequence[Mapping[str, Any]]) -> str:
    """The shakedown line of the run's first session (the kind put it in its session file)."""
    firsts = sorted(
        (s for s in sessions if isinstance(s.get("shakedown"), dict)),
        key=lambda s: (s.get("ordinal") or 0, bool(s.get("rerun"))),
    )
    return str(firsts[0]["shakedown"].get("summary", "")) if firsts else ""
