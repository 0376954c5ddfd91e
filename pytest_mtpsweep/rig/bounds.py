"""Every read of a server is bounded in total: its time, its bytes, and a stream's lines and
events (from its `max_tokens`), not only the gap between two reads.

httpx's timeouts bound each read, so a server that streams without end, or sends keep-alive
comments for ever, would hold a request for ever. Here each request runs under a `Deadline`:
a timer shuts the request's socket down when its time is up, so even a read blocked on a silent
server ends then. Each reply is read through a cap (`read_body`, `stream_lines`) that stops at
the first byte, line or event past its `ReadBound`. Either way the request fails with
`ReplyCut`, whose message says which bound cut it and where. The load client reads with its own
wire (`wire.py`) and applies the same `ReadBound`; its time is its level's timeout.
"""

from __future__ import annotations

import codecs
import contextlib
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar

from ..base.errors import ReplyCut

if TYPE_CHECKING:
    import httpx

# A stream sends one event per token at most (a drafter's chunk holds several), and a few
# around them: the role, the finish, the usage, [DONE], a vLLM empty first delta.
EVENT_SLACK = 32
LINES_PER_EVENT = 4  # its data line, the blank line after it, room for id:, event: and pings
EVENT_BYTES = 16 * 1024  # one event (llama-server's, with timings, is about 0.5 KiB)
TOKEN_BYTES = 1024  # a whole reply's share per token: content and reasoning, JSON-escaped
BASE_BYTES = 1 << 20  # what any reply may hold besides its tokens (an error page, a gateway's)
PROBE_BYTES = 8 << 20  # /props (a chat template), /metrics, /v1/models, /slots, /health
CHUNK_SLACK = 4  # content chunks a finished stream may hold beyond max_tokens
# Without measurement_timeout_s a request may take this, plus a second per token of
# max_tokens: a model as slow as one token a second still finishes.
DEFAULT_REQUEST_S = 600.0
SECONDS_PER_TOKEN = 1.0
# With measurement_timeout_s, a request is cut this much before it (5 %, at least a second,
# at most half): before pytest-timeout's alarm for the item, so the record says what cut it.
ALARM_SHARE = 0.95
ALARM_MARGIN_S = 1.0
NEWLINES = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # str.splitlines', as httpx splits


def request_s(max_tokens: int, measurement_timeout_s: float | None) -> float:
    """How long one request of `max_tokens` may take in all, from the ladder's timeouts."""
    if measurement_timeout_s is not None:
        t = measurement_timeout_s
        return max(t / 2, min(t * ALARM_SHARE, t - ALARM_MARGIN_S))
    return DEFAULT_REQUEST_S + max_tokens * SECONDS_PER_TOKEN


