"""A record file read line by line, every kind alike: each line parsed, the fields the analysis
reads checked against their types, and each line that cannot be used named by file and line.

One rule for every reader, so a wrong-typed value (a string where a number goes) is set aside
as an unreadable line with its field named, never met later as a crash or a silent NaN.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .fileio import MAX_RECORD_FILE_BYTES, MAX_RECORD_LINE_BYTES, BadFile, BadJson, read_bounded
from .fileio import loads_bounded as _loads

# What a field may hold (None, or the field absent, is always allowed unless it is required).
NAME = "a name"  # a non-empty string: a value naming a cell, a session, a level
STR = "a string"
INT = "an integer"  # a JSON integer (an integral float, e.g. 3.0, too)
NUMBER = "a number"
BOOL = "true or false"
LIST = "a list"
NUMBERS = "a list of numbers"
OBJECT = "an object"

# Bounded types: a finite value no run writes (1e308 ms, a negative latency, more tokens than
# any ladder's max_tokens) makes its line unreadable, named by file and line as a wrong type
# does, never analysed. The bounds, in one place (docs/run-directory.md states them too):
MAX_SECONDS = 7 * 86400  # any span or latency: a week, past every timeout a ladder sets (a day)
MAX_MS = MAX_SECONDS * 1000
MAX_TOKENS = 1 << 20  # one request's tokens: the ladder's max_tokens cap (MAX_TOKENS_CAP)
MAX_CONTEXT_TOKENS = 1 << 24  # one prompt's tokens: the ladder's ctx_size cap (MAX_CTX_SIZE)
MAX_COUNT = 10**9  # any other count or level: cycles, ordinals, requests, characters, turns
MAX_RATE = 10**7  # per second, tokens or requests: past any server by orders of magnitude
SECONDS = f"seconds (a number from 0 to {MAX_SECONDS})"
MS = f"milliseconds (a number from 0 to {MAX_MS})"
LAG_MS = f"milliseconds (a number from -{MAX_MS} to {MAX_MS})"
MS_LIST = f"a list of milliseconds (each from 0 to {MAX_MS})"
TOKENS = f"a token count (an integer from 0 to {MAX_TOKENS})"
CONTEXT_TOKENS = f"a token count (an integer from 0 to {MAX_CONTEXT_TOKENS})"
COUNT = f"a count (an integer from 0 to {MAX_COUNT})"
AMOUNT = f"a number from 0 to {MAX_COUNT}"
RATE = f"a rate (a number from 0 to {MAX_RATE})"
FRACTION = "a fraction (a number from 0 to 1)"
# bounded type -> (lowest, highest, whether it is an integer)
RANGES: dict[str, tuple[float, float, bool]] = {
    SECONDS: (0, MAX_SECONDS, False),
    MS: (0, MAX_MS, False),
    LAG_MS: (-MAX_MS, MAX_MS, False),
    TOKENS: (0, MAX_TOKENS, True),
    CONTEXT_TOKENS: (0, MAX_CONTEXT_TOKENS, True),
    COUNT: (0, MAX_COUNT, True),
    AMOUNT: (0, MAX_COUNT, False),
    RATE: (0, MAX_RATE, False),
    FRACTION: (0, 1, False),
}

NOT_JSON = "not JSON"
TORN = "not JSON: the file's last line, cut short (a run killed mid-write)"
NOT_OBJECT = "not a JSON object"
# A line (or a whole file) no run writes, set aside unparsed: `text_lines` marks it with
# UNREAD (a NUL, which no JSON line holds) and its clause, `read_lines` names it.
UNREAD = "\x00"
NO_RECORD = "no record the tool writes"
# The fields that say which run wrote a record, as plan.json holds them: a line whose value
# differs was written by another run (copied or appended in) and is never pooled with this one's.
IDENTITY_FIELDS = ("run_id", "preregistration_sha256")
SHOWN = 40  # characters of a wrong value the reason shows

# field (dotted for a nested one: "occupancy.drafted") -> its type, or the values it may take
Kind = str | tuple[str, ...]
Types = Mapping[str, Kind]
TypesFor = Callable[[Mapping[str, Any]], Types]  # a record's types, chosen by its content


@dataclass(frozen=True)
class Unreadable:
    """A line set aside: where it is and why it could not be used."""

    file: str  # as the run directory names it, e.g. records/01_a_c1.jsonl
    line: int  # 1-based
    why: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.why}"

    @property
    def unparsed(self) -> bool:
        """The line is no JSON object at all (torn, garbage), not a record with a bad field."""
        return self.why in (NOT_JSON, TORN, NOT_OBJECT) or self.why.startswith(NO_RECORD)


@dataclass(frozen=True)
class Line:
    """A line that was read: its record and where it came from."""

    file: str
    line: int
    record: dict[str, Any]


def _is(value: Any, kind: Kind) -> bool:
    if isinstance(kind, tuple):
        return isinstance(value, str) and value in kind
    if kind in RANGES:
        low, high, integral = RANGES[kind]
        return _is(value, INT if integral else NUMBER) and low <= value <= high
    if kind == MS_LIST:
        return isinstance(value, list) and all(_is(v, MS) for v in value)
    if kind == NAME:
        return isinstance(value, str) and bool(value.strip())
    if kind == STR:
        return isinstance(value, str)
    if kind == BOOL:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False  # JSON's true is no number, list or object here
    if kind == INT:
        return isinstance(value, int) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    if kind == NUMBER:
        return isinstance(value, int | float)
    if kind == LIST:
        return isinstance(value, list)
    if kind == NUMBERS:
        return isinstance(value, list) and all(_is(v, NUMBER) for v in value)
    if kind == OBJECT:
        return isinstance(value, dict)
    raise ValueError(f"unknown field type {kind!r}")


def _get(record: Mapping[str, Any], dotted: str) -> Any:
    value: Any = record
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None  # the enclosing object is absent (or wrong: its own type says so)
        value = value.get(part)
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else f"{text[: SHOWN - 3]}..."


def check(record: Mapping[str, Any], types: Types, required: Sequence[str] = ()) -> str | None:
    """Why the record cannot be used (None: it can): a required field missing, or a field
    holding what its type does not allow."""
    missing = [name for name in required if _get(record, name) is None]
    if missing:
        return f"missing or malformed field: {', '.join(missing)}"
    for name, kind in types.items():
        value = _get(record, name)
        if value is not None and not _is(value, kind):
            wanted = kind if isinstance(kind, str) else f"one of {', '.join(map(repr, kind))}"
            return f"malformed field: {name} is {_shown(value)}, not {wanted}"
    return None


def foreign(
    record: Mapping[str, Any], identity: Mapping[str, str], what: str = "record line"
) -> str | None:
    """Why the record is another run's (None: it is this run's): an identity field whose value
    differs from the run's. A record without the field is not judged: it predates the field or
    was written by hand, and nothing in it says which run it belongs to."""
    for name, mine in identity.items():
        value = record.get(name)
        if value is not None and value != mine:
            return f"another run's {what}: its {name} is {_shown(value)}, this run's is {mine!r}"
    return None


def read_lines(
    lines: Sequence[str],
    file: str,
    types: TypesFor | None = None,
    required: Sequence[str] = (),
    identity: Mapping[str, str] | None = None,
) -> tuple[list[Line], list[Unreadable]]:
    """Each non-blank line as a record, or as an unreadable line with its reason; with
    `identity` (the run's `IDENTITY_FIELDS` from plan.json) another run's line is set aside."""
    read: list[Line] = []
    bad: list[Unreadable] = []
    last = max((i for i, text in enumerate(lines) if text.strip()), default=-1)
    for i, text in enumerate(lines):
        if not text.strip():
            continue
        if text.startswith(UNREAD):  # too long, or the file itself unreadable (`text_lines`)
            bad.append(Unreadable(file, i + 1, f"{NO_RECORD}: {text[1:]}"))
            continue
        try:
            obj = _loads(text)
        except BadJson:
            bad.append(Unreadable(file, i + 1, TORN if i == last else NOT_JSON))
            continue
        except BadFile as exc:  # NaN, a float past range, nested past any record's depth
            bad.append(Unreadable(file, i + 1, f"{NO_RECORD}: it {exc}"))
            continue
        if not isinstance(obj, dict):
            bad.append(Unreadable(file, i + 1, NOT_OBJECT))
            continue
        why = foreign(obj, identity) if identity else None
        if why is None and types is not None:
            why = check(obj, types(obj), required)
        if why is not None:
            bad.append(Unreadable(file, i + 1, why))
            continue
        read.append(Line(file, i + 1, obj))
    return read, bad


def first_has(head: bytes, required: Sequence[str]) -> bool:
    """Whether a file's first bytes begin with a record holding `required` (a first line
    longer than `head` counts when it starts as a JSON object): a file of such records."""
    first = head.split(b"\n", 1)[0]
    try:
        record = json.loads(first.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return b"\n" not in head and head.startswith(b"{")
    return isinstance(record, dict) and all(name in record for name in required)


def text_lines(path: Path) -> list[str]:
    """A record file's lines, read bounded (`fileio.MAX_RECORD_FILE_BYTES`): a file that cannot
    be read (a FIFO, a device, too big) is one line, and a line past MAX_RECORD_LINE_BYTES is
    one, each marked UNREAD with its clause, for `read_lines` to name: never a hang, a crash
    or a line dropped without a word."""
    try:
        data = read_bounded(path, MAX_RECORD_FILE_BYTES)
    except BadFile as exc:
        return [f"{UNREAD}the file {exc}"]
    # A run killed mid-write can leave a torn multi-byte character: that line then fails to
    # parse and is named, rather than failing the whole file.
    return [
        f"{UNREAD}{len(line)} bytes long, over the {MAX_RECORD_LINE_BYTES} a record line takes"
        if len(line) > MAX_RECORD_LINE_BYTES
        else line.decode("utf-8", errors="replace")
        for line in data.splitlines()
    ]


def read_file(
    path: Path,
    file: str,
    types: TypesFor | None = None,
    required: Sequence[str] = (),
    identity: Mapping[str, str] | None = None,
) -> tuple[list[Line], list[Unreadable]]:
    """`read_lines` of one file; `file` is how the reasons name it (relative to the run)."""
    return read_lines(text_lines(path), file, types, required, identity)


def limitation(where: Sequence[str], title: str = "Unreadable record lines", most: int = 10) -> str:
    """The reports' Limitations bullet (without its dash) naming the lines set aside, each as
    `file:line: why` (the first `most`, then a count)."""
    shown = "; ".join(where[:most])
    more = f"; and {len(where) - most} more" if len(where) > most else ""
    return (
        f"**{title}:** {len(where)} line(s) could not be read and were left "
        f"out; the rest were analysed: {shown}{more}. Restore the file from a copy to analyse "
        "them (a line cut short at a file's end is a write a killed run did not finish)."
    )


def summary(bad: Sequence[Unreadable | str], most: int = 10) -> str:
    """`3 line(s): records/a.jsonl:4: not JSON; ...` (the first `most`, then a count)."""
    shown = "; ".join(str(b) for b in bad[:most])
    more = f"; and {len(bad) - most} more" if len(bad) > most else ""
    return f"{len(bad)} line(s): {shown}{more}"


def terminal(where: Sequence[str]) -> str:
    """The terminal's one line beside a headline when lines were left out."""
    return (
        f"{len(where)} record line(s) unreadable and left out (first: {where[0]}); report.md's "
        "Limitations names each"
    )
