"""Conversations at one level: turn k carries the turns before it and the model's real answers
(the STAND-IN server keeps the bodies it was sent), conversations in flight hold the level, a
failed turn ends its conversation with a reason, and the cached tokens a server reports are
read as untrusted input."""

from __future__ import annotations

import itertools
import json
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.load.loadgen.chatlevel import (
    CACHE_N,
    CACHED_TOKENS,
    WARMUP_TEXT,
    CacheRead,
    Conversations,
    messages,
    prompt_total,
    read_cache,
    reply_of,
    run_conversations,
)
from pytest_mtpsweep.kinds.load.loadgen.payload import LoadPrompt, LoadSpec
from pytest_mtpsweep.kinds.load.loadgen.reads import RawRequest
from tests.kinds.load.loadgen.test_level import StandIn, stand_in  # noqa: F401  (the fixture)

SYSTEM = "You edit text exactly as asked."


def bodies(s: StandIn) -> list[dict[str, Any]]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{s.url}/bodies", timeout=5) as resp:
        out: list[dict[str, Any]] = json.loads(resp.read())
    return out


def test_turn_k_carries_every_earlier_turn_and_answer_in_order() -> None:
    users, answers = ["u1", "u2", "u3"], ["a1", "a2"]
    m = messages(SYSTEM, users, answers)
    assert m == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"}, {"role": "assistant", "content": "a2"},
        {"role": "user", "content": "u3"},
    ]  # fmt: skip
    assert messages("", ["only"], []) == [{"role": "user", "content": "only"}]
    with pytest.raises(ValueError, match="3 user turns need 2 answers, not 1"):
        messages(SYSTEM, users, answers[:1])


@settings(max_examples=40)
@given(st.lists(st.text(max_size=5), min_size=1, max_size=6), st.text(max_size=5))
def test_each_turns_messages_extend_the_last_turns(users: list[str], system: str) -> None:
    answers = [f"answer {i}" for i in range(len(users))]
    for k in range(1, len(users)):
        before = messages(system, users[:k], answers[: k - 1])
        after = messages(system, users[: k + 1], answers[:k])
        assert after[: len(before)] == before  # a prefix a prompt cache can reuse
        assert after[len(before)] == {"role": "assistant", "content": answers[k - 1]}


SLOTTED = ("--ttft-ms", "5", "--itl-ms", "1", "--slots", "2")


def test_the_server_is_sent_the_real_answers(stand_in: Callable[..., StandIn]) -> None:  # noqa: F811
    s = stand_in(*SLOTTED)
    prompts = [LoadPrompt(f"p{i // 3}", f"turn {i % 3 + 1} of conversation {i // 3 + 1}")
               for i in range(9)]  # fmt: skip
    load = Conversations.of(2, 3, 3, think_time_s=0.01)
    done = run_conversations(s.target(), LoadSpec(max_tokens=4), prompts, load, system=SYSTEM,
                             openings=["(one)", "(two)", "(three)"], timeout_s=30,
                             warmup=1)  # fmt: skip
    run = done.run
    assert all(r.ok for r in run.records) and len(run.records) == 9
    assert [(t.conversation, t.turn) for t in done.turns] == [
        (n, k) for n in (1, 2, 3) for k in (1, 2, 3)
    ]
    sent = bodies(s)
    assert sent[0]["messages"] == [{"role": "system", "content": SYSTEM},
                                   {"role": "user", "content": WARMUP_TEXT}]  # fmt: skip
    last = {b["messages"][-1]["content"]: b["messages"] for b in sent[1:]}
    third = last["turn 3 of conversation 2"]
    # the stand-in answers "t0 t1 t2 t3 ": the next turn carries exactly that text
    assert third == messages(SYSTEM, ["(two)\n\nturn 1 of conversation 2",
                                      "turn 2 of conversation 2", "turn 3 of conversation 2"],
                             ["t0 t1 t2 t3 ", "t0 t1 t2 t3 "])  # fmt: skip
    # two conversations in flight at most, each on one lane, its turns one after another
    assert s.stats()["max_in_flight"] == 2
    for n in range(3):
        mine = run.records[n * 3 : n * 3 + 3]
        assert len({r.slot for r in mine}) == 1
        for a, b in itertools.pairwise(mine):
            assert a.t_end_ns is not None and b.t_send_ns is not None
            # the next turn is due the think time after the answer ends, latency from then
            assert b.t_intended_ns == a.t_end_ns + 10_000_000
            assert b.t_send_ns >= b.t_intended_ns


def test_a_failed_turn_ends_its_conversation_with_the_reason(
    stand_in: Callable[..., StandIn],  # noqa: F811
) -> None:
    s = stand_in(*SLOTTED)
    prompts = [LoadPrompt("a", "fine"), LoadPrompt("a", "!status=500"), LoadPrompt("a", "never"),
               LoadPrompt("b", "fine"), LoadPrompt("b", "fine"), LoadPrompt("b", "fine")]  # fmt: skip
    done = run_conversations(s.target(), LoadSpec(max_tokens=3), prompts,
                             Conversations.of(1, 2, 3), system="", timeout_s=30)  # fmt: skip
    ok = [r.ok for r in done.run.records]
    assert ok == [True, False, False, True, True, True]
    assert done.run.records[2].error == (
        "not sent: turn 2 of conversation 1 failed, so this turn has no history"
    )
    assert done.run.records[2].t_send_ns is None
    assert done.turns[2].cache == CacheRead("unknown", reason="not answered")
    assert s.stats()["requests"] == 5  # the third turn of the first was never sent