@dataclass(frozen=True)
class ReadBound:
    """What one reply may take: seconds in all, bytes, and for a stream its lines and events."""

    # content chunks a finished stream may hold beyond max_tokens (`ReadBound.excess_chunks`)
    CHUNK_SLACK: ClassVar[int] = CHUNK_SLACK

    total_s: float
    max_bytes: int
    max_tokens: int | None = None  # a stream's: its events and lines are bounded from it

    @classmethod
    def stream(cls, max_tokens: int, total_s: float) -> ReadBound:
        return cls(total_s, BASE_BYTES + (max_tokens + EVENT_SLACK) * EVENT_BYTES, max_tokens)

    @classmethod
    def reply(cls, max_tokens: int, total_s: float) -> ReadBound:
        """A non-streamed completion: one JSON body."""
        return cls(total_s, BASE_BYTES + max_tokens * TOKEN_BYTES)

    @classmethod
    def probe(cls, total_s: float) -> ReadBound:
        """A small JSON or text page: readiness, identity, metrics, slots."""
        return cls(total_s, PROBE_BYTES)

    @property
    def max_events(self) -> int | None:
        return None if self.max_tokens is None else self.max_tokens + EVENT_SLACK

    @property
    def max_lines(self) -> int | None:
        events = self.max_events
        return None if events is None else LINES_PER_EVENT * events

    # -- why a reply was cut (one wording for httpx's reads and the load client's wire) ------

    def too_many_bytes(self, seen: int) -> str:
        return f"the reply passed its bound of {self.max_bytes} bytes ({seen} read); cut there"

    def too_many_events(self, seen: int) -> str:
        return (
            f"the stream sent {seen} events for max_tokens={self.max_tokens} (at most "
            f"{self.max_events}); cut there"
        )

    def too_many_lines(self, seen: int, events: int | None = None) -> str:
        of = "" if events is None else f", {events} of them events"
        return (
            f"the stream sent {seen} lines{of} for max_tokens={self.max_tokens} (at most "
            f"{self.max_lines}: keep-alive comments or junk without end); cut there"
        )

    @staticmethod
    def stalled(stall_s: float, what: str) -> str:
        return (
            f"stalled: the stream fell silent for more than {stall_s:g} s after its last line "
            f"(stall threshold {stall_s:g} s); cut there ({what})"
        )

    def too_long(self, elapsed_s: float, what: str) -> str:
        return (
            f"the reply did not end within its bound of {self.total_s:g} s; cut after "
            f"{elapsed_s:.1f} s ({what})"
        )

    @staticmethod
    def excess_chunks(chunks: int, max_tokens: int | None) -> str | None:
        """Why a finished stream cannot be true: more content chunks than max_tokens allows."""
        if max_tokens is None or chunks <= max_tokens + CHUNK_SLACK:
            return None
        return f"the stream sent {chunks} content chunks for max_tokens={max_tokens}"

    def fetch(
        self,
        client: httpx.Client,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
    ) -> httpx.Response:
        """One request read whole within this bound: a response with its content, else
        ReplyCut (or httpx's own error for a transport failure inside the bound)."""
        import httpx

        with Deadline(self.total_s) as deadline:
            try:
                with client.stream(
                    method,
                    url,
                    headers=dict(headers or {}),
                    json=json,
                    timeout=self.total_s,
                    extensions=deadline.extensions,
                ) as resp:
                    deadline.watch(resp)
                    body = read_body(resp, self)
            except httpx.HTTPError:
                if deadline.passed:
                    raise ReplyCut(self.too_long(deadline.elapsed_s, "reading the reply")) from None
                raise
            if deadline.passed:  # a body read until close: the shutdown ended it, not the server
                raise ReplyCut(self.too_long(deadline.elapsed_s, "reading the reply"))
        # The content is decoded already: a Content-Encoding kept would decode it again.
        kept = [(k, v) for k, v in resp.headers.multi_items() if k.lower() != "content-encoding"]
        return httpx.Response(resp.status_code, headers=kept, content=body, request=resp.request)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed: nothing left to wake
        sock.shutdown(socket.SHUT_RDWR)


class Deadline:
    """A request's time bound: when it passes, the request's socket is shut down, so that a
    read blocked on a silent server, or one that keeps sending, ends at once.

    With `stall_s` and the list the timed loop appends each line's arrival stamp to
    (monotonic ns), a silence of more than `stall_s` after the last line shuts it down too
    (`stalled_s` then holds how long it was silent). The watch starts at the first line:
    before it the server may still be reading the prompt, which the total bound covers.
    httpx's read timeout cannot do this: it is read once per response, not per line.
    """

    def __init__(
        self, total_s: float, stall_s: float | None = None, stamps: list[int] | None = None
    ) -> None:
        self.total_s = total_s
        self.t0 = time.monotonic()
        self.passed = False
        self.stalled_s: float | None = None
        self._stall_s = stall_s
        self._stamps = stamps
        self._ended = threading.Event()
        self._over = False  # the request ended: the timer must touch nothing
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(total_s, 0.0), self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self.t0 = time.monotonic()
        self._timer.start()
        if self._stall_s is not None and self._stamps is not None:
            threading.Thread(target=self._listen, args=(self._stall_s,), daemon=True).start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with self._lock:
            self._over = True
        self._timer.cancel()
        self._ended.set()

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.t0

    @property
    def extensions(self) -> dict[str, Any]:
        """httpx request extensions: httpcore's trace names each new connection's stream."""
        return {"trace": self._trace}

    def _trace(self, event: str, info: Mapping[str, Any]) -> None:
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            self._watch(info.get("return_value"))

    def watch(self, response: httpx.Response) -> None:
        """Watch the socket a response came on (a kept-alive connection was not traced)."""
        self._watch(response.extensions.get("network_stream"))

    def _watch(self, stream: Any) -> None:
        get = getattr(stream, "get_extra_info", None)
        sock = get("socket") if callable(get) else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._socks.append(sock)
            late = self.passed
        if late:
            _shutdown(sock)

    def _listen(self, stall_s: float) -> None:
        # Polled, not reset per line: the timed loop only appends a stamp, nothing more.
        period = min(max(stall_s / 10.0, 0.01), 0.5)
        stamps = self._stamps
        assert stamps is not None
        while not self._ended.wait(period):
            if not stamps:
                continue
            silent_s = (time.monotonic_ns() - stamps[-1]) / 1e9
            if silent_s <= stall_s:
                continue
            self._cut(stalled_s=silent_s)
            return

    def _expire(self) -> None:
        self._cut(stalled_s=None)

    def _cut(self, stalled_s: float | None) -> None:
        """Shut every watched socket, unless the request has ended: a stall of `stalled_s`
        seconds, or (None) the deadline passed."""
        with self._lock:
            if self._over:
                return
            if stalled_s is None:
                self.passed = True
            else:
                self.stalled_s = stalled_s
            socks = list(self._socks)
        for sock in socks:
            _shutdown(sock)


