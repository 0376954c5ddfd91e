"""Raw JSONL lines -> one tidy records DataFrame plus the lines and records set aside."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ....kindapi.records import recordlines as rl
from ....kindapi.records import schema
from ..records import MECHANISM_FIELDS
from .runvalues import ENDPOINT_COLUMNS, RecordFile

REQUIRED_FIELDS: tuple[str, ...] = ("treatment", "prompt_id", "subset", "cycle", "valid")
# Fields that name a cell: a record whose value is not a non-empty string would make a row of
# its own (a `"treatment": 7` would add a phantom treatment), so it is set aside instead.
NAME_FIELDS: tuple[str, ...] = ("treatment", "prompt_id", "subset")
# Every field the frame reads, with its type (recordlines' one rule): a record holding
# something else is set aside as unreadable, by file and line, never coerced to a NaN.
RECORD_TYPES: dict[str, str] = {
    **dict.fromkeys(NAME_FIELDS, rl.NAME),
    "valid": rl.BOOL,
    # bounded (recordlines' RANGES): a finite value no run writes is set aside too
    **dict.fromkeys(("cycle", "ordinal", "position", "repeat", "content_chars"), rl.COUNT),
    **dict.fromkeys(
        (
            "completion_tokens",
            "draft_n",
            "draft_n_accepted",
            "predicted_n",
            MECHANISM_FIELDS["steps"],
        ),
        rl.TOKENS,
    ),
    ENDPOINT_COLUMNS["primary"]: rl.RATE,
    ENDPOINT_COLUMNS["interval"]: rl.RATE,
    "predicted_ms": rl.MS,
    **dict.fromkeys(
        (
            "session",
            "reason",
            "interval_basis",
            "finish_reason",
            "degenerate",
            "content_sha256",
            "device",
            "worker",
            "mechanism_invalid",
        ),
        rl.STR,
    ),
}
RECORD_COLUMNS: tuple[str, ...] = (
    "run_id",
    "session",
    "treatment",
    "cycle",
    "ordinal",
    "position",
    "prompt_id",
    "subset",
    "repeat",
    "valid",
    "reason",
    "rate_primary",
    "rate_interval",
    "interval_basis",
    "finish_reason",
    "completion_tokens",
    "degenerate",
    "content_sha256",
    "content_chars",
    "draft_n",
    "draft_n_accepted",
    # the mechanism (issue 49): the server's decode count and clock, the verify steps of a
    # drafting record, and why its counts are no reading (None: they are, or none drafted)
    "predicted_n",
    "predicted_ms",
    "steps",
    "mechanism_invalid",
    "group_key",
    "device",  # where a distributed run measured it: pairs never cross devices
    "worker",
    *(f"keyed_{name}" for name in schema.KEYED_FIELDS),
)
# `where`: for a line set aside as it was read, its file:line and why (recordlines.Unreadable)
EXCLUSION_COLUMNS: tuple[str, ...] = ("run_id", "session", "reason", "where")
UNPARSEABLE = "unparseable line"


def canonical(value: Any) -> str:
    """A comparison form of a keyed value, so 0 and 0.0 (or 65536 and 65536.0) match."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return json.dumps(int(value))
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, sort_keys=True, default=str)


def _rate(value: Any) -> float:
    # A rate that is absent, non-numeric or non-positive has no logarithm, so it is missing.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    rate = float(value)
    return rate if math.isfinite(rate) and rate > 0 else math.nan


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value) if math.isfinite(value) else math.nan


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _keyed_value(
    name: str, record: Mapping[str, Any], session: Mapping[str, Any], plan_keyed: Mapping[str, Any]
) -> Any:
    # Records are the ground truth; older records may lack a field the session or plan kept.
    for source in (record, session, plan_keyed):
        if source.get(name) is not None:
            return source[name]
    return None


