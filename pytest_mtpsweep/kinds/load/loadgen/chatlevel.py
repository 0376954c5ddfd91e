"""Conversations at one level of load: lanes of sessions of several turns, closed loop.

A level of `Conversations` runs `conversations` sessions, `concurrency` of them in flight; each
lane takes the next conversation as its last one ends and sends its turns one after another.
Turn k carries the conversation so far: the shared system text, the user turns before it and
the model's own answers to them (the text it streamed), then its own user turn; so the server's
prompt cache (`cache_prompt`) can reuse everything up to the new turn. The next turn is due
`think_time_s` after an answer ends, and its latency counts from then (coordinated omission, as
a closed loop's request counts from the moment its lane came free).

Request i of the level is turn `i % turns` of conversation `i // turns`, and sends prompt i of
the shared order: a treatment's slot i and the baseline's are the same (conversation, turn).

Unlike a single-turn level, a turn's bytes can only be built once the answer before it has
ended: its text is read from the kept reads then (a few hundred microseconds, between turns,
never inside a stream; a turn with no think time waits that long, and its send lag says so).
The rest is parsed after the level, as for every level (`reads.reduce_request`). A turn
that failed ends its conversation: the turns after it are recorded as not sent, with the reason.

The cached tokens a server reports (llama-server's `timings.cache_n`, OpenAI's
`usage.prompt_tokens_details.cached_tokens`) are read as untrusted input (`read_cache`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .level import ClosedLoop, LevelRun, _Level, new_loop, now
from .payload import LoadSpec, LoadTarget, PromptLike, chat_bytes, check_target
from .reads import ABSURD_TOKENS, RawRequest, sse_lines

WARMUP_TEXT = "Reply with one word: ready."  # a block's warm-up turn, after the system text
CACHE_N = "timings.cache_n"
CACHED_TOKENS = "usage.prompt_tokens_details.cached_tokens"


@dataclass(frozen=True)
class Conversations(ClosedLoop):
    """`concurrency` conversations in flight, `requests` = conversations x turns in all."""

    turns: int = 1
    think_time_s: float = 0.0

    @classmethod
    def of(
        cls, concurrency: int, conversations: int, turns: int, think_time_s: float = 0.0
    ) -> Conversations:
        return cls(concurrency, conversations * turns, None, turns, think_time_s)

    @property
    def conversations(self) -> int:
        return (self.requests or 0) // max(self.turns, 1)

    @property
    def connections(self) -> int:
        return max(min(self.concurrency, self.conversations), 1)


@dataclass(frozen=True)
class Reply:
    """What one turn's stream said, read between turns: its text, whether it completed, and
    the server's last usage and timings (None where it sent none)."""

    text: str
    complete: bool
    usage: Any
    timings: Any


@dataclass(frozen=True)
class CacheRead:
    """The prompt tokens the server says it reused: ok, unknown (not said) or invalid (why)."""

    status: Literal["ok", "unknown", "invalid"]
    tokens: int | None = None
    source: str | None = None  # CACHE_N or CACHED_TOKENS
    reason: str | None = None


@dataclass(frozen=True)
class TurnFacts:
    """What a request line adds in a conversation level."""

    index: int
    conversation: int  # from 1, as its opening line names it
    turn: int  # from 1: a conversation's first turn is 1
    cache: CacheRead
    prompt_tokens: int | None  # the prompt the cache is counted against (usage or timings)


@dataclass(frozen=True)
class ConversationRun:
    run: LevelRun
    turns: tuple[TurnFacts, ...]  # one per request, in schedule order


def messages(system: str, users: Sequence[str], answers: Sequence[str]) -> list[dict[str, str]]:
    """Turn k's messages: the system text (if any), then each earlier user turn with the
    model's answer to it, then user turn k (users has k + 1 items, answers k)."""
    if len(answers) != len(users) - 1:
        raise ValueError(
            f"{len(users)} user turns need {len(users) - 1} answers, not {len(answers)}"
        )
    out = [{"role": "system", "content": system}] if system else []
    for user, answer in zip(users, answers, strict=False):
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    out.append({"role": "user", "content": users[-1]})
    return out


