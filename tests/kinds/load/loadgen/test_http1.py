"""The load client's HTTP/1.1 reader: framing, end of body, reuse, however the bytes are cut."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.load.loadgen.http1 import Exchange, Wire

SSE = [b'data: {"a": 1}\n\n', b'data: {"b": 22}\n\n', b"data: [DONE]\n\n"]


def chunked(parts: list[bytes], ext: bytes = b"", trailer: bytes = b"") -> bytes:
    body = b"".join(b"%X%s\r\n%s\r\n" % (len(p), ext, p) for p in parts)
    return body + b"0\r\n" + trailer + b"\r\n"


def head(status: int = 200, *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status} X", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.closing = False

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


def exchange(response: bytes, cuts: list[int], eof: bool = False) -> tuple[Exchange, Wire]:
    """Feed `response` to a wire in pieces cut at `cuts`, as the network might deliver it."""

    async def run() -> tuple[Exchange, Wire]:
        wire = Wire()
        wire.connection_made(FakeTransport())
        task = asyncio.ensure_future(wire.exchange(b"POST / HTTP/1.1\r\n\r\n", 5.0))
        await asyncio.sleep(0)
        bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(response))), len(response)]
        for a, b in itertools.pairwise(bounds):
            if b > a:
                wire.data_received(response[a:b])
        if eof:
            wire.eof_received()
            wire.connection_lost(None)
        return await task, wire

    return asyncio.run(run())


CUTS = st.lists(st.integers(0, 400), max_size=12)


@given(cuts=CUTS)
def test_a_chunked_body_comes_out_whole_however_it_is_cut(cuts: list[int]) -> None:
    ex, wire = exchange(head(200, "Transfer-Encoding: chunked") + chunked(SSE), cuts)
    assert ex.error is None and ex.status == 200 and ex.received
    assert b"".join(ex.pieces) == b"".join(SSE)
    assert len(ex.pieces) == len(ex.stamps) and list(ex.stamps) == sorted(ex.stamps)
    assert wire.reusable  # the body ended where the framing said: the connection can serve again


@given(cuts=CUTS)
def test_chunk_extensions_and_trailers_are_skipped(cuts: list[int]) -> None:
    response = head(200, "Transfer-Encoding: chunked") + chunked(
        SSE, ext=b";name=value", trailer=b"X-Trailer: 1\r\n"
    )
    ex, _ = exchange(response, cuts)
    assert ex.error is None and b"".join(ex.pieces) == b"".join(SSE)


def test_a_sized_error_body_ends_at_its_length() -> None:
    body = b'{"error": "busy"}'
    ex, wire = exchange(head(429, f"Content-Length: {len(body)}") + body, [5, 30])
    assert ex.status == 429 and ex.error is None and b"".join(ex.pieces) == body
    assert wire.reusable


def test_a_body_without_framing_ends_with_the_connection() -> None:
    ex, wire = exchange(head(200) + b"data: x\n\n", [], eof=True)
    assert ex.error is None and b"".join(ex.pieces) == b"data: x\n\n"
    assert not wire.reusable


def test_a_continue_before_the_answer_is_skipped() -> None:
    response = b"HTTP/1.1 100 Continue\r\n\r\n" + head(200, "Content-Length: 2") + b"ok"
    ex, _ = exchange(response, [10, 40])
    assert ex.status == 200 and b"".join(ex.pieces) == b"ok"


def test_connection_close_makes_the_wire_not_reusable() -> None:
    ex, wire = exchange(head(200, "Content-Length: 2", "Connection: close") + b"ok", [])
    assert ex.error is None and not wire.reusable


def test_a_stream_cut_short_is_an_error_with_what_came() -> None:
    response = head(200, "Transfer-Encoding: chunked") + chunked(SSE)[:40]
    ex, wire = exchange(response, [], eof=True)
    assert ex.error is not None and "mid-response" in ex.error
    assert ex.pieces and not wire.reusable


def test_a_connection_closed_before_any_byte_says_so() -> None:
    ex, _ = exchange(b"", [], eof=True)
    assert ex.error is not None and "before any response" in ex.error and not ex.received


def test_a_head_that_is_not_http_is_an_error() -> None:
    ex, wire = exchange(b"HTTP/1.1 abc\r\n\r\n", [])
    assert ex.error is not None and "not valid HTTP/1.1" in ex.error and not wire.reusable


def test_a_bad_chunk_size_is_an_error() -> None:
    ex, _ = exchange(head(200, "Transfer-Encoding: chunked") + b"zz\r\nhello\r\n", [])
    assert ex.error is not None and "not valid HTTP/1.1" in ex.error


def test_the_read_timeout_ends_a_silent_response() -> None:
    async def run() -> Exchange:
        wire = Wire()
        wire.connection_made(FakeTransport())
        task = asyncio.ensure_future(wire.exchange(b"POST / HTTP/1.1\r\n\r\n", 0.05))
        await asyncio.sleep(0.01)
        wire.data_received(head(200, "Transfer-Encoding: chunked") + b"5\r\nhel")
        return await task

    ex = asyncio.run(run())
    assert ex.error is not None and "no byte for 0.05 s" in ex.error
    assert ex.pieces == (b"hel",)
