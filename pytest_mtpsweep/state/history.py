"""The gate history: one JSON line per gate verdict, appended and fsync'd, never rewritten.

`--history FILE` appends each gate's verdict as a `GateEntry`; `mtpsweep history FILE` reads
them back. The file is read bounded (the last `MAX_READ_BYTES` of it, at most `MAX_ENTRIES`
lines), and every line that cannot be used is counted and named, never dropped silently.
Entries are comparable only within one `group`: the same gate (treatment, baseline, subset,
metric) on the same host fingerprint and model; the builds change from gate to gate by design,
so they are kept and shown, not split on.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import os
import platform
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from ..base import recordlines
from ..base.errors import UserError
from ..base.fileio import dumps_line, special
from ..base.schema import HISTORY_REQUIRED
from ..rig.build import cpu_key

FORMAT = 1
DECISIONS: tuple[str, ...] = ("pass", "fail", "undecided")
MAX_READ_BYTES = 16 * 1024 * 1024  # the tail of the file read: ~60,000 entries
MAX_ENTRIES = 100_000  # lines read, at most
MAX_TEXT = 500  # characters of any text field

Decision = Literal["pass", "fail", "undecided"]

TYPES: recordlines.Types = {
    "format": recordlines.INT,
    "time": recordlines.NAME,
    "run": recordlines.STR,
    "gate": recordlines.NAME,
    "treatment": recordlines.NAME,
    "baseline": recordlines.STR,
    "subset": recordlines.STR,
    "metric": recordlines.STR,
    "margin_pct": recordlines.NUMBER,
    "estimate_pct": recordlines.NUMBER,
    "lower_pct": recordlines.NUMBER,
    "upper_pct": recordlines.NUMBER,
    "confidence": recordlines.NUMBER,
    "decision": DECISIONS,
    "host": recordlines.STR,
    "model": recordlines.STR,
    "treatment_build": recordlines.STR,
    "baseline_build": recordlines.STR,
}
REQUIRED = HISTORY_REQUIRED


class HistoryError(UserError):
    """The history file cannot be written or read; the message names it and the fix."""


@dataclass(frozen=True)
class GateEntry:
    """One gate's verdict as the history keeps it (percentages; None: the gate gave none)."""

    time: str  # UTC, ISO 8601, e.g. 2026-12-06T15:34:29Z
    run: str  # the run directory's name
    gate: str  # the gate as given, e.g. HEAD:structured:not-slower:3
    treatment: str
    baseline: str
    subset: str
    metric: str  # the endpoint judged, e.g. decode_rate_tps_primary
    margin_pct: float | None
    estimate_pct: float | None
    lower_pct: float | None
    upper_pct: float | None
    decision: Decision
    host: str  # host_fingerprint()
    model: str
    treatment_build: str
    baseline_build: str
    confidence: float = 0.95  # the interval's two-sided confidence level
    format: int = FORMAT

    def __post_init__(self) -> None:
        why = _problem(self)
        if why is not None:
            raise HistoryError(f"gate {self.gate!r} cannot go into the history: {why}.")

    @property
    def when(self) -> dt.datetime:
        """`time` as a datetime (UTC), for ordering whatever way the offset was written."""
        return dt.datetime.fromisoformat(self.time)

    @property
    def group(self) -> tuple[str, ...]:
        """What makes two entries comparable: the same gate on the same host and model."""
        return (self.treatment, self.baseline, self.subset, self.metric, self.host, self.model)

    def record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> GateEntry:
        def num(name: str) -> float | None:
            v = record.get(name)
            try:
                return None if v is None else float(v)
            except OverflowError:  # a JSON integer past a float's range
                raise HistoryError(f"{name}: its {name} is not a finite number.") from None

        return cls(
            time=str(record["time"]),
            run=str(record.get("run") or ""),
            gate=str(record["gate"]),
            treatment=str(record["treatment"]),
            baseline=str(record.get("baseline") or ""),
            subset=str(record.get("subset") or ""),
            metric=str(record.get("metric") or ""),
            margin_pct=num("margin_pct"),
            estimate_pct=num("estimate_pct"),
            lower_pct=num("lower_pct"),
            upper_pct=num("upper_pct"),
            decision=record["decision"],
            host=str(record.get("host") or ""),
            model=str(record.get("model") or ""),
            treatment_build=str(record.get("treatment_build") or ""),
            baseline_build=str(record.get("baseline_build") or ""),
            confidence=0.95 if record.get("confidence") is None else float(record["confidence"]),
            format=int(record["format"]),
        )


