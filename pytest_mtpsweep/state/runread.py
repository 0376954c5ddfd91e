"""A run directory read back: the one reader beside the one writer (`rundir.RunDir`).

`RunReader(path)` opens a run directory and gives what the protocol and its kind wrote there:
the plan (plan.json, parsed once into a `plandoc.PlanDoc`), the records of a folder (records/, cells/, turns/: each line a record or
an `Unreadable`, by `recordlines`' rule), the session files, the sessions set aside in
quarantine/, the run-wide documents (stop.json as a `rundocs.StopDoc`, curtailment.json,
STOPPED) and the analysis tables. Every analysis, page and command that reads a run reads it
here. plan.json, the session files and stop.json carry the `format` their writer stamped:
format 0 (the previous release, no field) is read as it is; a later format than
`rundocs.FORMAT` is a `RunReadError` naming both (a session file's is set aside and named).

One rule for a file that is not as the protocol writes it:

- missing: a file or folder that is not there reads as its empty value (`{}`, no records, no
  sessions, no rows, `""`), never an error; `has(name)` says whether it is there, so a command
  that needs one (`--resume`, `view`, `plan`) refuses in its own words.
- malformed, run-wide: a JSON document the whole run rests on (plan.json, stop.json,
  curtailment.json) that is no regular file (a FIFO, a folder) or does not parse, or an
  analysis table that does not parse, is a `RunReadError`: one line naming the file and the
  fix. Nothing can be read right without it.
- malformed, one of many: a record line or a session file that cannot be used is set aside,
  counted and named (`records/01_a_c1.jsonl:7: why`, `sessions/01_a_c1.json: why`), and the
  rest are read: one bad line or session costs itself, never the run.
- another run's: a record line whose `run_id` or `preregistration_sha256` differs from
  plan.json's (a file copied in, lines appended from another run) is set aside the same way,
  named with both values: one run's records are never pooled with another's by accident.

A folder of records or sessions yields every file named like one: a folder, FIFO, device, link
out of the run or file over its bound (`fileio.MAX_RECORD_FILE_BYTES`,
`fileio.MAX_DOCUMENT_BYTES`) named like one is never opened as one, and is set aside and named
like a bad line (`records/01_a_c1.jsonl:1: no record the tool writes: the file is a FIFO, ...`),
never passed over without a word. A quarantined session's odd file is passed over. A name is
shown with its control characters escaped, so a hostile file name stays one line wherever it
is printed.
"""

from __future__ import annotations

import csv
import functools
import io
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import recordlines as rl
from ..base import schema
from ..base.errors import RunReadError
from ..base.fileio import BadFile, BadJson, load_json_bounded, read_bounded
from .plandoc import PlanDoc
from .rundocs import SessionDoc, StopDoc

RECORD_SUFFIX = ".jsonl"
OUT = "the file is a link out of the run, whose files are the ones inside it"
SESSION_SUFFIX = ".json"


def shown(name: str) -> str:
    """A file name as printed: control and other unprintable characters escaped (`\\n`)."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in name)


@dataclass(frozen=True)
class RecordText:
    """One record file's lines as read (a torn UTF-8 character replaced, never fatal)."""

    name: str  # the file's stem: the session (or cell file) it belongs to
    label: str  # how the run names it in a reason: records/01_a_c1.jsonl, name escaped
    lines: tuple[str, ...]
    # the run's identity fields from plan.json: pass them to `recordlines.read_lines`, which
    # sets another run's lines aside (empty without a plan: nothing to judge them by)
    identity: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Records:
    """A folder's records: every usable line, and every line set aside with its reason."""

    lines: tuple[rl.Line, ...]
    unreadable: tuple[rl.Unreadable, ...]

    @property
    def records(self) -> list[dict[str, Any]]:
        return [line.record for line in self.lines]


@dataclass(frozen=True)
class Sessions:
    """The session files: each readable one parsed, in name (run) order, and each one set aside
    as `sessions/<name>.json: why`."""

    documents: tuple[SessionDoc, ...]
    unreadable: tuple[str, ...]
    foreign: frozenset[str] = frozenset()  # sessions whose file is another run's

    @property
    def facts(self) -> tuple[Mapping[str, Any], ...]:
        """Each readable file as `{"session": <name>, **what it holds}` (the kind's view)."""
        return tuple(d.facts for d in self.documents)


