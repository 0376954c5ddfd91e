"""`[trace]`: a public trace's arrival times and lengths, read and checked whole (pure but for
reading the file).

Two formats: Mooncake's JSONL (`{"timestamp": ms, "input_length": n, "output_length": n,
"hash_ids": [...]}` a line; kvcache-ai/Mooncake's FAST'25 traces) and Azure's LLM-inference CSV
(`TIMESTAMP,ContextTokens,GeneratedTokens`, the timestamp a datetime such as
`2023-11-16 18:15:46.6805900`; Azure/AzurePublicDataset). `parse` reads the table, `load` the
file's window of records (`start`, `limit`), and `check` the rules that need the rest of the
ladder. Every refusal is one `LadderError` naming the ladder, the trace file, its line and the
field, raised by the validation that lint, --collect-only, preflight and the run share, so a
malformed trace stops before any server starts. Every size is bounded before it is read: the
file's bytes, a line's bytes, the records, the lengths, the hash ids.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...kindapi import LadderError
from ...kindapi.ladder import Spec, check_table

if TYPE_CHECKING:
    from ...kindapi.ladder import Ladder

MODE = "trace"  # the replay's level mode (one level, labelled LABEL, per session)
LABEL = "replay"
FORMATS = ("mooncake", "azure")
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
MOONCAKE_FIELDS = ("timestamp", "input_length", "output_length")
MAX_TRACE_BYTES = 64 * 2**20  # a trace file; cut a longer one to an excerpt (head -n)
MAX_LINE_BYTES = 2**20  # one line (Mooncake's hash_ids are the long part)
MAX_RECORDS = 100_000  # records replayed: every one is a request held in memory, bytes built
MAX_TOKENS = 2**20  # an input or output length past any served context: absurd
MAX_HASH_IDS = MAX_TOKENS // 512  # a line's hash ids: blocks of 512 tokens of the longest input
TIME_TOLERANCE_MS = 1.0  # a record this much before the one above it is sent with it
MAX_FILL_CHARS = 256 * 2**20  # the replay's prompt text in all, built before the block
SCALES = {"time_scale": (1e-4, 1e4), "input_scale": (1e-4, 10.0)}
CHARS_PER_TOKEN = (1.0, 16.0)
BLOCK_TOKENS = (1, 65_536)
FIELDS: Spec = {
    "path": (str, True),
    "format": (str, True),
    "time_scale": ((int, float), False),
    "input_scale": ((int, float), False),
    "start": (int, False),
    "limit": (int, False),
    "chars_per_token": ((int, float), False),
    "block_tokens": (int, False),
}
EPOCH = datetime(1970, 1, 1)  # naive, as the trace's times are: no daylight saving moves them
_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?")


@dataclass(frozen=True)
class TraceSettings:
    """The `[trace]` table, read and defaulted: which file, which records, how scaled."""

    path: Path  # resolved against the ladder file's folder
    given: str  # the path as the ladder wrote it (what the refusals say)
    format: str
    time_scale: float = 1.0  # a factor on the trace's inter-arrival times (0.5: twice as fast)
    input_scale: float = 1.0  # a factor on its input lengths (a small server replays the shape)
    start: int = 1  # the first record replayed, counted from 1 (a CSV header is no record)
    limit: int | None = None  # how many records from there (None: to the end)
    chars_per_token: float = 4.0  # the fill's estimate; the records say what the server counted
    block_tokens: int = 512  # the tokens one hash id stands for (Mooncake's traces: 512)

    def plan_entry(self) -> dict[str, Any]:
        return {
            "path": self.given,
            "format": self.format,
            "time_scale": self.time_scale,
            "input_scale": self.input_scale,
            "start": self.start,
            "limit": self.limit,
            "chars_per_token": self.chars_per_token,
            "block_tokens": self.block_tokens,
        }


@dataclass(frozen=True)
class TraceRecord:
    """One request of the trace: its file line, its time (ms from the window's first record,
    unscaled), its lengths and its prefix blocks."""

    line: int
    time_ms: float
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Trace:
    """The window of records replayed, and the file's identity."""

    records: tuple[TraceRecord, ...]
    sha256: str
    size: int

    @property
    def span_ms(self) -> float:
        return self.records[-1].time_ms if self.records else 0.0


