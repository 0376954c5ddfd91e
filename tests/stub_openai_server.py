"""A STUB OpenAI-compatible chat server, for what a real server cannot be made to do on demand:
demand a bearer key, answer 429 then succeed, fail with 500 for good, send no choices, reset the
connection, and play a scripted model. It is a real HTTP server (http.server, in a thread of the
test process) spoken to over TCP, not a mock object.

`Script` decides each /v1/chat/completions answer from the request: `faults` is a queue of
forced answers taken first (an HTTP status, "reset", "empty", "notjson", and the hostile
HOSTILE ones: a body without end, one that trickles, one that declares 10 GB); then
`reply(messages)` gives the assistant's text. `get_faults` makes a GET path hostile the same way. Usage counts are made up but consistent: prompt tokens = characters
of all messages // 4 + 10, completion tokens = characters of the reply // 4 + 1 (at most the
request's max_tokens); a test that
plays a lying server sets `usage_of` (its return value is sent as `usage`; OMIT leaves it out).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Messages = list[dict[str, str]]
OMIT = object()  # usage_of's answer for "send no usage at all"
# Replies without end, until the client hangs up: "endless" as fast as the socket takes it,
# "trickle" a byte each TRICKLE_S (no read ever waits long), "huge-length" a declared 10 GB.
HOSTILE = ("endless", "trickle", "huge-length")
TRICKLE_S = 0.05
HUGE = 10 * 2**30


@dataclass
class Script:
    """How the stub behaves; the test may change it while the server runs."""

    reply: Callable[[Messages], str] = lambda messages: "```python\nx = 1\n```"
    key: str | None = None  # the bearer key every request must carry
    served_model: str = "stub-model"
    faults: deque[Any] = field(default_factory=deque)  # 429, 500, "reset", "empty", "notjson"
    retry_after: str | None = None  # sent with a 429
    requests: list[Messages] = field(default_factory=list)  # the chats that got an answer
    unauthorised: int = 0
    usage_of: Callable[[Messages, str], Any] | None = None  # a lying server's usage
    delay_s: float = 0.0  # how long each answer takes (so requests overlap)
    max_in_flight: int | None = None  # more chat requests at once than this: HTTP 429
    in_flight: int = 0
    peak_in_flight: int = 0  # the most chat requests it held at once
    refused_429: int = 0
    get_faults: dict[str, str] = field(default_factory=dict)  # GET path -> a HOSTILE mode
    lock: threading.Lock = field(default_factory=threading.Lock)


def usage(messages: Messages, content: str, max_tokens: int = 2**20) -> dict[str, int]:
    prompt = sum(len(m.get("content", "")) for m in messages) // 4 + 10
    completion = min(len(content) // 4 + 1, max_tokens)  # a server stops at max_tokens
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}  # fmt: skip


def handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _authorised(self) -> bool:
            if script.key is None:
                return True
            if self.headers.get("Authorization") == f"Bearer {script.key}":
                return True
            with script.lock:
                script.unauthorised += 1
            self._send(401, {"error": {"message": "missing or wrong API key"}})
            return False

        def _hostile(self, mode: str) -> None:
            """A 200 whose body never ends (the client's bound must cut it)."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if mode == "huge-length":
                self.send_header("Content-Length", str(HUGE))
            else:
                self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            pad = b"x" * (1 if mode == "trickle" else 65536)
            try:
                self.wfile.write(b'{"pad": "' if mode == "huge-length" else b'9\r\n{"pad": "\r\n')
                while True:
                    if mode == "huge-length":
                        self.wfile.write(pad)
                    else:
                        self.wfile.write(b"%X\r\n%s\r\n" % (len(pad), pad))
                    self.wfile.flush()
                    if mode == "trickle":
                        time.sleep(TRICKLE_S)
            except OSError:  # the client hung up: what it should do
                self.close_connection = True

        def do_GET(self) -> None:
            if not self._authorised():
                return
            if self.path in script.get_faults:
                self._hostile(script.get_faults[self.path])
            elif self.path in ("/v1/models", "/health"):
                self._send(200, {"object": "list", "data": [{"id": script.served_model}]})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self._authorised():
                return
            with script.lock:
                fault = script.faults.popleft() if script.faults else None
                busy = script.max_in_flight is not None and script.in_flight >= script.max_in_flight
                if busy and fault is None:
                    script.refused_429 += 1
                    fault = 429
                elif fault is None:
                    script.in_flight += 1
                    script.peak_in_flight = max(script.peak_in_flight, script.in_flight)
            if fault is None:
                try:
                    self._answer(body)
                finally:
                    with script.lock:
                        script.in_flight -= 1
                return
            self._fault(fault, body)

        def _fault(self, fault: Any, body: dict[str, Any]) -> None:
            if fault in HOSTILE:
                self._hostile(fault)
                return
            if fault == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                self.close_connection = True
                self.connection.close()
                return
            if isinstance(fault, int):
                headers = (
                    {"Retry-After": script.retry_after}
                    if fault == 429 and script.retry_after
                    else {}
                )
                self._send(fault, {"error": {"message": f"stub fault {fault}"}}, headers)
                return
            messages = body.get("messages", [])
            if fault == "notjson":
                self._send(200, b"<html>gateway</html>")
                return
            if fault == "empty":
                self._send(200, {"model": script.served_model, "choices": [],
                                 "usage": usage(messages, "")})  # fmt: skip
                return
            self._answer(body)

        def _answer(self, body: dict[str, Any]) -> None:
            messages = body.get("messages", [])
            if script.delay_s:
                time.sleep(script.delay_s)
            content = script.reply(messages)
            with script.lock:
                script.requests.append(messages)
            answer: dict[str, Any] = {
                "model": script.served_model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": script.usage_of(messages, content) if script.usage_of
                         else usage(messages, content, int(body.get("max_tokens") or 2**20)),
            }  # fmt: skip
            if answer["usage"] is OMIT:
                del answer["usage"]
            self._send(200, answer)

    return Handler


@contextmanager
def serve(script: Script) -> Iterator[str]:
    """Run the stub on a free loopback port; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(script))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
