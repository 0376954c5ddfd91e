"""The run directory: append-only records, session files, the row table, quarantine."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import os
import secrets
from pathlib import Path
from typing import IO, Any


class RunDirError(Exception):
    """The run directory cannot be created or written; the message says where and what to do."""


def new_run_id(now: dt.datetime | None = None) -> str:
    """UTC time plus a short random suffix: sortable, and unique even within one second."""
    now = now or dt.datetime.now(dt.UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def utc_now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _json_safe(value: Any) -> Any:
    # JSON has no NaN/inf; a rate that could not be computed is null, never a bare NaN token.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def dumps(obj: Any) -> str:
    return json.dumps(_json_safe(obj), sort_keys=False, ensure_ascii=False)


class RunDir:
    """One run's directory; created new, never reused."""

    SUBDIRS = ("records", "sessions", "servers", "quarantine", "analysis")

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, path: Path) -> RunDir:
        if path.exists():
            raise RunDirError(
                f"run directory {path} already exists; a run never writes into another run's "
                "directory: choose a new --run-dir or leave it unset for a fresh run id."
            )
        try:
            path.mkdir(parents=True)
        except FileExistsError:
            raise RunDirError(
                f"run directory {path} appeared while creating it; run again for a fresh id."
            ) from None
        for sub in cls.SUBDIRS:
            (path / sub).mkdir()
        return cls(path)

    def write_json(self, relpath: str, obj: Any) -> Path:
        """Write a whole JSON file atomically (temp file + rename), fsync'd."""
        target = self.path / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            f.write(json.dumps(_json_safe(obj), indent=2, ensure_ascii=False))
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        return target

    def write_text_new(self, relpath: str, text: str) -> Path:
        """Write a file that must not exist yet (e.g. a cycle-tagged flags file)."""
        target = self.path / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("x", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        return target

    def quarantine(self, session: str, reason: str) -> Path:
        """Move everything a session wrote under quarantine/, with the reason; delete nothing."""
        base = self.path / "quarantine" / session
        target, n = base, 1
        while target.exists():  # a re-run that is quarantined again keeps both attempts
            n += 1
            target = base.with_name(f"{session}.{n}")
        target.mkdir(parents=True)
        moves = {
            self.path / "records" / f"{session}.jsonl": "records.jsonl",
            self.path / "sessions" / f"{session}.json": "session.json",
            self.path / "servers" / f"{session}.log": "server.log",
            self.path / "servers" / f"{session}.flags.txt": "flags.txt",
            self.path / "servers" / session: "server",
        }
        for src, name in moves.items():
            if src.exists():
                os.replace(src, target / name)
        (target / "reason.txt").write_text(reason.rstrip() + "\n", encoding="utf-8")
        return target

    def record_writer(self, session: str) -> RecordWriter:
        return RecordWriter(self.path / "records" / f"{session}.jsonl")

    def write_sessions_csv(self, rows: list[dict[str, Any]]) -> Path:
        target = self.path / "sessions.csv"
        columns: list[str] = []
        for row in rows:
            columns.extend(k for k in row if k not in columns)
        with target.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            for row in rows:
                writer.writerow({k: _csv_cell(v) for k, v in row.items()})
        return target


def _csv_cell(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.3f}"
    return value


class RecordWriter:
    """Appends one JSON line per measurement; each line is on disk before the test reports."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None

    def append(self, record: dict[str, Any]) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(dumps(record) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_records(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Parsed records and the count of lines that did not parse (a run killed mid-write)."""
    records: list[dict[str, Any]] = []
    bad = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            bad += 1
    return records, bad
