"""One cell's conversation: ask, extract, check, feed the error back, until green or done.

Each turn: the budget is asked first (a turn that could take the run past it is not sent);
the reply's artefact is extracted as the cohort says and judged by the task's checker in the
sandbox; on a failure `check: <error>` (trimmed to `feedback_chars`) is the next user turn.
The cell's outcome is the first of: green (first_attempt_green or green_after_k), a terminal
API failure, a checker that could not judge, the budget, or the turns running out (exhausted).
A reply that came back without usage has unknown tokens: the turn says so, the cell's totals
are unknown (None, never 0), and the budget spends the turn's bound (budget.py) instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import records
from ..chat import ChatReply
from ..sandbox import Check
from . import feedback
from .budget import Budget, turn_bound
from .extract import describe_missing, extract

FEEDBACK_PREFIX = "check: "
Messages = list[dict[str, str]]


@dataclass(frozen=True)
class Settings:
    max_turns: int
    max_tokens: int
    extract: str
    feedback_chars: int
    feedback: Callable[[str], str] = lambda error: FEEDBACK_PREFIX + error  # the cohort's form


@dataclass
class CellEnd:
    """How a conversation ended, and what it cost."""

    outcome: str
    messages: Messages
    green_turn: int | None = None
    turns_used: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    api_retries: int = 0
    tokens_unknown_turns: int = 0  # turns answered without (plausible) usage
    api_status: int | None = None
    api_error: str | None = None
    checker_error: str | None = None
    budget: str | None = None  # why the budget stopped it
    isolation: dict[str, Any] = field(default_factory=dict)


def turn_fields(
    turn: int,
    reply: ChatReply,
    artefact: str | None,
    check: Check | None,
    verdict: str,
    sent_feedback: str | None,
) -> dict[str, Any]:
    """A turn record's own fields (records.TURN_FIELDS)."""
    data = artefact.encode("utf-8") if artefact is not None else None
    return {
        "turn": turn,
        "latency_s": reply.latency_s,
        "request_s": reply.total_s,
        "api_tries": reply.tries,
        "api_retried": list(reply.retried),
        "http_status": reply.http_status,
        "api_error": reply.error,
        records.PROMPT_TOKENS: reply.prompt_tokens,
        records.COMPLETION_TOKENS: reply.completion_tokens,
        "tokens_unknown": answered_without_usage(reply),
        "finish_reason": reply.finish_reason,
        "response_model": reply.response_model,
        "reasoning_chars": reply.reasoning_chars,
        "content_chars": len(reply.content),
        "artefact_sha256": hashlib.sha256(data).hexdigest() if data is not None else None,
        "artefact_bytes": len(data) if data is not None else None,
        "verdict": verdict,
        "exit_code": check.exit_code if check else None,
        "check_s": check.duration_s if check else None,
        "check_reason": check.reason if check else None,
        "error_first_line": feedback.first_line(check) if check and verdict != "pass" else None,
        "feedback_chars": len(sent_feedback) if sent_feedback is not None else None,
        "tests_collected": check.collected if check else None,
        "tests_passed": check.passed if check else None,
        "verdict_forgeable": check.forgeable if check else None,
    }


def answered_without_usage(reply: ChatReply) -> bool:
    """The server answered (HTTP 200) but its usage is missing or could not be true."""
    return reply.http_status == 200 and not reply.tokens_known


def converse(
    messages: Messages,
    s: Settings,
    send: Callable[[Messages], ChatReply],
    judge: Callable[[str], Check],
    budget: Budget,
    on_turn: Callable[[dict[str, Any]], None],
) -> CellEnd:
    """Run the conversation that starts with `messages` to its outcome."""
    end = CellEnd(records.EXHAUSTED, messages)
    previous: tuple[int, int] | None = None
    new: Messages = []
    for turn in range(1, s.max_turns + 1):
        bound = turn_bound(messages, s.max_tokens, previous, new)
        if not budget.reserve(bound):  # held until the reply: other cells may be in flight
            end.outcome, end.budget = records.BUDGET_STOPPED, budget.refused
            return end
        try:
            reply = send(messages)
        except BaseException:
            budget.settle(bound, bound)  # whatever it cost is unknown: the bound
            raise
        # it generated, but what it cost is unknown: the bound is charged; a refused request
        # (429, 500, a reset) costs what it reported, if anything
        charged = bound if answered_without_usage(reply) else reply.tokens
        budget.settle(bound, charged)
        end.tokens_unknown_turns += answered_without_usage(reply)
        end.turns_used = turn
        end.prompt_tokens += reply.prompt_tokens or 0
        end.completion_tokens += reply.completion_tokens or 0
        end.api_retries += len(reply.retried)
        if not reply.ok:
            on_turn(
                {
                    **turn_fields(turn, reply, None, None, records.VERDICT_NOT_CHECKED, None),
                    "budget_tokens": charged,
                }
            )
            end.outcome, end.api_status, end.api_error = (
                records.API_FAILURE,
                reply.http_status,
                reply.error,
            )
            return end
        messages.append({"role": "assistant", "content": reply.content})
        artefact = extract(reply.content, s.extract)
        check = judge(artefact) if artefact is not None else None
        if check is not None:
            end.isolation = dict(check.isolation)
        verdict = check.verdict if check else records.VERDICT_NO_ARTEFACT
        note: str | None = None
        if verdict in (records.VERDICT_FAIL, records.VERDICT_NO_ARTEFACT) and turn < s.max_turns:
            text = (
                feedback.message(check, s.feedback_chars) if check else describe_missing(s.extract)
            )
            note = s.feedback(text)
        on_turn(
            {**turn_fields(turn, reply, artefact, check, verdict, note), "budget_tokens": charged}
        )
        if verdict == records.VERDICT_PASS:
            end.outcome = records.FIRST_ATTEMPT_GREEN if turn == 1 else records.GREEN_AFTER_K
            end.green_turn = turn
            return end
        if verdict == records.VERDICT_CHECKER_ERROR:
            end.outcome = records.CHECKER_ERROR
            end.checker_error = check.reason if check else None
            return end
        if note is not None:
            new = [{"role": "user", "content": note}]  # the reply is in its completion tokens
            messages.append(new[-1])
            previous = (
                (reply.prompt_tokens or 0, reply.completion_tokens or 0)
                if reply.tokens_known
                else None
            )
    return end
