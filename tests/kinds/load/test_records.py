"""A block's records, pure: requests in flight at each send (so who queued), the most in
flight, a request's mean ITL over the tokens its chunks carried."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.load.loadgen.reads import Chunk, StreamRecord, Usage
from pytest_mtpsweep.kinds.load.records import (
    in_flight_at_send,
    max_in_flight,
    mean_itl_ms,
    request_line,
)

MS = 1_000_000


def record(
    i: int, send: int | None, end: int | None, chunks: tuple[Chunk, ...] = ()
) -> StreamRecord:
    return StreamRecord(
        index=i, slot=0, prompt_id=f"p{i}", t_intended_ns=send or 0, t_send_ns=send,
        t_first_ns=chunks[0].t_ns if chunks else None, t_end_ns=end, chunks=chunks,
        http_status=200, error=None, finish_reason="length", usage=Usage("ok", 5, 3),
        timings=None, token_basis=None, model="m", content_chars=0, content_sha256="",
    )  # fmt: skip


spans = st.lists(st.tuples(st.integers(0, 50), st.integers(1, 30)), min_size=1, max_size=12)


@given(spans)
def test_in_flight_counts_agree_with_a_brute_force_sweep(
    given_spans: list[tuple[int, int]],
) -> None:
    records = [record(i, s, s + d) for i, (s, d) in enumerate(given_spans)]
    at_send = in_flight_at_send(records)
    for i, (s, _) in enumerate(given_spans):
        brute = sum(1 for j, (s2, d2) in enumerate(given_spans)
                    if j != i and (s2 < s or (s2 == s and j < i)) and s2 + d2 > s)  # fmt: skip
        assert at_send[i] == brute
    # the most at once: some send saw all the others that overlap it
    assert max_in_flight(records) == max(at_send) + 1


maybe_spans = st.lists(
    st.tuples(st.none() | st.integers(0, 20), st.none() | st.integers(0, 10)), max_size=30
)


@given(maybe_spans)
def test_in_flight_counts_hold_for_unsent_unended_and_zero_length_requests(
    given_spans: list[tuple[int | None, int | None]],
) -> None:
    """Unsent (no send), still open (no end) and zero-length requests, many sent at one tick:
    the sweep agrees with the definition, pair by pair."""
    records = [
        record(i, s, None if s is None or d is None else s + d)
        for i, (s, d) in enumerate(given_spans)
    ]
    expected = []
    for i, r in enumerate(records):
        send = r.t_send_ns
        expected.append(0 if send is None else sum(
            1 for j, o in enumerate(records)
            if j != i and o.t_send_ns is not None and (o.t_send_ns, j) < (send, i)
            and (o.t_end_ns is None or o.t_end_ns > send)
        ))  # fmt: skip
    assert in_flight_at_send(records) == expected


def test_a_request_sent_while_every_slot_holds_another_queued() -> None:
    # three at once on two slots: the third queued
    records = [record(0, 0, 10), record(1, 1, 10), record(2, 2, 10), record(3, 11, 12)]
    flights = in_flight_at_send(records)
    assert flights == [0, 1, 2, 0]
    lines = [request_line({}, r, 0, n, 2, "prose") for r, n in zip(records, flights, strict=True)]
    assert [line["queued"] for line in lines] == [False, False, True, False]
    assert request_line({}, records[0], 0, 0, None, "prose")["queued"] is None  # no slot count


def test_an_unsent_request_is_not_in_flight() -> None:
    records = [record(0, None, None), record(1, 5, 9)]
    assert in_flight_at_send(records) == [0, 0] and max_in_flight(records) == 1


def test_mean_itl_divides_by_the_tokens_the_later_chunks_carried() -> None:
    chunks = (Chunk(10 * MS, 1, False, None), Chunk(20 * MS, 3, False, None),
              Chunk(30 * MS, 1, False, None))  # fmt: skip
    assert mean_itl_ms(record(0, 0, 30 * MS, chunks)) == 20 / 4
    unknown = tuple(Chunk(c.t_ns, None, False, None) for c in chunks)
    assert mean_itl_ms(record(0, 0, 30 * MS, unknown)) == 20 / 2
    assert mean_itl_ms(record(0, 0, 10 * MS, chunks[:1])) is None