def reply_of(raw: RawRequest) -> Reply:
    """The answer's text and the server's last usage and timings, from the kept reads."""
    parts: list[str] = []
    usage: Any = None
    timings: Any = None
    finished = False
    for line, _ in sse_lines(raw.pieces, raw.stamps) if raw.status == 200 else ():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            finished = True
            continue
        try:
            event = json.loads(payload)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        usage = event.get("usage", usage)
        timings = event.get("timings", timings)
        choices = event.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            continue
        finished = finished or bool(choice.get("finish_reason"))
        delta = choice.get("delta")
        content = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(content, str):
            parts.append(content)
    complete = raw.error is None and raw.status == 200 and finished
    return Reply("".join(parts), complete, usage, timings)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def prompt_total(usage: Any, timings: Any) -> int | None:
    """The prompt's tokens: usage.prompt_tokens, else timings' prompt_n + cache_n (both whole
    and not negative), else unknown."""
    if isinstance(usage, Mapping) and _whole(usage.get("prompt_tokens")):
        n = int(usage["prompt_tokens"])
        return n if n >= 0 else None
    if isinstance(timings, Mapping):
        a, b = timings.get("prompt_n"), timings.get("cache_n")
        if _whole(a) and _whole(b) and min(int(a or 0), int(b or 0)) >= 0:
            return int(a or 0) + int(b or 0)
    return None


def read_cache(usage: Any, timings: Any, prompt_tokens: int | None) -> CacheRead:
    """The cached prompt tokens, judged: llama-server's timings.cache_n, else OpenAI's
    usage.prompt_tokens_details.cached_tokens; neither -> unknown (never 0); not a whole
    number, negative, more than the prompt (or than any context, the prompt unknown), or the two
    disagreeing -> invalid, with why."""
    found: dict[str, Any] = {}
    if isinstance(timings, Mapping) and timings.get("cache_n") is not None:
        found[CACHE_N] = timings["cache_n"]
    details = usage.get("prompt_tokens_details") if isinstance(usage, Mapping) else None
    if isinstance(details, Mapping) and details.get("cached_tokens") is not None:
        found[CACHED_TOKENS] = details["cached_tokens"]
    if not found:
        return CacheRead("unknown", reason="the server reported no cached tokens")
    for source, value in found.items():
        if not _whole(value):
            return CacheRead(
                "invalid", source=source, reason=f"{source} {value!r} is not a whole number"
            )
        if value < 0:
            return CacheRead("invalid", source=source, reason=f"{source} {value} is negative")
        if value > ABSURD_TOKENS:
            why = f"{source} {value} is more than any context holds"
            return CacheRead("invalid", source=source, reason=why)
        if prompt_tokens is not None and value > prompt_tokens:
            why = f"{source} {value} is more than the prompt's {prompt_tokens} tokens"
            return CacheRead("invalid", source=source, reason=why)
    if len(set(found.values())) > 1:
        why = f"{CACHE_N} {found[CACHE_N]} and {CACHED_TOKENS} {found[CACHED_TOKENS]} disagree"
        return CacheRead("invalid", source=CACHE_N, reason=why)
    source, value = next(iter(found.items()))
    return CacheRead("ok", int(value), source)