def test_the_stand_ins_cache_shows_in_the_facts(stand_in: Callable[..., StandIn]) -> None:  # noqa: F811
    s = stand_in(*SLOTTED, "--prefill-us-per-token", "100")
    prompts = [LoadPrompt("p", f"words of turn {k} " * 10) for k in range(3)]
    done = run_conversations(s.target(), LoadSpec(max_tokens=4, extra={"cache_prompt": True}),
                             prompts, Conversations.of(1, 1, 3), system=SYSTEM * 5,
                             timeout_s=30, warmup=1)  # fmt: skip
    cached = [t.cache.tokens or -1 for t in done.turns]
    assert all(t.cache.status == "ok" and t.cache.source == CACHE_N for t in done.turns)
    assert cached[0] > 0  # the system text, from the warm-up
    assert cached[0] < cached[1] < cached[2]  # the history grows
    assert all(t.prompt_tokens is not None and t.prompt_tokens > (t.cache.tokens or 0)
               for t in done.turns)  # fmt: skip


# (usage, timings, prompt tokens) -> what read_cache must say
CACHE_CASES: list[tuple[Any, Any, int | None, CacheRead]] = [
    (None, None, None, CacheRead("unknown", reason="the server reported no cached tokens")),
    ({"prompt_tokens": 10}, {"prompt_n": 10}, 10,
     CacheRead("unknown", reason="the server reported no cached tokens")),
    (None, {"cache_n": 0}, 10, CacheRead("ok", 0, CACHE_N)),
    (None, {"cache_n": 7}, 10, CacheRead("ok", 7, CACHE_N)),
    ({"prompt_tokens_details": {"cached_tokens": 7}}, None, 10, CacheRead("ok", 7, CACHED_TOKENS)),
    ({"prompt_tokens_details": {"cached_tokens": 7}}, {"cache_n": 7}, 10,
     CacheRead("ok", 7, CACHE_N)),
    (None, {"cache_n": -1}, 10, CacheRead("invalid", source=CACHE_N,
                                          reason="timings.cache_n -1 is negative")),
    (None, {"cache_n": 11}, 10, CacheRead(
        "invalid", source=CACHE_N,
        reason="timings.cache_n 11 is more than the prompt's 10 tokens")),
    (None, {"cache_n": True}, 10, CacheRead("invalid", source=CACHE_N,
                                            reason="timings.cache_n True is not a whole number")),
    (None, {"cache_n": 3.5}, 10, CacheRead("invalid", source=CACHE_N,
                                           reason="timings.cache_n 3.5 is not a whole number")),
    (None, {"cache_n": "5"}, 10, CacheRead("invalid", source=CACHE_N,
                                           reason="timings.cache_n '5' is not a whole number")),
    ({"prompt_tokens_details": {"cached_tokens": 2**70}}, None, None, CacheRead(
        "invalid", source=CACHED_TOKENS,
        reason=f"usage.prompt_tokens_details.cached_tokens {2**70} is more than any context "
               "holds")),
    ({"prompt_tokens_details": {"cached_tokens": 5}}, None, None, CacheRead("ok", 5,
                                                                            CACHED_TOKENS)),
    ({"prompt_tokens_details": {"cached_tokens": 3}}, {"cache_n": 4}, 10, CacheRead(
        "invalid", source=CACHE_N,
        reason="timings.cache_n 4 and usage.prompt_tokens_details.cached_tokens 3 disagree")),
    ({"prompt_tokens_details": "lots"}, None, 10,
     CacheRead("unknown", reason="the server reported no cached tokens")),
]  # fmt: skip


@pytest.mark.parametrize(("usage", "timings", "prompt", "said"), CACHE_CASES)
def test_cached_tokens_are_untrusted(usage: Any, timings: Any, prompt: int | None,
                                     said: CacheRead) -> None:  # fmt: skip
    assert read_cache(usage, timings, prompt) == said


def test_the_prompt_total_is_usage_else_the_timings() -> None:
    assert prompt_total({"prompt_tokens": 12}, {"prompt_n": 1, "cache_n": 2}) == 12
    assert prompt_total(None, {"prompt_n": 5, "cache_n": 7}) == 12
    assert prompt_total({"prompt_tokens": -3}, None) is None
    assert prompt_total({"prompt_tokens": True}, {"prompt_n": -1, "cache_n": 7}) is None
    assert prompt_total("junk", "junk") is None


def _raw(*events: str, status: int = 200, error: str | None = None) -> RawRequest:
    body = "".join(f"data: {e}\n\n" for e in events).encode()
    return RawRequest(0, 0, "p", 0, 1, 2, (body,), (2,), status, error)


def test_a_reply_is_its_content_and_the_last_usage_and_timings() -> None:
    chunk = '{"choices": [{"delta": {"content": "%s"}}], "timings": {"cache_n": %d}}'
    raw = _raw(chunk % ("Hel", 1), '{"choices": [{"delta": {"reasoning_content": "hm"}}]}',
               chunk % ("lo", 2), '{"choices": [{"delta": {}, "finish_reason": "stop"}]}',
               '{"choices": [], "usage": {"prompt_tokens": 9}}', "[DONE]")  # fmt: skip
    r = reply_of(raw)
    assert (r.text, r.complete, r.usage, r.timings) == ("Hello", True, {"prompt_tokens": 9},
                                                        {"cache_n": 2})  # fmt: skip
    assert not reply_of(_raw(chunk % ("cut", 1))).complete  # no finish, no [DONE]
    assert not reply_of(_raw("[DONE]", status=500)).complete
    assert not reply_of(_raw("[DONE]", error="cancelled")).complete
    assert reply_of(_raw("not json", "[1, 2]", "[DONE]")).text == ""
