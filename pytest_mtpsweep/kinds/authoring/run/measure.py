"""Measuring one cell on a live session: the conversation, wired to the session's server and
the task's checker, its turns recorded as they happen."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ....kindapi.records import schema
from ....kindapi.run import WARMUP
from .. import records
from ..chat import ChatReply, ChatSpec, RetryPolicy, chat, redact
from ..ladder import repeat_seed
from ..sandbox import Check, run_check
from ..tasks import ARTEFACT_FILE, CHECKER_FILE, IN_PROCESS
from . import cells, replycache
from .budget import warmup_bound
from .pool import Throttle
from .repairloop import CellEnd, Messages, Settings, converse

if TYPE_CHECKING:
    from ....kindapi.run import LiveSession
    from .state import AuthoringCase, AuthoringRun, RunState


def chat_spec(kind: AuthoringRun, live: LiveSession) -> ChatSpec:
    lad, api = kind.ladder, kind.settings.api
    endpoint = live.endpoint
    return ChatSpec(
        model=lad.alias(live.slot.treatment),
        max_tokens=lad.max_tokens,
        seed=lad.seed,
        temperature=lad.temperature,
        timeout_s=api.timeout_s,
        # our own llama-server: no prompt cache, so repeats are processed alike
        extra={} if endpoint else {"cache_prompt": False},
        headers=endpoint.headers if endpoint else dict,
        context_tokens=n_ctx if isinstance(n_ctx := live.info.get("n_ctx"), int) else None,
    )


def warm_up(kind: AuthoringRun, live: LiveSession, st: RunState) -> schema.WarmupFacts:
    """One short chat turn, as the cells will be asked (non-streamed); its tokens are spent."""
    spec = dataclasses.replace(chat_spec(kind, live), max_tokens=WARMUP.tokens)
    api = kind.settings.api
    policy = RetryPolicy(api.retries, api.backoff_s, api.max_backoff_s)
    reply = chat(
        live.http, live.base_url, [{"role": "user", "content": WARMUP.prompt}], spec, policy
    )
    # without (plausible) usage the warm-up cost is unknown: its bound is spent
    st.budget.spend(reply.tokens if reply.tokens_known else warmup_bound())
    live.extra["warmup_tokens"] = reply.tokens if reply.tokens_known else None
    reason = reply.error
    if reply.ok and live.endpoint is None and reply.response_model != spec.model:
        # our own server answers with its --alias: anything else is not this session's server
        reason = f"the reply's model {reply.response_model!r} is not the alias {spec.model!r}"
    return {
        "valid": reply.ok and reason is None,
        "reason": reason,
        "http_status": reply.http_status,
        "ttft_s": None,  # not streamed: there is no first token to time
    }


def measure_cell(
    kind: AuthoringRun,
    live: LiveSession,
    case: AuthoringCase,
    st: RunState,
    throttle: Throttle | None = None,
) -> dict[str, Any]:
    """Run the cell's conversation; returns the cell record's body (turns already written).

    `throttle`: the session's limit on requests in flight, when cells run together (pool.py).
    """
    ctx, s = live.ctx, kind.settings
    task, cohort = kind.tasks[case.task], kind.cohorts[case.cohort]
    seed = repeat_seed(kind.ladder.seed, case.repeat, s.seeds)
    spec = dataclasses.replace(chat_spec(kind, live), seed=seed)
    policy = RetryPolicy(s.api.retries, s.api.backoff_s, s.api.max_backoff_s)
    identity, tail = kind.identity(ctx, case), kind.tail(ctx)

    def ask(messages: Messages) -> ChatReply:
        if throttle is None:
            return chat(live.http, live.base_url, messages, spec, policy)
        throttle.acquire()
        saw_429 = True  # a request that raised tells the throttle to back off
        try:
            reply = chat(live.http, live.base_url, messages, spec, policy)
            saw_429 = "429" in reply.retried or reply.http_status == 429
            return reply
        finally:
            throttle.release(saw_429)

    hits: list[bool] = []  # per turn: answered from the reply cache
    send: Callable[[Messages], ChatReply] = ask
    if s.api.cache:
        subject = case.slot.treatment
        where = (
            live.endpoint.base_url if live.endpoint else f"local:{kind.ladder.model_id_of(subject)}"
        )
        send = replycache.cached(ask, subject, where, spec, replycache.cache_root(), hits)

    def judge(artefact: str) -> Check:
        files = {ARTEFACT_FILE: artefact, CHECKER_FILE: task.checker}
        return run_check(files, CHECKER_FILE, s.checker, in_process=task.checking == IN_PROCESS)

    def on_turn(fields: dict[str, Any]) -> None:
        body = {
            "started_at": schema.utc_now_iso(),
            "sampling_seed": seed,
            "reply_cached": bool(hits and hits[-1]),
            **fields,
        }
        record = records.authoring_record(identity, body, records.TURN_FIELDS, tail)
        cells.append(ctx, records.turns_file(case.slot.name), record)

    started = schema.utc_now_iso()
    settings = Settings(
        s.max_turns,
        kind.ladder.max_tokens,
        cohort.extract,
        s.feedback_chars,
        cohort.feedback_message,
    )
    end = converse(cohort.messages(task), settings, send, judge, st.budget, on_turn)
    if end.isolation:
        live.extra["sandbox"] = end.isolation
    conversation = records.conversation_file(case.slot.name, case.id, st.attempt)
    secrets = spec.secrets()  # redacted where written; the checked artefact was the reply itself
    written = [{**m, "content": redact(m.get("content", ""), secrets)} for m in end.messages]
    ctx.run_dir.write_json(
        conversation, {"cell": case.id, records.OUTCOME: end.outcome, "messages": written}
    )
    body = _cell_body(end, live)
    body["verdict_forgeable"] = task.checking == IN_PROCESS
    body["sampling_seed"] = seed
    return {"started_at": started, "conversation": conversation, **body}


def _cell_body(end: CellEnd, live: LiveSession) -> dict[str, Any]:
    unknown = end.tokens_unknown_turns > 0  # a total over an unknown turn is unknown too
    body: dict[str, Any] = {
        "valid": True,
        "reason": end.budget,
        records.OUTCOME: end.outcome,
        "green_turn": end.green_turn,
        "turns_used": end.turns_used,
        records.PROMPT_TOKENS: None if unknown else end.prompt_tokens,
        records.COMPLETION_TOKENS: None if unknown else end.completion_tokens,
        "tokens_unknown_turns": end.tokens_unknown_turns,
        "api_retries": end.api_retries,
        "api_status": end.api_status,
        "api_error": end.api_error,
        "checker_error": end.checker_error,
    }
    if end.outcome == records.API_FAILURE and live.proc is not None and not live.proc.alive():
        # Our own server died: not the subject's failure. No outcome; --resume runs it again.
        body.update(
            valid=False,
            outcome=None,
            reason=f"the server of this session died during the cell ({end.api_error})",
        )
    return body
