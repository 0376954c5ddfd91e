"""A replay's requests (pure): the trace's times scaled, every request real text of the prompt
set ending in a whole prompt, to the trace's length, sharing text where the trace shares hash
ids, and the same bytes from the same seed (so treatments pair by slot)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.load import trace
from pytest_mtpsweep.kinds.load.run import replay
from pytest_mtpsweep.kinds.load.trace import Trace, TraceRecord, TraceSettings
from pytest_mtpsweep.ladder.prompts import Prompt, load_prompt_set

REPO = Path(__file__).resolve().parents[3]
CODE = load_prompt_set(REPO / "experiments" / "prompts" / "code-edit")
SUMMARY = load_prompt_set(REPO / "experiments" / "prompts" / "summarise")
MOONCAKE = REPO / "experiments" / "traces" / "mooncake-conversation-300.jsonl"


def mooncake(**kw: object) -> tuple[Trace, TraceSettings]:
    s = TraceSettings(path=MOONCAKE, given="m.jsonl", format="mooncake", **kw)  # type: ignore[arg-type]
    return trace.load(s, "x"), s


def test_times_are_the_traces_scaled_and_lengths_capped() -> None:
    t, s = mooncake(start=27, limit=8, time_scale=0.5, input_scale=0.04)
    r = replay.build(t, s, CODE, seed=42, max_tokens=48)
    assert [q.line for q in r.requests] == list(range(27, 35))
    assert [q.at_ns for q in r.requests] == [round(x.time_ms * 0.5e6) for x in t.records]
    assert [q.max_tokens for q in r.requests] == [min(x.output_tokens, 48) for x in t.records]
    load = r.open_loop(max_in_flight=16)
    assert load.schedule == tuple(q.at_ns for q in r.requests) and load.requests == 8


def test_every_request_ends_in_a_whole_prompt_after_text_of_the_set() -> None:
    t, s = mooncake(limit=40, input_scale=0.05)
    r = replay.build(t, s, CODE, seed=7, max_tokens=64)
    texts = {p.id: p.text for p in CODE}
    corpus = replay._corpus(CODE, 7)
    for q in r.requests:
        task = texts[q.task]
        assert q.text.endswith(task)
        context = q.text[: -len(task)].strip()
        # every word of the context is a word of the prompt set: real text, no made-up tokens
        words = set(corpus.split())
        assert all(w in words for w in context.split()[1:-1]), q.line
        # the length the trace asks, within a word, unless the whole prompt alone is longer
        assert len(q.text) <= max(q.target_chars, len(task)) + 1
        if q.target_chars > len(task) + 200:
            assert len(q.text) >= q.target_chars - 100


def test_records_sharing_leading_hash_ids_share_leading_text() -> None:
    t, s = mooncake(limit=120, input_scale=0.1)
    r = replay.build(t, s, SUMMARY, seed=42, max_tokens=64)
    corpus, texts = replay._corpus(SUMMARY, 42), {p.id: p.text for p in SUMMARY}
    by_line = {q.line: q for q in r.requests}

    def context(line: int) -> str:
        q = by_line[line]
        return q.text[: -len(texts[q.task])]

    checked = 0
    for a in t.records:
        for b in t.records:
            n = next((i for i, (x, y) in enumerate(zip(a.hash_ids, b.hash_ids, strict=False)) if x != y),
                     min(len(a.hash_ids), len(b.hash_ids)))  # fmt: skip
            shared = a.hash_ids[:n]
            if a.line >= b.line or not shared:
                continue
            # the shared ids' passages, in order: so long as both contexts reach past them
            head = " ".join(replay.passage(corpus, f"42:block:{h}", r.block_chars) for h in shared)
            ca, cb = context(a.line), context(b.line)
            if min(len(ca), len(cb)) > len(head):
                assert ca.startswith(head) and cb.startswith(head), (a.line, b.line)
                checked += 1
    assert checked > 1000  # every record of this trace shares block 0; many share more
    # records 1 and 2 share only block 0 ([0, 1, ...], [0, 14, ...]): their texts part after it
    head = replay.passage(corpus, "42:block:0", r.block_chars)
    assert context(1)[: len(head) + 40] != context(2)[: len(head) + 40]


def test_records_without_hash_ids_get_contexts_of_their_own() -> None:
    records = tuple(TraceRecord(i + 2, float(i), 2000, 10) for i in range(6))
    t = Trace(records, "0" * 64, 1)
    s = TraceSettings(path=Path("t.csv"), given="t.csv", format="azure")
    r = replay.build(t, s, CODE, seed=1, max_tokens=16)
    starts = {q.text[:200] for q in r.requests}
    assert len(starts) == 6


def test_tasks_use_every_prompt_equally_often() -> None:
    t, s = mooncake(limit=36, input_scale=0.01)
    r = replay.build(t, s, CODE, seed=3, max_tokens=8)
    counts = {p.id: 0 for p in CODE}
    for q in r.requests:
        counts[q.task] += 1
    assert set(counts.values()) == {3}  # 36 slots over 12 prompts


def test_the_client_is_sent_the_tasks_id_the_text_and_its_own_cap() -> None:
    t, s = mooncake(limit=5, input_scale=0.02)
    r = replay.build(t, s, CODE, seed=42, max_tokens=48)
    sent = r.prompts()
    assert [p.id for p in sent] == [q.task for q in r.requests]
    assert [p.max_tokens for p in sent] == [q.max_tokens for q in r.requests]
    fields = r.request_fields(2)
    assert fields["trace_line"] == 3 and fields["fill_sha256"] == r.requests[2].sha256
    plan = r.plan_entry()
    assert plan["lines"] == [1, 2, 3, 4, 5] and plan["sha256"] == t.sha256
    assert plan["arrivals_ms"] == [0.0] * 5


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    lengths=st.lists(st.integers(1, 30_000), min_size=1, max_size=12),
    scale=st.sampled_from([0.01, 0.1, 1.0]),
)
def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_text(
    seed: int, lengths: list[int], scale: float
) -> None:
    records = tuple(
        TraceRecord(i + 1, 10.0 * i, n, 5, tuple(range(i, i + n // 512 + 1)))
        for i, n in enumerate(lengths)
    )
    t = Trace(records, "0" * 64, 1)
    s = TraceSettings(path=Path("t"), given="t", format="mooncake", input_scale=scale)
    prompts: tuple[Prompt, ...] = CODE
    a, b = (replay.build(t, s, prompts, seed, 32) for _ in range(2))
    assert [q.sha256 for q in a.requests] == [q.sha256 for q in b.requests]
    other = replay.build(t, s, prompts, seed + 1, 32)
    long = [i for i, q in enumerate(a.requests) if q.target_chars > 3000]
    if long:  # a long context is drawn from another place of the set
        assert any(a.requests[i].text != other.requests[i].text for i in long)