@dataclass(frozen=True)
class Held:
    """A session set aside in quarantine/<session>/: counted, never analysed as kept."""

    session: str  # the folder's name (03_b_c2, or 03_b_c2.2 for a second attempt)
    label: str  # quarantine/<session>, name escaped
    reason: str  # reason.txt, whole ("" without one)
    records: RecordText | None  # its records file (None without one)
    facts: Mapping[str, Any] | None  # its session file (None when absent or unreadable)

    @property
    def why(self) -> str:
        """The reason's first line: what set the session aside."""
        return self.reason.splitlines()[0] if self.reason else ""


@dataclass(frozen=True)
class Table:
    """An analysis table (a CSV file): its header and rows as text; empty when absent."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def dicts(self) -> list[dict[str, str]]:
        """Each row by its header (a short row lacks the keys it has no cell for)."""
        return [dict(zip(self.headers, row, strict=False)) for row in self.rows]


class RunReader:
    """One run directory, read by the rule above; nothing is read until it is asked for."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunReader({str(self.path)!r})"

    def has(self, relpath: str | Path) -> bool:
        """Whether the run holds this file or folder."""
        return (self.path / relpath).exists()

    def text(self, relpath: str | Path) -> str:
        """A file's text ("" when it is not there); a torn UTF-8 character is replaced."""
        path = self.path / relpath
        if not _regular(path):
            return ""
        try:
            return read_bounded(path).decode("utf-8", errors="replace")
        except BadFile as exc:
            raise RunReadError(f"{path} {exc}; restore it from the run") from None

    def document(self, relpath: str | Path, what: str) -> Mapping[str, Any]:
        """A run-wide JSON object ({} when it is not there); RunReadError if it is not one, or
        is no regular file, too big or nested too deep to be one the run wrote (`fileio`)."""
        path = self.path / relpath
        if not path.exists() and not path.is_symlink():
            return {}
        try:
            loaded = load_json_bounded(path)
        except BadFile as exc:  # there, but nothing a run writes: never read as "no document"
            raise RunReadError(f"{what} {path} {exc}; restore it from the run") from None
        if not isinstance(loaded, Mapping):
            raise RunReadError(
                f"{what} {path} does not hold a JSON object; restore it from the run"
            )
        return loaded

    @functools.cached_property
    def plan(self) -> PlanDoc:
        """plan.json: the run as founded, typed (`PlanDoc()` when it has none); a document of a
        later format than this version reads is a RunReadError naming both formats."""
        raw = self.document(schema.PLAN_FILE, "plan file")
        return (
            PlanDoc.from_json(raw, f"plan file {self.path / schema.PLAN_FILE}")
            if raw
            else PlanDoc()
        )

    @functools.cached_property
    def identity(self) -> Mapping[str, str]:
        """The fields every record of this run carries with plan.json's values (those the plan
        has): a record line with another value is another run's (`recordlines.foreign`)."""
        values = {
            "run_id": self.plan.run_id,
            "preregistration_sha256": self.plan.preregistration_sha256,
        }
        return {name: values[name] for name in rl.IDENTITY_FIELDS if values[name]}

    @property
    def run_id(self) -> str:
        """The plan's run id, else the directory's name."""
        return self.plan.run_id or self.path.name

    @property
    def stop(self) -> StopDoc:
        """stop.json, the looks a [stop] run took (`StopDoc()` without one); the design is
        `plan.stop`."""
        raw = self.document(schema.STOP_FILE, "stop-rule file")
        return (
            StopDoc.from_json(raw, f"stop-rule file {self.path / schema.STOP_FILE}")
            if raw
            else StopDoc()
        )

    @property
    def curtailment(self) -> Mapping[str, Any]:
        """curtailment.json, the sessions a deadline dropped ({} without one); a RunReadError
        when it names what the plan does not hold (`curtailment_problem`)."""
        raw = self.document(schema.CURTAILMENT_FILE, "curtailment file")
        why = curtailment_problem(raw, self.plan) if raw and self.plan != PlanDoc() else None
        if why is not None:
            raise RunReadError(
                f"curtailment file {self.path / schema.CURTAILMENT_FILE}: {why}, which the run "
                "never writes; restore it from the run"
            )
        return raw

    @property
    def stopped(self) -> str:
        """The STOPPED marker's text, stripped ("" when the run was not stopped)."""
        return self.text(schema.STOPPED_FILE).strip()

    @property
    def stop_reason(self) -> str:
        """Why the run was stopped, for a refusal: the STOPPED marker's text, or a clause saying
        it cannot be read; never raises, never waits on a FIFO or reads a device."""
        try:
            text = self.stopped
        except RunReadError as exc:
            return str(exc)
        return text or f"its {schema.STOPPED_FILE} marker, which is no regular file or is empty"

    def record_files(self, folder: str = schema.RECORDS_DIR) -> tuple[RecordText, ...]:
        """Every `*.jsonl` file of `folder`, in name (run) order, as its lines."""
        return tuple(
            RecordText(
                path.stem,
                f"{folder}/{shown(path.name)}",
                tuple(rl.text_lines(path) if self._inside(path) else [f"{rl.UNREAD}{OUT}"]),
                self.identity,
            )
            for path in self._files(folder, RECORD_SUFFIX)
        )

    def records(
        self,
        folder: str = schema.RECORDS_DIR,
        types: rl.TypesFor | None = None,
        required: Sequence[str] = (),
    ) -> Records:
        """Every line of `folder`'s record files as a record, or set aside with its reason
        (`types` and `required` as `recordlines.read_lines` takes them)."""
        lines: list[rl.Line] = []
        bad: list[rl.Unreadable] = []
        for file in self.record_files(folder):
            read, unreadable = rl.read_lines(file.lines, file.label, types, required, file.identity)
            lines += read
            bad += unreadable
        return Records(tuple(lines), tuple(bad))

    def sessions(self, types: rl.Types | None = None) -> Sessions:
        """Every session file, each read or set aside (see `Sessions`); with `types` (a kind's
        facts, recordlines' types, bounded ones among them) a file holding a value outside
        them is set aside too, `sessions/<name>.json: malformed field: ...`."""
        docs: list[SessionDoc] = []
        bad: list[str] = []
        other: set[str] = set()
        for path in self._files(schema.SESSIONS_DIR, SESSION_SUFFIX):
            label = f"{schema.SESSIONS_DIR}/{shown(path.name)}"
            if not self._inside(path):
                bad.append(f"{label}: {OUT}")
                continue
            try:
                loaded = load_json_bounded(path)
            except BadJson:
                bad.append(f"{label}: {rl.NOT_JSON}")
                continue
            except BadFile as exc:  # too big, nested too deep, NaN: named as it is
                bad.append(f"{label}: {exc}")
                continue
            if not isinstance(loaded, dict):
                bad.append(f"{label}: {rl.NOT_OBJECT}")
                continue
            why = rl.foreign(loaded, self.identity, "session file")
            if why is not None:
                bad.append(f"{label}: {why}")
                other.add(path.stem)
                continue
            why = rl.check(loaded, types) if types is not None else None
            if why is not None:
                bad.append(f"{label}: {why}")
                continue
            try:
                docs.append(SessionDoc.from_json(path.stem, loaded, label))
            except RunReadError as exc:  # one session's file costs itself, never the run
                bad.append(str(exc))
        return Sessions(tuple(docs), tuple(bad), frozenset(other))

    def session_records(self, session: str, folder: str = schema.RECORDS_DIR) -> Records:
        """One session's records file (`folder/<session>.jsonl`) as `records` reads a folder's
        (no records when it is not there), e.g. a session's own records while it closes."""
        path = self.path / folder / f"{session}{RECORD_SUFFIX}"
        if not _regular(path):
            return Records((), ())
        label = f"{folder}/{shown(path.name)}"
        read, bad = rl.read_lines(tuple(rl.text_lines(path)), label, None, (), self.identity)
        return Records(tuple(read), tuple(bad))

    def quarantined(self) -> tuple[Held, ...]:
        """Every session set aside in quarantine/, in name order."""
        root = self.path / schema.QUARANTINE_DIR
        if not root.is_dir():
            return ()
        out = []
        records, session = (
            schema.QUARANTINE_MEMBERS["records"],
            schema.QUARANTINE_MEMBERS["session"],
        )
        for qdir in sorted(p for p in root.iterdir() if p.is_dir() and self._inside(p)):
            label = f"{schema.QUARANTINE_DIR}/{shown(qdir.name)}"
            rec = qdir / records
            held = (
                RecordText(
                    qdir.name, f"{label}/{records}", tuple(rl.text_lines(rec)), self.identity
                )
                if _regular(rec) and self._inside(rec)
                else None
            )
            out.append(
                Held(
                    qdir.name,
                    label,
                    self.text(qdir / schema.QUARANTINE_REASON).strip(),
                    held,
                    self._facts(qdir / session),
                )
            )
        return tuple(out)

    def table(self, relpath: str | Path) -> Table:
        """An analysis table (e.g. `analysis/gaps.csv`; an absolute path for an `--out`
        folder): see `read_table`."""
        return read_table(self.path / relpath)

    def _files(self, folder: str, suffix: str) -> list[Path]:
        root = self.path / folder
        if not root.is_dir():
            return []
        # every one, a FIFO or a link out too: the reader names it, never passes it over
        return sorted(p for p in root.iterdir() if p.name.endswith(suffix))

    def _inside(self, path: Path) -> bool:
        # a link may point anywhere; the run's files are the ones inside it
        try:
            return path.resolve().is_relative_to(self.path.resolve())
        except (OSError, RuntimeError):  # a loop of links: nothing inside the run
            return False

    def _facts(self, path: Path) -> Mapping[str, Any] | None:
        if not _regular(path):
            return None
        try:
            loaded = load_json_bounded(path)
        except BadFile:
            return None
        return loaded if isinstance(loaded, Mapping) else None


