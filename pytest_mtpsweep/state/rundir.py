"""The run directory: created new, never reused; records appended and fsync'd as made."""

from __future__ import annotations

import contextlib
import csv
import io
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ..base import schema
from ..base.errors import RunDirError
from ..base.fileio import (
    MAX_RECORD_FILE_BYTES,
    BadFile,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    dumps_line,
    load_json_bounded,
    read_bounded,
    write_new_text,
)
from .plandoc import PlanDoc
from .rundocs import FORMAT, FORMAT_FIELD, StopDoc
from .runread import RunReader

# A records file set aside in place when quarantine/ cannot take it (a full disk).
QUARANTINED_SUFFIX = ".quarantined"


def _write_error(path: Path, exc: OSError) -> RunDirError:
    return RunDirError(
        f"cannot write {path} ({exc.strerror or exc}); free space or fix permissions there, "
        "then --resume the run."
    )


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Write `path` inside: an OSError leaves as the RunDirError that says how to go on."""
    try:
        yield
    except OSError as exc:
        raise _write_error(path, exc) from None


class RunDir:
    """One run's directory; created new, never reused."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, path: Path) -> RunDir:
        if path.exists() or path.is_symlink():
            raise RunDirError(
                f"run directory {path} already exists; a run never writes into another run's "
                "directory: choose a new --run-dir or leave it unset for a fresh run id."
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir()
            for sub in schema.RUN_SUBDIRS:
                (path / sub).mkdir()
        except FileExistsError:
            raise RunDirError(
                f"run directory {path} appeared while creating it; run again for a fresh id."
            ) from None
        except OSError as exc:
            raise RunDirError(
                f"cannot create run directory {path} ({exc.strerror or exc}); pass --run-dir "
                "with a writable place."
            ) from None
        return cls(path)

    @classmethod
    def reopen(cls, path: Path) -> RunDir:
        for sub in schema.RUN_SUBDIRS:
            (path / sub).mkdir(exist_ok=True)
        return cls(path)

    def _under(self, relpath: str) -> Path:
        """`relpath` inside this run; a path that would leave it is the writer's bug, refused."""
        rel = PurePosixPath(relpath)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"{relpath!r} is not a path inside the run directory {self.path}")
        return self.path / rel

    def write_json(self, relpath: str, obj: Any) -> Path:
        """Write a whole JSON file atomically (temp file + rename), fsync'd."""
        target = self._under(relpath)
        with _writing(target):
            atomic_write_json(target, obj)
        return target

    def write_plan(self, doc: PlanDoc) -> Path:
        """plan.json, stamped with the documents' format (`rundocs.FORMAT`)."""
        return self.write_json(schema.PLAN_FILE, doc.to_json())

    def write_stop(self, doc: StopDoc) -> Path:
        """stop.json (the looks; the design is plan.json's), stamped with the format."""
        return self.write_json(schema.STOP_FILE, doc.to_json())

    def write_session(self, session: str, info: Mapping[str, Any]) -> Path:
        """sessions/<session>.json, stamped with the format (the kind's facts as they are)."""
        return self.write_json(schema.session_file(session), {FORMAT_FIELD: FORMAT, **info})

    def write_text(self, relpath: str, text: str) -> Path:
        target = self._under(relpath)
        with _writing(target):
            atomic_write_text(target, text)
        return target

    def write_text_new(self, relpath: str, text: str) -> Path:
        """Write a file that must not exist yet (e.g. a cycle-tagged flags file)."""
        target = self._under(relpath)
        with _writing(target):
            try:
                write_new_text(target, text)
            except FileExistsError:
                raise RunDirError(
                    f"{target} already exists and is never overwritten; start a new run."
                ) from None
        return target

    def append_text(self, relpath: str, line: str) -> None:
        target = self._under(relpath)
        with _writing(target), target.open("a", encoding="utf-8") as f:
            f.write(line.rstrip("\n") + "\n")

    def quarantine(self, session: str, reason: str) -> Path:
        """Move everything a session wrote under quarantine/, with the reason; delete nothing."""
        base = self.path / schema.QUARANTINE_DIR / session
        target, n = base, 1
        while target.exists():  # a re-run that is quarantined again keeps both attempts
            n += 1
            target = base.with_name(f"{session}.{n}")
        try:
            target.mkdir(parents=True)
        except OSError as exc:
            # A full disk may refuse a new directory; a rename in place needs no space, and the
            # analysis reads only records/*.jsonl, so the session still stays out of it.
            records = self.path / schema.records_file(session)
            if records.exists():
                os.replace(records, records.with_name(records.name + QUARANTINED_SUFFIX))
            raise _write_error(target, exc) from None
        m = schema.QUARANTINE_MEMBERS
        moves = {
            schema.records_file(session): m["records"],
            schema.session_file(session): m["session"],
            schema.server_log(session): m["log"],
            schema.flags_file(session): m["flags"],
            schema.launcher_dir(session): m["launcher"],
        }
        for src, name in moves.items():
            if (self.path / src).exists():
                os.replace(self.path / src, target / name)
        reason_file = target / schema.QUARANTINE_REASON
        with _writing(reason_file):  # the session is set aside all the same; the error travels on
            reason_file.write_text(reason.rstrip() + "\n", encoding="utf-8")
        return target

    def restore(self, held: Path, session: str, flag: str) -> None:
        """Bring a quarantined attempt back (the host rule keeps it: its re-run failed too),
        flagged `host_spoiled`. Its records go back before any of a later attempt; its session
        file goes back, or into the later attempt's as `host_spoiled_first`; its other files
        go back, or beside the later attempt's as `<session>.first...`; nothing is deleted but
        the quarantine's reason, which the session file now carries."""
        m = schema.QUARANTINE_MEMBERS
        try:
            first = load_json_bounded(held / m["session"])  # bounded: a FIFO reads as none
        except ValueError:
            first = {}
        if not isinstance(first, dict):
            first = {}
        first.update({"quarantined": None, "host_spoiled": flag})
        records = self.path / schema.records_file(session)
        held_records = held / m["records"]
        if held_records.exists():
            if records.exists():  # the re-run's: the first attempt's lines go before them
                try:
                    both = [read_bounded(p, MAX_RECORD_FILE_BYTES) for p in (held_records, records)]
                except BadFile as exc:
                    raise RunDirError(f"{held_records} or {records} {exc}; restore it") from None
                atomic_write_bytes(records, b"".join(both))
                held_records.unlink()
            else:
                os.replace(held_records, records)
        now = self.path / schema.session_file(session)
        if now.exists():
            later = load_json_bounded(now)
            if not isinstance(later, dict):
                raise RunDirError(f"{now} does not hold a session's facts; restore it from the run")
            later["host_spoiled_first"] = first
            self.write_session(session, later)
        else:
            self.write_session(session, first)
        (held / m["session"]).unlink(missing_ok=True)
        for src, name in (
            (schema.server_log(session), m["log"]),
            (schema.flags_file(session), m["flags"]),
            (schema.launcher_dir(session), m["launcher"]),
        ):
            if not (held / name).exists():
                continue
            dest = self.path / src
            if dest.exists():
                dest = self.path / src.replace(session, f"{session}.first", 1)
            os.replace(held / name, dest)
        (held / schema.QUARANTINE_REASON).unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # a kind's own member still there keeps the folder
            held.rmdir()

    def record_writer(self, session: str) -> RecordWriter:
        return RecordWriter(self.path / schema.records_file(session))

    def append(self, relpath: str, record: Mapping[str, Any]) -> None:
        """One record line appended to `relpath` of this run, fsync'd, and the file closed
        (`RecordWriter`'s rule: a failed write is cut back and raises RunDirError)."""
        writer = RecordWriter(self._under(relpath))
        try:
            writer.append(record)
        finally:
            writer.close()

    def session_files(self) -> Iterator[Mapping[str, Any]]:
        """Every readable session file, in name (run) order (read by `runread.RunReader`)."""
        yield from RunReader(self.path).sessions().facts

    def write_sessions_csv(self, rows: Sequence[Mapping[str, Any]]) -> Path:
        columns: list[str] = []
        for row in rows:
            columns.extend(k for k in row if k not in columns)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_cell(v) for k, v in row.items()})
        return self.write_text(schema.SESSIONS_CSV, buf.getvalue())


