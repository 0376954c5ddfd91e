"""HTTP/1.1 for the load client: one streamed POST per connection at a time, every read
stamped in the event loop's own callback, as the bytes arrive.

Why not httpx here: at 64 streams its asyncio path (httpcore, anyio, h11) cost 263 µs of CPU
per read against 56 µs for this reader, and it stamps a chunk only when the reading task is
next scheduled, behind every other stream's processing: the delay it added to each chunk was
1.08 ms median, 23.9 ms p99, against 0.35 and 3.4 ms here (bench/load_client.py, 2 shared
cores). Here `data_received` stamps and keeps the bytes and walks the chunked framing only far
enough to know where the body ends; the SSE is parsed after the level.

Scope: what OpenAI-compatible servers answer (a status line, headers, a chunked, sized or
until-close body); no redirects, no compression, no pipelining, no 1xx but 100 skipped.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from ....kindapi.rig import ReadBound

now = time.monotonic_ns
MAX_HEAD = 64 * 1024  # a response head larger than this is not an inference server's
KEEPALIVE_NS = 2_000_000_000  # an idle connection older than this is not reused (servers: 5 s)
CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Exchange:
    """What came back for one request: status, body bytes per read with their arrival stamps,
    the last byte's arrival, and the error that ended it early (None: it completed)."""

    status: int | None
    pieces: tuple[bytes, ...]
    stamps: tuple[int, ...]
    t_end_ns: int
    error: str | None
    received: bool  # any byte of a response arrived