MAX_REASON_CHARS = 4096  # a drop's reason, or the deadline's words: one sentence of the run's


def curtailment_problem(raw: Mapping[str, Any], plan: PlanDoc) -> str | None:
    """Why curtailment.json is no document the run wrote from this plan (None: it may be):
    each drop a planned session with its own treatment and cycle, the treatments those of the
    drops, the sentence the plan registered, the deadline's sessions planned ones."""
    planned = {s.session: s for s in plan.sessions}
    dropped = raw.get("dropped", [])
    if not isinstance(dropped, list) or len(dropped) > len(planned):
        return f"`dropped` is not a list of at most the plan's {len(planned)} sessions"
    for i, d in enumerate(dropped):
        s = planned.get(str(d.get("session"))) if isinstance(d, Mapping) else None
        if s is None or d.get("treatment") != s.treatment or d.get("cycle") != s.cycle:
            return f"`dropped[{i}]` is not a planned session with its treatment and cycle"
        reason = d.get("reason", "")
        if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
            return (
                f"`dropped[{i}].reason` is not a sentence of at most {MAX_REASON_CHARS} characters"
            )
    affected = sorted({str(d["treatment"]) for d in dropped})
    if "affected_treatments" in raw and raw["affected_treatments"] != affected:
        return f"`affected_treatments` is not {affected}, the treatments of its drops"
    if "sentence" in raw and raw["sentence"] != plan.analysis.curtailment_sentence:
        return "`sentence` is not the curtailment sentence plan.json registered"
    stop = raw.get("deadline_stop")
    if stop is None:
        return None
    not_run = stop.get("not_run") if isinstance(stop, Mapping) else None
    if (
        not isinstance(not_run, list)
        or not all(n in planned for n in not_run)
        or not isinstance(stop.get("deadline"), str)
        or len(stop["deadline"]) > MAX_REASON_CHARS
        or stop.get("after") not in (None, *planned)
    ):
        return "`deadline_stop` does not name the plan's sessions (deadline, after, not_run)"
    return None


def read_table(path: Path) -> Table:
    """A CSV table its analysis wrote: empty when it is not there, a RunReadError when it is no
    CSV (blank lines are skipped, as csv.DictReader does)."""
    if not _regular(path):
        return Table((), ())
    try:
        text = read_bounded(path).decode("utf-8", errors="replace")
    except BadFile as exc:  # swapped for a FIFO since, or grown past any table written
        raise RunReadError(
            f"analysis table {path} {exc}; write it again with mtpsweep analyse"
        ) from None
    try:
        rows = [row for row in csv.reader(io.StringIO(text, newline="")) if row]
    except csv.Error as exc:
        raise RunReadError(
            f"analysis table {path} is not CSV ({exc}); write it again with mtpsweep analyse"
        ) from None
    if not rows:
        return Table((), ())
    return Table(tuple(rows[0]), tuple(tuple(r) for r in rows[1:]))


def _regular(path: Path) -> bool:
    """A regular file (a link followed): never a folder, FIFO or device opened as one."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False
