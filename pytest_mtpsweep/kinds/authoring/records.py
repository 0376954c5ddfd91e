"""The authoring kind's record fields, outcomes, verdicts and files.

A case is one cell: subject x cohort x task x repeat, a conversation to its outcome. The
cells and turns live outside records/ on purpose: quarantine moves a session's records/ file,
but a cell that reached its outcome stays valid data whatever happens to its session later,
and --resume re-runs only the cells without one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CELLS_DIR = "cells"
TURNS_DIR = "turns"
CONVERSATIONS_DIR = "conversations"
SCORES_CSV = "scores.csv"


def cells_file(session: str) -> str:
    """One JSON line per cell (its outcome), fsync'd as made."""
    return f"{CELLS_DIR}/{session}.jsonl"


def turns_file(session: str) -> str:
    """One JSON line per turn (request, reply, check), fsync'd as made."""
    return f"{TURNS_DIR}/{session}.jsonl"


def conversation_file(session: str, cell: str, attempt: int) -> str:
    """The full message list of one cell's conversation, for inspection."""
    suffix = f".a{attempt}" if attempt else ""
    return f"{CONVERSATIONS_DIR}/{session}/{cell}{suffix}.json"


# Cell outcomes. A cell with one of FINAL_OUTCOMES is never run again (not even on --resume);
# a budget_stopped cell, or one without a cell record, runs again on --resume.
FIRST_ATTEMPT_GREEN = "first_attempt_green"
GREEN_AFTER_K = "green_after_k"
EXHAUSTED = "exhausted"
API_FAILURE = "api_failure"
CHECKER_ERROR = "checker_error"
BUDGET_STOPPED = "budget_stopped"
OUTCOMES = (
    FIRST_ATTEMPT_GREEN,
    GREEN_AFTER_K,
    EXHAUSTED,
    API_FAILURE,
    CHECKER_ERROR,
    BUDGET_STOPPED,
)
FINAL_OUTCOMES = OUTCOMES[:-1]
GREEN_OUTCOMES = (FIRST_ATTEMPT_GREEN, GREEN_AFTER_K)
# Informative cells say something about the subject; the others are counted, by name.
INFORMATIVE_OUTCOMES = (FIRST_ATTEMPT_GREEN, GREEN_AFTER_K, EXHAUSTED)

# Turn verdicts: what the checker said of the artefact of one reply.
VERDICT_PASS = "pass"
VERDICT_FAIL = "fail"  # the artefact failed, hung, or broke a limit: the model gets the error
VERDICT_NO_ARTEFACT = "no_artefact"  # nothing to extract: the model is told so
VERDICT_CHECKER_ERROR = "checker_error"  # the checker could not judge: the cell ends
VERDICT_NOT_CHECKED = "not_checked"  # no reply came back

RUN_OK, RUN_PARTIAL, RUN_STOPPED = "ok", "partial", "stopped"

# The fields the analysis reads as endpoints (analysis/contrast.py): a cell's outcome (its green
# and first-attempt rates) and its token totals, which a turn record also holds, per turn.
# Every writer and reader names them from here (tests/kinds/test_record_fields.py).
OUTCOME, PROMPT_TOKENS, COMPLETION_TOKENS = "outcome", "prompt_tokens", "completion_tokens"
# analysis name -> record field
ENDPOINT_FIELDS: dict[str, str] = {
    "green": OUTCOME,
    "first_attempt": OUTCOME,
    PROMPT_TOKENS: PROMPT_TOKENS,
    COMPLETION_TOKENS: COMPLETION_TOKENS,
}

# Which cell of which session: every authoring turn and cell record starts with these.
# `attempt` is 0 for the first invocation, n after the n-th --resume.
CELL_IDENTITY_FIELDS: tuple[str, ...] = (
    "run_id",
    "ladder",
    "session",
    "subject",
    "model_id",
    "cohort",
    "task",
    "repeat",
    "cell",
    "position",
    "attempt",
)
# latency_s: the successful (or last) try, send to full response; request_s: every try and wait;
# api_retried: the HTTP status (or error name) of each retried try.
TURN_FIELDS: tuple[str, ...] = (
    "turn",
    "started_at",
    "latency_s",
    "request_s",
    "api_tries",
    "api_retried",
    "http_status",
    "api_error",
    PROMPT_TOKENS,
    COMPLETION_TOKENS,
    "tokens_unknown",
    "budget_tokens",
    "finish_reason",
    "response_model",
    "reasoning_chars",
    "content_chars",
    "artefact_sha256",
    "artefact_bytes",
    "verdict",
    "exit_code",
    "check_s",
    "check_reason",
    "error_first_line",
    "feedback_chars",
    "tests_collected",
    "tests_passed",
    "verdict_forgeable",
    "sampling_seed",
    "reply_cached",
)
# tests_collected/tests_passed: the grader's own report of the check; verdict_forgeable: the task
# is checked in-process (task.toml checking = "in-process"), so the artefact could write that report.
# tokens_unknown: the server answered without usage (or with usage that could not be true, then
# also api_failure); budget_tokens: what the budget was charged for the turn (its bound then).
# reply_cached: the reply came from the opt-in reply cache ([api] cache = true), not the subject.
# sampling_seed: the request seed of the cell's repeat (the ladder's seeds, or derived from seed).
# green_turn: the k of green_after_k (1 for first_attempt_green).
CELL_FIELDS: tuple[str, ...] = (
    "valid",
    "reason",
    OUTCOME,
    "green_turn",
    "turns_used",
    PROMPT_TOKENS,
    COMPLETION_TOKENS,
    "tokens_unknown_turns",
    "api_retries",
    "api_status",
    "api_error",
    "checker_error",
    "started_at",
    "ended_at",
    "conversation",
    "verdict_forgeable",
    "sampling_seed",
)
SCORES_COLUMNS: tuple[str, ...] = (
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
    "api_retries",
    "api_status",
    "api_error",
    "checker_error",
    "attempt",
)


@dataclass(frozen=True)
class CellResult:
    """What an authoring test receives: valid when the cell reached an outcome (any outcome)."""

    cell: str
    valid: bool
    reason: str | None
    outcome: str | None = None
    green_turn: int | None = None
    turns_used: int = 0
    prompt_tokens: int | None = 0  # None: a turn came back without usage (unknown, not 0)
    completion_tokens: int | None = 0


def authoring_record(
    identity: dict[str, Any], body: dict[str, Any], fields_: tuple[str, ...], tail: dict[str, Any]
) -> dict[str, Any]:
    """A turn or cell record: identity, the named fields (missing ones null), keyed, provenance."""
    return {**identity, **{k: body.get(k) for k in fields_}, **tail}


# What the authoring analysis writes into analysis/ (beside schema.REPORT_MD).
COHORT_TABLE_CSV = "cohort_table.csv"  # subject x cohort: green first / after k / never, tokens
CONTRASTS_CSV = "contrasts.csv"  # within subject: cohort vs baseline cohort, paired by task
CENSUS_CSV = "census.csv"  # every cell: informative or not, and why