class Wire(asyncio.Protocol):
    """One connection. `exchange` sends a request and waits for its whole response."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.bound: ReadBound | None = None  # the current request's (None: unbounded)
        self.closed = False
        self.idle_since = now()
        self._begin(None)

    def _begin(self, done: asyncio.Future[None] | None) -> None:
        self.done = done
        self.pieces: list[bytes] = []
        self.stamps: list[int] = []
        self.buf = b""
        self.status: int | None = None
        self.mode = "head"  # head, chunked, sized, close
        self.left = 0  # chunk (or sized body) bytes still to come
        self.skip = 0  # CRLF bytes after a chunk's data
        self.trailer = False  # after the 0-size chunk: the trailer lines
        self.keep = True
        self.t_last = 0
        self.error: str | None = None
        self.size = 0  # body bytes so far
        self.lines = 0  # newlines in them
        self.cut: str | None = None  # the bound the body passed (bounds.ReadBound)

    # -- asyncio callbacks (the hot path) ---------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        t = now()
        if self.done is None or self.done.done():
            self.close()  # bytes nobody asked for: the connection is not reusable
            return
        self.t_last = t
        try:
            if self.mode == "head":
                data = self._head(data)
                if self.mode == "head":
                    return
            if self.mode == "chunked":
                self._chunked(data, t)
            elif data:
                self._take(data, t)
                if self.mode == "sized":
                    self.left -= len(data)
                    if self.left <= 0:
                        self._finish(None)
            if self.cut is not None:
                self.keep = False
                self._finish(self.cut)
        except ValueError as exc:
            self.keep = False
            self._finish(f"the response is not valid HTTP/1.1: {exc}")

    def eof_received(self) -> bool | None:
        self.keep = False
        return None  # the transport then closes, and connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is not None and not self.done.done():
            if self.mode == "close" and exc is None:
                self._finish(None)
            else:
                where = "before any response" if self.t_last == 0 else "mid-response"
                why = f": {exc}" if exc else ""
                self._finish(f"the server closed the connection {where}{why}")

    # -- framing ----------------------------------------------------------------------------

    def _head(self, data: bytes) -> bytes:
        buf = self.buf + data
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > MAX_HEAD:
                raise ValueError(f"no end of the head in {len(buf)} bytes")
            self.buf = buf
            return b""
        lines = buf[:end].decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        status = int(rest[:3])
        if status == 100:  # a Continue before the real answer
            self.buf = b""
            return self._head(buf[end + 4 :])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip().lower()
        self.status, self.buf = status, b""
        connection = headers.get("connection", "")
        self.keep = "close" not in connection and (
            version != "HTTP/1.0" or "keep-alive" in connection
        )
        if "chunked" in headers.get("transfer-encoding", ""):
            self.mode = "chunked"
        elif "content-length" in headers:
            self.mode, self.left = "sized", int(headers["content-length"])
            if self.left == 0:
                self._finish(None)
        else:
            self.mode, self.keep = "close", False
        return buf[end + 4 :]

    def _chunked(self, data: bytes, t: int) -> None:
        buf = self.buf + data if self.buf else data
        self.buf = b""
        pos, n = 0, len(buf)
        while pos < n:
            if self.left:  # chunk data
                end = min(n, pos + self.left)
                self._take(buf[pos:end], t)
                self.left -= end - pos
                pos = end
                if not self.left:
                    self.skip = 2
            elif self.skip:  # the CRLF after a chunk's data
                k = min(self.skip, n - pos)
                pos, self.skip = pos + k, self.skip - k
            else:  # a size line, or a trailer line after the last chunk
                i = buf.find(b"\r\n", pos)
                if i < 0:
                    self.buf = buf[pos:]
                    return
                line, pos = buf[pos:i], i + 2
                if self.trailer:
                    if not line:
                        self._finish(None)
                        return
                    continue
                size = int(line.split(b";", 1)[0], 16)
                self.trailer, self.left = size == 0, size

    def _take(self, piece: bytes, t: int) -> None:
        """Keep a piece of the body; past the bound (bytes, or lines: a stream's events and
        pings) the response is to be cut. Counting only: SSE is parsed after the level."""
        self.pieces.append(piece)
        self.stamps.append(t)
        bound = self.bound
        if bound is None or self.cut is not None:
            return
        self.size += len(piece)
        self.lines += piece.count(b"\n")
        if self.size > bound.max_bytes:
            self.cut = bound.too_many_bytes(self.size)
        elif bound.max_lines is not None and self.lines > bound.max_lines:
            self.cut = bound.too_many_lines(self.lines)

    def _finish(self, error: str | None) -> None:
        self.error = error
        if error is not None or not self.keep:
            self.close()
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def close(self) -> None:
        self.keep = False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    # -- the caller's side ------------------------------------------------------------------

    @property
    def reusable(self) -> bool:
        return not self.closed and self.keep and self.transport is not None

    async def exchange(
        self, request: bytes, read_timeout_s: float, bound: ReadBound | None = None
    ) -> Exchange:
        """Send `request`; wait for its response, or `read_timeout_s` of silence, or the first
        byte or line past `bound` (its time is the level's: the caller cancels at it)."""
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._begin(done)
        self.bound = bound
        t_sent = now()
        self.transport.write(request)
        limit = int(read_timeout_s * 1e9)

        def watchdog() -> None:  # one timer per request, re-armed to the last byte's arrival
            silent_until = max(self.t_last, t_sent) + limit
            if now() >= silent_until:
                self._finish(f"no byte for {read_timeout_s:g} s (the read timeout)")
                self.close()
            else:
                timer[0] = loop.call_later((silent_until - now()) / 1e9, watchdog)

        timer = [loop.call_later(read_timeout_s, watchdog)]
        try:
            await done
        except asyncio.CancelledError:
            self.close()
            raise
        finally:
            timer[0].cancel()
            self.done = None
            self.idle_since = now()
        return self.partial()

    def partial(self) -> Exchange:
        """What the current (or last) response has brought so far."""
        return Exchange(
            self.status,
            tuple(self.pieces),
            tuple(self.stamps),
            self.t_last or now(),
            self.error,
            self.t_last != 0,
        )


async def connect(host: str, port: int, tls: bool, timeout_s: float) -> Wire:
    """A new connection; OSError (refused, unreachable) or TimeoutError when there is none."""
    loop = asyncio.get_running_loop()
    context = ssl.create_default_context() if tls else None
    _, wire = await asyncio.wait_for(
        loop.create_connection(Wire, host, port, ssl=context), timeout_s
    )
    return wire


class Pool:
    """Kept-alive connections to one server, each taken by one request at a time."""

    def __init__(self, base_url: str) -> None:
        url = urlsplit(base_url)
        self.tls = url.scheme == "https"
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port or (443 if self.tls else 80)
        self.idle: list[Wire] = []
        self.all: list[Wire] = []

    async def get(self) -> tuple[Wire, bool]:
        """A connection, and whether it served a request before; OSError or TimeoutError when
        none can be opened."""
        while self.idle:
            wire = self.idle.pop()
            if wire.reusable and now() - wire.idle_since < KEEPALIVE_NS:
                return wire, True
            wire.close()
        wire = await connect(self.host, self.port, self.tls, CONNECT_TIMEOUT_S)
        self.all.append(wire)
        return wire, False

    def put(self, wire: Wire) -> None:
        if wire.reusable:
            self.idle.append(wire)
        else:
            wire.close()

    def close(self) -> None:
        for wire in self.all:
            wire.close()