def _csv_cell(value: Any) -> Any:
    if isinstance(value, Mapping):
        return " / ".join(f"{k} {v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.3f}"
    return value


def _ends_torn(path: Path) -> bool:
    """The file ends in a line cut short (no newline after its last byte)."""
    try:
        with path.open("rb") as f:
            if f.seek(0, os.SEEK_END) == 0:
                return False
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except FileNotFoundError:
        return False


class RecordWriter:
    """Appends one JSON line per record; each line is on disk before the test reports.

    A failed write (a full disk) is cut back to the last whole line, so every line in the file
    stays a complete record, and raises RunDirError.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None

    def append(self, record: Mapping[str, Any]) -> None:
        line = dumps_line(record) + "\n"
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                torn = _ends_torn(self.path)
                self._file = self.path.open("a", encoding="utf-8")
                if torn:
                    # A killed run's half line stays one unreadable line (the analysis names
                    # it); without this the first record a --resume appends would join it.
                    self._file.write("\n")
            start = self._file.tell()
        except OSError as exc:
            raise _write_error(self.path, exc) from None
        try:
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            self._cut_back(start)
            raise _write_error(self.path, exc) from None

    def _cut_back(self, size: int) -> None:
        file, self._file = self._file, None
        # The buffered tail may fail to flush on close: it is cut off below anyway.
        with contextlib.suppress(OSError):
            if file is not None:
                file.close()
        with contextlib.suppress(OSError):
            os.truncate(self.path, size)

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