def parse(raw: Any, ladder_path: Path, where: Path | str) -> TraceSettings | None:
    """The `[trace]` table as settings (None without one); the file is read by `load`."""
    if raw is None:
        return None
    check_table(raw, FIELDS, "trace.", where)
    fmt = raw["format"]
    if fmt not in FORMATS:
        raise LadderError(
            f"{where}: field trace.format is {fmt!r}; use one of {', '.join(FORMATS)}."
        )
    for name, (low, high) in SCALES.items():
        v = raw.get(name, 1.0)
        if not low <= v <= high:
            raise LadderError(
                f"{where}: field trace.{name} is {v!r}; use a factor from {low:g} to {high:g}."
            )
    checks = (
        ("start", raw.get("start", 1), 1, MAX_TRACE_BYTES, "the first record replayed, from 1"),
        ("limit", raw.get("limit", 1), 1, MAX_RECORDS, "records replayed"),
        ("chars_per_token", raw.get("chars_per_token", 4.0), *CHARS_PER_TOKEN, "characters"),
        ("block_tokens", raw.get("block_tokens", 512), *BLOCK_TOKENS, "tokens per hash id"),
    )
    for name, v, low, high, what in checks:
        if not low <= v <= high:
            raise LadderError(
                f"{where}: field trace.{name} is {v!r}; use {low:g} to {high:,} ({what})."
            )
    given = raw["path"]
    return TraceSettings(
        path=(ladder_path.parent / given).resolve(),
        given=given,
        format=fmt,
        time_scale=float(raw.get("time_scale", 1.0)),
        input_scale=float(raw.get("input_scale", 1.0)),
        start=int(raw.get("start", 1)),
        limit=raw.get("limit"),
        chars_per_token=float(raw.get("chars_per_token", 4.0)),
        block_tokens=int(raw.get("block_tokens", 512)),
    )