def _problem(e: GateEntry) -> str | None:
    """Why an entry is not one the history can keep (None: it is)."""
    if e.format != FORMAT:
        return (
            f"it is format {e.format}; this version reads format {FORMAT} (upgrade pytest-mtpsweep)"
        )
    if e.decision not in DECISIONS:
        return f"its decision {e.decision!r} is not one of {', '.join(DECISIONS)}"
    texts = {k: v for k, v in asdict(e).items() if isinstance(v, str)}
    long = next((k for k, v in texts.items() if len(v) > MAX_TEXT), None)
    if long is not None:
        return f"its {long} is longer than {MAX_TEXT} characters"
    try:
        when = dt.datetime.fromisoformat(e.time)
    except ValueError:
        return f"its time {e.time!r} is not an ISO 8601 time"
    if when.utcoffset() != dt.timedelta(0):
        return f"its time {e.time!r} is not in UTC"
    numbers = (e.margin_pct, e.estimate_pct, e.lower_pct, e.upper_pct)
    if any(v is not None and not math.isfinite(v) for v in (*numbers, e.confidence)):
        return "a number in it is not finite"
    if not 0 < e.confidence < 1:
        return f"its confidence level {e.confidence} is not between 0 and 1"
    interval = (e.lower_pct, e.estimate_pct, e.upper_pct)
    if all(v is not None for v in interval) and not (
        e.lower_pct <= e.estimate_pct <= e.upper_pct  # type: ignore[operator]
    ):
        return "its estimate is not inside its interval"
    return None


def decision(met: bool | None) -> Decision:
    """A verdict's `met` as the history's decision."""
    return "undecided" if met is None else "pass" if met else "fail"


def now_utc() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def host_fingerprint() -> str:
    """12 hex digits of this host: its name, architecture, CPU features and core count (hashed,
    so the history names no host)."""

    text = f"{platform.node()}\n{platform.machine()}\n{cpu_key()}\n{os.cpu_count()}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def append(path: Path, entries: list[GateEntry]) -> None:
    """Append the entries, one line each, fsync'd; an existing torn last line stays its own
    (unreadable) line. Never through a link, never to a FIFO or device; a failed write is a
    HistoryError."""
    if not entries:
        return
    text = "".join(dumps_line(e.record()) + "\n" for e in entries)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o644)
        try:
            mode = os.fstat(fd).st_mode
            if special(mode):
                raise HistoryError(
                    f"cannot append to the history {path}: it is {special(mode)}, not a "
                    "regular file; name another --history file (the gates' verdicts stand)."
                )
            data = text.encode("utf-8")
            if os.fstat(fd).st_size > 0 and _ends_torn(path):
                data = b"\n" + data
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise HistoryError(
            f"cannot append to the history {path}: {exc.strerror or exc}; free the disk or "
            "name another --history file (the gates' verdicts stand)."
        ) from None


def _ends_torn(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        os.lseek(fd, -1, os.SEEK_END)
        return os.read(fd, 1) != b"\n"
    finally:
        os.close(fd)


@dataclass(frozen=True)
class History:
    """A history file read back: its entries in file order and the lines left out."""

    entries: tuple[GateEntry, ...]
    unreadable: tuple[recordlines.Unreadable, ...]
    skipped_bytes: int  # the file's head beyond MAX_READ_BYTES, not read
    skipped_lines: int  # whole lines beyond MAX_ENTRIES, not read


def read(path: Path, max_bytes: int = MAX_READ_BYTES, max_entries: int = MAX_ENTRIES) -> History:
    """The last `max_bytes` of the file, at most the last `max_entries` lines of it; a line that
    cannot be used is an `Unreadable` naming it (line numbers count from the part read)."""
    try:
        mode = os.stat(path).st_mode
        if special(mode):  # a FIFO would block the read, a device never end it
            raise HistoryError(
                f"cannot read the history {path}: it is {special(mode)}, not a regular file; "
                "name a file --history wrote."
            )
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            skipped = max(0, size - max_bytes)
            f.seek(skipped)
            data = f.read(max_bytes)
    except OSError as exc:
        raise HistoryError(
            f"cannot read the history {path}: {exc.strerror or exc}; name a file --history wrote."
        ) from None
    if skipped:  # the first line read is most likely a part of one: start at the next whole
        cut = data.find(b"\n") + 1
        skipped, data = skipped + cut, data[cut:]
    # On "\n" only: str.splitlines() also splits at U+0085 and U+2028, which JSON keeps raw
    # inside strings (a build name holding one would tear its entry in two).
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and not lines[-1]:
        lines.pop()  # what follows the last newline: nothing
    dropped = max(0, len(lines) - max_entries)
    label = path.name if not (skipped or dropped) else f"{path.name} (its last part)"
    good, bad = recordlines.read_lines(lines[dropped:], label, lambda _: TYPES, REQUIRED)
    entries: list[GateEntry] = []
    unreadable = list(bad)
    for line in good:
        try:
            entries.append(GateEntry.from_record(line.record))
        except HistoryError as exc:
            unreadable.append(recordlines.Unreadable(label, line.line, _why(exc)))
    unreadable.sort(key=lambda u: u.line)
    return History(tuple(entries), tuple(unreadable), skipped, dropped)


def _why(exc: HistoryError) -> str:
    return str(exc).split(": ", 1)[-1].rstrip(".")
