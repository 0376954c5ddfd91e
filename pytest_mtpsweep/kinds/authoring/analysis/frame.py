"""Cell records -> one row per cell (its latest record), with the flags the analysis uses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ....kindapi.records import recordlines as rl
from ..records import (
    COMPLETION_TOKENS,
    FIRST_ATTEMPT_GREEN,
    GREEN_OUTCOMES,
    INFORMATIVE_OUTCOMES,
    OUTCOME,
    PROMPT_TOKENS,
)

COLUMNS: tuple[str, ...] = (
    "subject",
    "model_id",
    "cohort",
    "task",
    "repeat",
    "cell",
    OUTCOME,
    "green_turn",
    "turns_used",
    PROMPT_TOKENS,
    COMPLETION_TOKENS,
    "tokens_unknown_turns",
    "api_status",
    "api_error",
    "checker_error",
    "reason",
)


# The fields the analysis reads, with their types (recordlines' one rule): a record holding
# something else is named as unreadable by file and line, never coerced to a NaN.
_CELL_NAMES = {k: rl.NAME for k in ("subject", "cohort", "task", "cell")}
CELL_TYPES: rl.Types = _CELL_NAMES | {  # numbers bounded (recordlines' RANGES)
    "model_id": rl.STR,
    "repeat": rl.COUNT,
    OUTCOME: rl.STR,
    "green_turn": rl.COUNT,
    "turns_used": rl.COUNT,
    PROMPT_TOKENS: rl.COUNT,
    COMPLETION_TOKENS: rl.COUNT,
    "tokens_unknown_turns": rl.COUNT,
    "api_status": rl.COUNT,
    "api_error": rl.STR,
    "checker_error": rl.STR,
    "reason": rl.STR,
    "valid": rl.BOOL,
    "attempt": rl.COUNT,
    "verdict_forgeable": rl.BOOL,
}
TURN_TYPES: rl.Types = _CELL_NAMES | {
    "repeat": rl.COUNT,
    "turn": rl.COUNT,
    "attempt": rl.COUNT,
    "verdict": rl.STR,
    "artefact_sha256": rl.STR,
    "error_first_line": rl.STR,
    "feedback_chars": rl.COUNT,
}
REQUIRED = ("cell",)  # a record without its cell belongs to no row


def cell_frame(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """The latest record of each cell; `informative`, `green` and `first` flags added."""
    latest: dict[str, Mapping[str, Any]] = {}
    for rec in records:
        if isinstance(rec.get("cell"), str):
            latest[rec["cell"]] = rec
    df = pd.DataFrame(
        [{k: r.get(k) for k in COLUMNS} for r in latest.values()], columns=list(COLUMNS)
    )
    outcome = df[OUTCOME].astype(object)
    df["informative"] = outcome.isin(INFORMATIVE_OUTCOMES)
    df["green"] = outcome.isin(GREEN_OUTCOMES).astype(float)
    df["first"] = (outcome == FIRST_ATTEMPT_GREEN).astype(float)
    for col in (PROMPT_TOKENS, COMPLETION_TOKENS, "turns_used", "repeat"):
        df[col] = pd.to_numeric(df[col], errors="coerce")
    # a total over a turn without usage is unknown: never read as 0 (older records lack the field)
    unknown = pd.to_numeric(df["tokens_unknown_turns"], errors="coerce").fillna(0) > 0
    df["tokens_known"] = ~unknown
    df.loc[unknown, [PROMPT_TOKENS, COMPLETION_TOKENS]] = float("nan")
    return df


TURN_COLUMNS: tuple[str, ...] = (
    "subject",
    "cohort",
    "task",
    "repeat",
    "cell",
    "turn",
    "attempt",
    "verdict",
    "artefact_sha256",
    "error_first_line",
    "feedback_chars",
)


def turn_frame(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Turn records of each cell's latest attempt (a resumed cell's earlier turns left out)."""
    rows = [{k: r.get(k) for k in TURN_COLUMNS} for r in records if isinstance(r.get("cell"), str)]
    df = pd.DataFrame(rows, columns=list(TURN_COLUMNS))
    if df.empty:
        return df
    df["attempt"] = pd.to_numeric(df["attempt"], errors="coerce").fillna(0)
    latest = df.groupby("cell")["attempt"].transform("max")
    return df[df["attempt"] == latest].reset_index(drop=True)