def load(t: TraceSettings, where: Path | str) -> Trace:
    """The window of records, every one checked; one `LadderError` naming file, line and
    field for the first that is not right."""
    try:
        st = t.path.stat()
    except OSError as exc:
        raise LadderError(
            f"{where}: trace.path {t.given!r} ({t.path}) cannot be read "
            f"({exc.strerror or exc}); point trace.path at the trace file, relative to the ladder."
        ) from None
    return _load(t, where, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _load(t: TraceSettings, where: Path | str, size: int, mtime_ns: int) -> Trace:
    """`load` once per file state: lint, preflight and the run each validate the ladder."""
    name = f"{where}: trace {t.given}"
    if not t.path.is_file():
        raise LadderError(f"{name} is not a file; point trace.path at the trace file.")
    if size > MAX_TRACE_BYTES:
        raise LadderError(
            f"{name} is {size:,} bytes, over the {MAX_TRACE_BYTES:,} a trace may be; cut an "
            "excerpt (e.g. head -n 20000) and replay that."
        )
    data = t.path.read_bytes()[:MAX_TRACE_BYTES]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise LadderError(f"{name}:{line}: not UTF-8 text; save the trace as UTF-8.") from None
    rows = _mooncake(text, name) if t.format == "mooncake" else _azure(text, name)
    records = _window(rows, t, name)
    return Trace(records, hashlib.sha256(data).hexdigest(), len(data))


def _lines(text: str, name: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of every line that is not blank, each bounded in bytes."""
    for number, line in enumerate(text.splitlines(), start=1):
        if len(line) > MAX_LINE_BYTES:
            raise LadderError(
                f"{name}:{number}: the line is {len(line):,} characters, over the "
                f"{MAX_LINE_BYTES:,} a record may be; cut the trace before it."
            )
        if line.strip():
            yield number, line


Row = tuple[int, Mapping[str, Any]]  # (line, its fields), parsed but not yet checked


def _mooncake(text: str, name: str) -> Iterator[Row]:
    for number, line in _lines(text, name):
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LadderError(
                f"{name}:{number}: not JSON ({exc.msg} at column {exc.colno}); each line of a "
                "Mooncake trace is one object."
            ) from None
        except (ValueError, RecursionError):  # a number of 4,300+ digits, nesting too deep
            raise LadderError(
                f"{name}:{number}: JSON that cannot be read (a number too long or nesting too "
                "deep); each line of a Mooncake trace is one flat object."
            ) from None
        if not isinstance(doc, dict):
            raise LadderError(f"{name}:{number}: not a JSON object; each line is one record.")
        missing = [f for f in MOONCAKE_FIELDS if f not in doc]
        if missing:
            raise LadderError(
                f"{name}:{number}: missing field {missing[0]!r}; a Mooncake record has "
                f"{', '.join(MOONCAKE_FIELDS)} (and hash_ids)."
            )
        yield number, doc


def _azure(text: str, name: str) -> Iterator[Row]:
    numbered = _lines(text, name)
    first = next(numbered, None)
    if first is None:
        raise LadderError(f"{name}: the file is empty; give a CSV with {','.join(AZURE_COLUMNS)}.")
    header = [h.strip() for h in next(csv.reader([first[1]]))]
    missing = [c for c in AZURE_COLUMNS if c not in header]
    if missing:
        raise LadderError(
            f"{name}:{first[0]}: missing column {missing[0]!r} in the header (of "
            f"{len(header)} column(s)); an Azure trace's header is {','.join(AZURE_COLUMNS)}."
        )
    at = {c: header.index(c) for c in AZURE_COLUMNS}
    for number, line in numbered:
        cells = next(csv.reader([line]))
        short = [c for c in AZURE_COLUMNS if at[c] >= len(cells)]
        if short:
            raise LadderError(
                f"{name}:{number}: field {short[0]!r} is missing (the row has {len(cells)} of "
                f"{len(header)} columns); give every column."
            )
        yield number, {c: cells[at[c]].strip() for c in AZURE_COLUMNS}


def _window(rows: Iterator[Row], t: TraceSettings, name: str) -> tuple[TraceRecord, ...]:
    """The records from `start`, at most `limit` (and MAX_RECORDS), each checked; times from
    the window's first record, never going back by more than the tolerance."""
    out: list[TraceRecord] = []
    seen = 0
    origin: float | None = None
    last = 0.0
    for number, row in rows:
        seen += 1
        if seen < t.start:
            continue
        if len(out) == (t.limit or MAX_RECORDS):
            if t.limit is None:
                raise LadderError(
                    f"{name}:{number}: the window from record {t.start} holds more than "
                    f"{MAX_RECORDS:,} records; set trace.limit (at most {MAX_RECORDS:,})."
                )
            break
        record = _record(number, row, t.format, name)
        if origin is None:
            origin = record.time_ms
        at = record.time_ms - origin
        if at < last - TIME_TOLERANCE_MS:
            field = "timestamp" if t.format == "mooncake" else "TIMESTAMP"
            raise LadderError(
                f"{name}:{number}: field {field!r} goes back {last - at:,.3f} ms from the "
                f"record before it (more than {TIME_TOLERANCE_MS:g} ms); sort the trace by time."
            )
        last = max(at, last)
        out.append(
            TraceRecord(number, last, record.input_tokens, record.output_tokens, record.hash_ids)
        )
    if not out:
        raise LadderError(
            f"{name}: the trace has {seen} record(s), none from trace.start = {t.start}; lower "
            "trace.start or give a longer trace."
        )
    return tuple(out)


def _record(number: int, row: Mapping[str, Any], fmt: str, name: str) -> TraceRecord:
    if fmt == "mooncake":
        stamp, n_in, n_out = (row[f] for f in MOONCAKE_FIELDS)
        names = MOONCAKE_FIELDS
        time_ms = _number(stamp, number, names[0], name)
        if time_ms < 0:
            raise LadderError(
                f"{name}:{number}: field 'timestamp' is below 0; a time is 0 or more ms from "
                "the trace's start."
            )
        hashes = _hash_ids(row.get("hash_ids", []), number, name)
    else:
        stamp, n_in, n_out = (row[c] for c in AZURE_COLUMNS)
        names = AZURE_COLUMNS
        time_ms = _stamp(stamp, number, name)
        hashes = ()
    return TraceRecord(
        number,
        time_ms,
        _length(n_in, number, names[1], name),
        _length(n_out, number, names[2], name),
        hashes,
    )


def _what(value: Any) -> str:
    """What a value is, never what it holds: a trace path may point at any readable file, and
    its bytes must not reach an error a CI log keeps."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else "true or false"
    if isinstance(value, int | float):
        return "a number" if math.isfinite(value) else "not a finite number"
    if isinstance(value, str):
        return f"text of {len(value):,} character(s)" if value else "empty text"
    if isinstance(value, list):
        return f"a list of {len(value):,}"
    return "an object" if isinstance(value, dict) else "another value"


def _number(value: Any, number: int, field: str, name: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value):
        raise LadderError(
            f"{name}:{number}: field {field!r} is {_what(value)}, not a number of ms; write a "
            "number."
        )
    return float(value)


def _length(value: Any, number: int, field: str, name: str) -> int:
    """A token count: a whole number from 1 to MAX_TOKENS (a CSV cell's text, or JSON's)."""
    n: Any = value
    if isinstance(value, str):
        try:
            n = int(value)
        except ValueError:
            n = None
    elif isinstance(value, float) and value.is_integer():
        n = int(value)
    if not isinstance(n, int) or isinstance(n, bool):
        raise LadderError(
            f"{name}:{number}: field {field!r} is {_what(value)}, not a whole number of "
            "tokens; write one."
        )
    if not 1 <= n <= MAX_TOKENS:
        raise LadderError(
            f"{name}:{number}: field {field!r} is outside 1 to {MAX_TOKENS:,}, the tokens a "
            "length may be; write one within them."
        )
    return n


def _hash_ids(value: Any, number: int, name: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(h, int) and not isinstance(h, bool) and h >= 0 for h in value
    ):
        raise LadderError(
            f"{name}:{number}: field 'hash_ids' is {_what(value)}, not a list of ids; give a list of block ids, "
            "whole numbers from 0."
        )
    if len(value) > MAX_HASH_IDS:
        raise LadderError(
            f"{name}:{number}: field 'hash_ids' has {len(value):,} ids, over the "
            f"{MAX_HASH_IDS:,} of the longest input; cut the list."
        )
    return tuple(value)


def _stamp(value: Any, number: int, name: str) -> float:
    """An Azure TIMESTAMP (`2023-11-16 18:15:46.6805900`) as ms on the trace's own clock
    (only differences are used)."""
    m = _STAMP.fullmatch(str(value))
    try:
        if m is None:
            raise ValueError(value)
        base = datetime.fromisoformat(f"{m[1]} {m[2]}")
    except ValueError:
        raise LadderError(
            f"{name}:{number}: field 'TIMESTAMP' is {_what(value)}, not a time such as "
            "2023-11-16 18:15:46.6805900; write one."
        ) from None
    fraction = float(f"0.{m[3]}") if m[3] else 0.0
    return ((base - EPOCH).total_seconds() + fraction) * 1000.0


def check(ladder: Ladder, t: TraceSettings, level_timeout_s: float, where: Path | str) -> Trace:
    """The rules a trace replay adds to the load ladder's: no levels, search or block size of
    its own; every record's input (scaled) and output within the context of a launched
    server; the replay within the level's timeout; its prompt text within MAX_FILL_CHARS."""
    f = ladder.kind_fields
    given = [k for k in ("concurrency", "rate", "capacity", "requests", "duration_s") if k in f]
    if given or (f.get("command_line") or {}):
        said = " and ".join(given) or "--load-requests / --load-duration"
        raise LadderError(
            f"{where}: a [trace] ladder replays the trace's records at its times as one block; "
            f"remove {said} (or remove [trace])."
        )
    trace = load(t, where)
    name = f"{where}: trace {t.given}"
    launched = all(not tr.attached for tr in ladder.treatments)
    for r in trace.records:
        n_in = max(round(r.input_tokens * t.input_scale), 1)
        n_out = min(r.output_tokens, ladder.max_tokens)
        if launched and n_in + n_out > ladder.ctx_size:
            field = "input_length" if t.format == "mooncake" else "ContextTokens"
            raise LadderError(
                f"{name}:{r.line}: field {field!r} is {r.input_tokens:,} tokens (x input_scale "
                f"{t.input_scale:g} = {n_in:,}), plus {n_out} out, past ctx_size "
                f"{ladder.ctx_size}; choose a window without it (trace.start, trace.limit), "
                "lower trace.input_scale or raise ctx_size."
            )
    span_s = trace.span_ms * t.time_scale / 1000.0
    if span_s >= level_timeout_s:
        raise LadderError(
            f"{name}: its records span {span_s:,.1f} s at time_scale {t.time_scale:g}, past "
            f"level_timeout_s = {level_timeout_s:g}; lower trace.time_scale or trace.limit, "
            "or raise level_timeout_s."
        )
    chars = sum(r.input_tokens for r in trace.records) * t.input_scale * t.chars_per_token
    if chars > MAX_FILL_CHARS:
        raise LadderError(
            f"{name}: its {len(trace.records):,} records ask for {chars:,.0f} characters of "
            f"prompt text, over the {MAX_FILL_CHARS:,} a replay builds before it starts; lower "
            "trace.limit or trace.input_scale."
        )
    return trace