def run_conversations(
    target: LoadTarget,
    spec: LoadSpec,
    prompts: Sequence[PromptLike],
    load: Conversations,
    *,
    system: str,
    openings: Sequence[str] = (),
    timeout_s: float,
    warmup: int = 0,
    spin_us: float = 200.0,
    monitor_ms: float = 1.0,
) -> ConversationRun:
    """Run one conversation level to its end or `timeout_s`; request i sends prompts[i] as turn
    i % turns of conversation i // turns. `openings[c]` (if given) goes before conversation
    c's first user turn; `warmup` requests of the system text and WARMUP_TEXT go first."""
    check_target(target)
    if len(prompts) < (load.requests or 0):
        raise ValueError(
            f"{load}: {len(prompts)} prompts for {load.requests} turns; give one a turn"
        )
    if load.turns < 1 or load.concurrency < 1 or load.think_time_s < 0:
        raise ValueError(f"{load}: turns and concurrency must be >= 1, think_time_s >= 0")
    level = _Conversing(target, spec, prompts, load, timeout_s, spin_us, monitor_ms)
    level.prepare(system, openings)
    loop, timer = new_loop(load.connections)
    try:
        run = loop.run_until_complete(level.run(warmup, timer, False))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    return ConversationRun(run, level.facts(run))


class _Conversing(_Level):
    """A level whose requests are the turns of conversations (`_Level` sends and keeps them)."""

    def prepare(self, system: str, openings: Sequence[str]) -> None:
        assert isinstance(self.load, Conversations)
        self.conv = self.load
        self.system, self.openings = system, openings
        self.replies: dict[int, Reply] = {}
        # the warm-up's one request: the system text (shared by every conversation) and a word
        warm = [{"role": "system", "content": system}] if system else []
        warm.append({"role": "user", "content": WARMUP_TEXT})
        self.requests = [self._bytes(warm)]

    def _bytes(self, turn: Sequence[Mapping[str, str]]) -> bytes:
        return chat_bytes(self.target, self.spec, turn, self.headers)

    async def _closed(self, load: ClosedLoop, t_start: int) -> None:
        if not isinstance(load, Conversations):  # the block's warm-up: plain requests
            await super()._closed(load, t_start)
            return
        queue = iter(range(load.conversations))

        async def lane(slot: int) -> None:
            t_free = t_start
            # shared iterator; the take has no await before it
            while (c := next(queue, None)) is not None:
                t_free = await self._conversation(c, slot, t_free)

        await asyncio.gather(*(lane(k) for k in range(load.connections)))

    async def _conversation(self, c: int, slot: int, t_free: int) -> int:
        """Send conversation c's turns in order on one lane; when its lane is free again."""
        turns, think_ns = self.conv.turns, round(self.conv.think_time_s * 1e9)
        users: list[str] = []
        answers: list[str] = []
        intended = t_free
        for k in range(turns):
            index = c * turns + k
            text = self.prompts[index].text
            if k == 0 and c < len(self.openings) and self.openings[c]:
                text = f"{self.openings[c]}\n\n{text}"
            users.append(text)
            if k:
                await self._wait_until(intended)
            turn = self._bytes(messages(self.system, users, answers))
            await self._send(index, slot, intended, turn)
            raw = self.raws[index]
            reply = self.replies[index] = reply_of(raw)
            end = raw.t_end_ns or now()
            if not reply.complete:
                self._unsent(c, k, slot, end)
                return end
            answers.append(reply.text)
            intended = end + think_ns
        return now()

    def _unsent(self, c: int, failed: int, slot: int, t: int) -> None:
        """The turns after a failed one: recorded, never sent."""
        for k in range(failed + 1, self.conv.turns):
            index = c * self.conv.turns + k
            why = (
                f"not sent: turn {failed + 1} of conversation {c + 1} failed, so this turn has "
                "no history"
            )
            self.raws[index] = RawRequest(
                index, slot, self._prompt_id(index), t, None, None, error=why
            )

    def facts(self, run: LevelRun) -> tuple[TurnFacts, ...]:
        out = []
        turns = self.conv.turns
        for r in run.records:
            reply = self.replies.get(r.index)
            if reply is None:
                cache, total = CacheRead("unknown", reason="not answered"), None
            else:
                total = prompt_total(reply.usage, reply.timings)
                cache = read_cache(reply.usage, reply.timings, total)
            n, k = divmod(r.index, turns)  # 1-based in the records, as the opening line says
            out.append(TurnFacts(r.index, n + 1, k + 1, cache, total))
        return tuple(out)