def read_body(response: httpx.Response, bound: ReadBound) -> bytes:
    """The whole body, or ReplyCut at the first byte past the bound (a declared length past
    it is refused before any is read)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > bound.max_bytes:
        raise ReplyCut(
            f"the reply declares {int(declared)} bytes, past its bound of {bound.max_bytes}; "
            "not read"
        )
    parts: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > bound.max_bytes:
            raise ReplyCut(bound.too_many_bytes(size))
        parts.append(chunk)
    return b"".join(parts)


def get(url: str, bound: ReadBound, headers: Mapping[str, str] | None = None) -> httpx.Response:
    """A GET on a fresh connection, bounded (proxies off: servers are reached directly)."""
    from .http import http_client

    with http_client() as client:
        return bound.fetch(client, "GET", url, headers=headers)


class _Lines:
    """Text -> lines as they complete, split as str.splitlines (and httpx) split them."""

    def __init__(self) -> None:
        self.pending: list[str] = []
        self.cr = False  # a trailing "\r" may be half of "\r\n": held for the next text

    def feed(self, text: str) -> list[str]:
        if self.cr:
            text, self.cr = "\r" + text, False
        if text.endswith("\r"):
            text, self.cr = text[:-1], True
        if not text:
            return []
        ended = text[-1] in NEWLINES
        lines = text.splitlines()
        if len(lines) == 1 and not ended:
            self.pending.append(lines[0])
            return []
        if self.pending:
            lines[0] = "".join(self.pending) + lines[0]
            self.pending = []
        if not ended:
            self.pending = [lines.pop()]
        return lines

    def flush(self) -> list[str]:
        if not self.pending and not self.cr:
            return []
        line, self.pending, self.cr = "".join(self.pending), [], False
        return [line]


def stream_lines(response: httpx.Response, bound: ReadBound) -> Iterator[str]:
    """The reply's lines as they arrive, to the first byte, line or `data:` event past the
    bound (ReplyCut). Counting only, no parsing: this runs inside the timed loop."""
    decode = codecs.getincrementaldecoder(response.encoding or "utf-8")(errors="replace").decode
    splitter = _Lines()
    max_bytes = bound.max_bytes
    max_lines = bound.max_lines if bound.max_lines is not None else -1
    max_events = bound.max_events if bound.max_events is not None else -1
    size = lines = events = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ReplyCut(bound.too_many_bytes(size))
        for line in splitter.feed(decode(chunk)):
            lines += 1
            if line.startswith("data:"):
                events += 1
                if events == max_events + 1:
                    raise ReplyCut(bound.too_many_events(events))
            if lines == max_lines + 1:
                raise ReplyCut(bound.too_many_lines(lines, events))
            yield line
    yield from splitter.feed(decode(b"", final=True))
    yield from splitter.flush()