def parse_records(
    files: Sequence[RecordFile],
    *,
    session_facts: Mapping[tuple[str, str], Mapping[str, Any]],
    plan_keyed: Mapping[str, Mapping[str, Any]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Parse every line; return (records, exclusions) where each exclusion is one line set aside.

    `session_facts` maps (run_id, session) to the session JSON and `plan_keyed` maps run_id to
    plan.json's keyed fields (with the ladder); both fill keyed fields a record lacks.
    """
    rows: list[dict[str, Any]] = []
    excluded: list[dict[str, Any]] = []
    memo: dict[Any, dict[str, str]] = {}  # a run's records share a handful of keyed tuples
    for file in files:
        read, bad = rl.read_lines(
            file.lines, schema.records_file(file.session), _types, REQUIRED_FIELDS, file.identity
        )
        for u in bad:
            why = UNPARSEABLE if u.unparsed else u.why
            excluded.append(
                {"run_id": file.run_id, "session": file.session, "reason": why, "where": str(u)}
            )
        for line in read:
            facts = session_facts.get(
                (file.run_id, str(line.record.get("session") or file.session)), {}
            )
            rows.append(_row(file, line.record, facts, plan_keyed.get(file.run_id, {}), memo))
    records = pd.DataFrame(rows, columns=list(RECORD_COLUMNS))
    records = records.astype(
        {
            "cycle": "int64",
            "ordinal": "int64",
            "position": "int64",
            "repeat": "int64",
            "valid": "bool",
            "rate_primary": "float64",
            "rate_interval": "float64",
            "completion_tokens": "int64",
            "content_chars": "Int64",
            "draft_n": "Int64",
            "draft_n_accepted": "Int64",
            "predicted_n": "Int64",
            "predicted_ms": "float64",
            "steps": "Int64",
        }
    )
    return records, pd.DataFrame(excluded, columns=list(EXCLUSION_COLUMNS))


def _row(
    file: RecordFile,
    obj: Mapping[str, Any],
    facts: Mapping[str, Any],
    planned: Mapping[str, Any],
    memo: dict[Any, dict[str, str]],
) -> dict[str, Any]:
    """One readable record as its frame row; keyed fields it lacks come from its session's
    facts, then from plan.json's keyed fields."""
    session = str(obj.get("session") or file.session)
    cycle = _int(obj.get("cycle"))
    assert cycle is not None
    keyed = tuple(_keyed_value(name, obj, facts, planned) for name in schema.KEYED_FIELDS)
    ordinal = _int(obj.get("ordinal"))
    # 0-based place within the server session; older records lack it (-1: unknown).
    position = _int(obj.get("position"))
    repeat = _int(obj.get("repeat"))
    tokens = _int(obj.get("completion_tokens"))
    reason = obj.get("reason")
    return {
        "run_id": file.run_id,
        "session": session,
        "treatment": str(obj["treatment"]),
        "cycle": cycle,
        "ordinal": ordinal if ordinal is not None else -1,
        "position": position if position is not None and position >= 0 else -1,
        "prompt_id": str(obj["prompt_id"]),
        "subset": str(obj["subset"]),
        "repeat": repeat if repeat is not None else 1,
        "valid": obj["valid"] is True,
        "reason": str(reason) if reason is not None else None,
        "rate_primary": _rate(obj.get(ENDPOINT_COLUMNS["primary"])),
        "rate_interval": _rate(obj.get(ENDPOINT_COLUMNS["interval"])),
        "interval_basis": obj.get("interval_basis"),
        "finish_reason": obj.get("finish_reason"),
        "completion_tokens": tokens if tokens is not None else -1,
        # why the text was not a real answer ("" when it was, or not judged)
        "degenerate": str(obj.get("degenerate") or ""),
        "content_sha256": _str_or_none(obj.get("content_sha256")),
        "content_chars": _int(obj.get("content_chars")),
        "draft_n": _int(obj.get("draft_n")),
        "draft_n_accepted": _int(obj.get("draft_n_accepted")),
        "predicted_n": _int(obj.get("predicted_n")),
        "predicted_ms": _number(obj.get("predicted_ms")),
        "steps": _int(obj.get(MECHANISM_FIELDS["steps"])),
        "mechanism_invalid": _str_or_none(obj.get("mechanism_invalid")),
        # absent in a run without -n: one device, as before
        "device": str(obj.get("device") or ""),
        "worker": str(obj.get("worker") or ""),
        **_keyed_columns(keyed, memo),
    }


def _keyed_columns(keyed: tuple[Any, ...], memo: dict[Any, dict[str, str]]) -> dict[str, str]:
    """group_key and the keyed_* display columns of one record's keyed values (memoised)."""
    try:
        return memo[keyed]
    except TypeError:  # an unhashable value (a list in a record): compute it every time
        return _keyed_uncached(keyed)
    except KeyError:
        memo[keyed] = _keyed_uncached(keyed)
        return memo[keyed]


def _keyed_uncached(keyed: tuple[Any, ...]) -> dict[str, str]:
    return {
        "group_key": json.dumps([canonical(v) for v in keyed]),
        **{
            f"keyed_{name}": _display(v) for name, v in zip(schema.KEYED_FIELDS, keyed, strict=True)
        },
    }


def _types(record: Mapping[str, Any]) -> Mapping[str, str]:
    return RECORD_TYPES


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _display(value: Any) -> str:
    if value is None:
        return "(missing)"
    return value if isinstance(value, str) else canonical(value)
