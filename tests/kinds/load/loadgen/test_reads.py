"""A kept stream -> its record: stamps per event, first token, token counts, usage judged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_mtpsweep.kinds.load.loadgen.reads import (
    RawRequest,
    check_usage,
    lag_at,
    reduce_request,
    sse_lines,
)

MS = 1_000_000
USAGE = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}


def event(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps({"model": "m", "choices": choices, **extra}).encode() + b"\n\n"


def raw(pieces: list[bytes], status: int = 200, **kw: Any) -> RawRequest:
    stamps = tuple(10 * MS * (i + 1) for i in range(len(pieces)))
    fields: dict[str, Any] = {
        "index": 0,
        "slot": 0,
        "prompt_id": "p0",
        "t_intended_ns": 0,
        "t_send_ns": MS,
        "t_end_ns": stamps[-1] if stamps else MS,
        "pieces": tuple(pieces),
        "stamps": stamps,
        "status": status,
    }
    return RawRequest(**(fields | kw))


def stream(*middle: bytes, usage: Any = USAGE) -> list[bytes]:
    tail = [event({}, "length")]
    if usage is not None:
        tail.append(event(None, usage=usage))
    return [event({"role": "assistant", "content": None}), *middle, *tail, b"data: [DONE]\n\n"]


def test_an_event_is_stamped_by_the_read_that_completed_it() -> None:
    pieces = [b"data: a\n\nda", b"ta: b\n", b"\n"]
    lines = list(sse_lines(pieces, [1, 2, 3]))
    assert lines == [("data: a", 1), ("", 1), ("data: b", 2), ("", 3)]


def test_a_normal_stream_reduces_to_its_tokens_and_latencies() -> None:
    r = reduce_request(raw(stream(*(event({"content": f"t{i} "}) for i in range(3)))), max_tokens=8)
    assert r.ok and r.finish_reason == "length" and r.model == "m"
    assert [c.t_ns for c in r.chunks] == [20 * MS, 30 * MS, 40 * MS]
    assert r.ttft_ns == 20 * MS and r.itl_ns == (10 * MS, 10 * MS)
    assert r.usage.status == "ok" and r.output_tokens == 3
    # usage says 3 tokens in 3 chunks: one each, and the record says how that is known
    assert [c.tokens for c in r.chunks] == [1, 1, 1] and r.token_basis == "usage"
    assert r.content_chars == len("t0 t1 t2 ")


def test_a_reasoning_token_is_the_first_token() -> None:
    r = reduce_request(
        raw(
            stream(
                event({"reasoning_content": "hm"}), event({"content": "a"}), event({"content": "b"})
            )
        ),
        max_tokens=8,
    )
    assert r.ttft_ns == 20 * MS and r.chunks[0].reasoning and not r.chunks[1].reasoning
    assert r.content_chars == 2  # reasoning is timed, not counted as content


def test_cumulative_timings_give_each_chunk_its_tokens() -> None:
    middle = [
        event({"content": "ab"}, timings={"predicted_n": 2}),
        event({"content": "cde"}, timings={"predicted_n": 5}),
    ]
    usage = {"prompt_tokens": 1, "completion_tokens": 5, "total_tokens": 6}
    r = reduce_request(raw(stream(*middle, usage=usage)), max_tokens=8)
    assert [c.tokens for c in r.chunks] == [2, 3] and r.token_basis == "timings"
    assert r.itl_ns == (10 * MS / 3,)  # a 10 ms gap over the 3 tokens it brought


def test_logprobs_give_each_chunk_its_tokens() -> None:
    lp = {"content": [{"token": "a"}, {"token": "b"}]}
    body = {"choices": [{"index": 0, "delta": {"content": "ab"}, "logprobs": lp}]}
    piece = b"data: " + json.dumps(body).encode() + b"\n\n"
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    r = reduce_request(raw(stream(piece, usage=usage)), max_tokens=8)
    assert [c.tokens for c in r.chunks] == [2] and r.token_basis == "logprobs"


def test_without_usage_tokens_are_counted_from_chunks_and_usage_is_unknown() -> None:
    r = reduce_request(
        raw(stream(event({"content": "a"}), event({"content": "b"}), usage=None)), max_tokens=8
    )
    assert r.ok and r.usage.status == "unknown" and r.output_tokens == 2
    assert [c.tokens for c in r.chunks] == [None, None] and r.token_basis is None


def test_a_stream_without_finish_or_done_is_an_error_with_its_chunks() -> None:
    r = reduce_request(raw([event({"content": "a"}), event({"content": "b"})]), max_tokens=8)
    assert not r.ok and r.error is not None and "ended early" in r.error
    assert len(r.chunks) == 2


def test_an_http_error_keeps_its_status_and_an_excerpt() -> None:
    r = reduce_request(raw([b'{"error": "boom"}'], status=500), max_tokens=8)
    assert r.http_status == 500 and r.error is not None and r.error.startswith("HTTP 500")
    assert "boom" in r.error and not r.chunks


def test_an_event_that_is_not_json_is_an_error() -> None:
    r = reduce_request(raw(stream(b"data: {oops\n\n", event({"content": "a"}))), max_tokens=8)
    assert r.error == "an event of the stream was not JSON"


def test_the_served_model_is_the_decode_kinds_witness() -> None:
    def answered(*names: str | None) -> bytes:
        return b"".join(
            b"data: " + json.dumps({"model": n} if n else {}).encode() + b"\n\n" for n in names
        )

    ok = reduce_request(raw(stream(event({"content": "a"}))), max_tokens=8, expected_model="m")
    assert ok.ok and ok.model == "m"
    other = reduce_request(raw(stream(answered("other"))), max_tokens=8, expected_model="m")
    assert other.error == "wrong server answered: model ['m', 'other'] != alias 'm'"
    assert other.model == "m,other"
    # the same reason, in the same words, as a decode measurement gives (rig/stream.py)
    gone = [b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "a"},
            "finish_reason": "stop"}]}).encode() + b"\n\n", b"data: [DONE]\n\n"]  # fmt: skip
    bare = reduce_request(raw(gone), max_tokens=8, expected_model="m")
    assert bare.error == "no model field in the stream: the alias witness is missing"
    # a stream cut short keeps its own reason (the witness is judged on an answer only)
    cut = reduce_request(raw([answered("other")]), max_tokens=8, expected_model="m")
    assert cut.error is not None and "ended early" in cut.error


def test_a_transport_error_is_kept_as_given() -> None:
    r = reduce_request(raw([event({"content": "a"})], error="refused"), max_tokens=8)
    assert r.error == "refused"


@pytest.mark.parametrize(
    ("usage", "status", "why"),
    [
        (None, "unknown", "no usage"),
        ({"completion_tokens": 3}, "unknown", "no prompt_tokens"),
        ({"prompt_tokens": 5}, "unknown", "no completion_tokens"),
        ("3 tokens", "malformed", "not an object"),
        ({"prompt_tokens": 5, "completion_tokens": -1}, "malformed", "out of range"),
        ({"prompt_tokens": 5, "completion_tokens": 3.0}, "malformed", "not an integer"),
        ({"prompt_tokens": 5, "completion_tokens": "3"}, "malformed", "not an integer"),
        ({"prompt_tokens": True, "completion_tokens": 3}, "malformed", "not an integer"),
        ({"prompt_tokens": 10**9, "completion_tokens": 3}, "malformed", "out of range"),
        ({"prompt_tokens": 5, "completion_tokens": 9}, "malformed", "exceeds max_tokens"),
        ({"prompt_tokens": 5, "completion_tokens": 1}, "malformed", "< 2 chunks"),
        ({"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 9}, "malformed", "!= prompt"),
        ({"prompt_tokens": 5, "completion_tokens": 3}, "ok", None),
        (USAGE, "ok", None),
    ],
)
def test_usage_is_judged(usage: Any, status: str, why: str | None) -> None:
    u = check_usage(usage, max_tokens=8, token_chunks=2)
    assert u.status == status
    if why is None:
        assert u.reason is None and u.completion_tokens == 3 and u.prompt_tokens == 5
    else:
        assert u.reason is not None and why in u.reason


def test_a_malformed_usage_falls_back_to_the_chunks_for_throughput() -> None:
    bad = {"prompt_tokens": 5, "completion_tokens": -4}
    r = reduce_request(raw(stream(event({"content": "a"}), usage=bad)), max_tokens=8)
    assert r.ok and r.usage.status == "malformed" and r.output_tokens == 1


def test_a_chunk_takes_the_lag_of_the_next_monitor_wake() -> None:
    monitor = [(5, 100), (25 * MS, 7), (60 * MS, 900)]
    assert lag_at(monitor, 5) == 100
    assert lag_at(monitor, 6) == 7
    assert lag_at(monitor, 61 * MS) is None
    r = reduce_request(
        raw(stream(event({"content": "a"}), event({"content": "b"}))), max_tokens=8, monitor=monitor
    )
    assert [c.lag_ns for c in r.chunks] == [7, 900]


@pytest.mark.parametrize(
    "timings",
    [
        {"predicted_n": float("nan"), "cache_n": float("nan")},
        {"predicted_n": float("inf"), "predicted_ms": -1.0, "cache_n": -5},
        {"predicted_n": 10**30, "predicted_ms": 1e-9, "draft_n": float("nan")},
    ],
)
def test_lying_timings_never_kill_the_reduction(timings: dict[str, Any]) -> None:
    # Issue 43, finding 6: timings.cache_n NaN killed a decode session ("cannot convert float
    # NaN to integer"); the load client reads timings only where they are whole numbers.
    body = stream(*(event({"content": f"t{i} "}, timings=timings) for i in range(3)))
    assert b"NaN" in b"".join(body) or b"Infinity" in b"".join(body) or b"1e-09" in b"".join(body)
    r = reduce_request(raw(body), max_tokens=8)
    assert r.ok and len(r.chunks) == 3
    assert r.token_basis != "timings"  # no count was taken from them
    assert check_usage({"prompt_tokens": float("nan"), "completion_tokens": 3},
                       max_tokens=8, token_chunks=3).status == "malformed"  # fmt: skip
