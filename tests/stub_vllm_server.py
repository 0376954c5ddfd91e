"""A STUB vLLM server, a stand-in for what this machine cannot run: vLLM itself (no CPU build
installs from the package registry here). It is a real HTTP server (http.server, in a thread of
the test process) spoken to over TCP, and it speaks what the harness reads from vLLM:

- OpenAI streaming with NO `timings` (llama.cpp's extension); `usage` in a last chunk with
  empty `choices` when `stream_options.include_usage` asks for it;
- tokens COALESCED into chunks as speculative decoding emits them: each chunk is one engine
  step carrying 1 + accepted draft tokens (sizes cycle through `Script.steps`);
- `/metrics` in the Prometheus text format with `vllm:spec_decode_num_draft_tokens_total` and
  `vllm:spec_decode_num_accepted_tokens_total` (two label sets, summed by the reader), updated
  as each step is sent; `/v1/models` with `max_model_len`, `/version`, `/health`.

The model is scripted: `max_tokens` tokens of the word "tok". Each step proposes
`Script.drafts` draft tokens; a step that emits k tokens accepted k − 1 of them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Script:
    served_model: str = "stub-vllm"
    max_model_len: int = 4096
    steps: tuple[int, ...] = (1, 3, 2, 4)  # tokens per chunk, cycled
    drafts: int = 3  # draft tokens proposed per step
    speculative: bool = True  # False: a server without a drafter exports no spec counters
    drafted: int = 0
    accepted: int = 0
    chats: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def expected_counts(max_tokens: int, script: Script) -> tuple[int, int, int]:
    """(chunks, draft tokens, accepted tokens) of one answer of `max_tokens` tokens."""
    chunks, left, i = [], max_tokens, 0
    while left > 0:
        k = min(script.steps[i % len(script.steps)], left)
        chunks.append(k)
        left, i = left - k, i + 1
    return len(chunks), script.drafts * len(chunks), sum(k - 1 for k in chunks)


def metrics_text(script: Script) -> str:
    if not script.speculative:
        return '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 0.0\n'
    half_d, half_a = script.drafted // 2, script.accepted // 2
    rows = ["# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.",
            "# TYPE vllm:spec_decode_num_draft_tokens_total counter"]  # fmt: skip
    for engine, d in (("0", half_d), ("1", script.drafted - half_d)):
        rows.append(
            f'vllm:spec_decode_num_draft_tokens_total{{engine="{engine}",'
            f'model_name="{script.served_model}"}} {float(d)}'
        )
    rows += ["# TYPE vllm:spec_decode_num_accepted_tokens_total counter"]
    for engine, a in (("0", half_a), ("1", script.accepted - half_a)):
        rows.append(
            f'vllm:spec_decode_num_accepted_tokens_total{{engine="{engine}",'
            f'model_name="{script.served_model}"}} {float(a)}'
        )
    rows.append('vllm:num_requests_running{model_name="a b}c"} 0.0')  # a brace inside quotes
    return "\n".join(rows) + "\n"


def handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                data = [{"id": script.served_model, "object": "model", "owned_by": "vllm",
                         "max_model_len": script.max_model_len}]  # fmt: skip
                self._send(200, json.dumps({"object": "list", "data": data}).encode())
            elif self.path == "/version":
                self._send(200, json.dumps({"version": "0.0.0-stub"}).encode())
            elif self.path == "/health":
                self._send(200, b"")
            elif self.path == "/metrics":
                with script.lock:
                    text = metrics_text(script)
                self._send(200, text.encode(), "text/plain; version=0.0.4")
            else:
                self._send(404, b'{"detail":"Not Found"}')

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/chat/completions":
                self._send(404, b'{"detail":"Not Found"}')
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self._stream(body)

        def _event(self, obj: Any) -> None:
            self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
            self.wfile.flush()

        def _stream(self, body: dict[str, Any]) -> None:
            n = int(body.get("max_tokens") or 16)
            model = script.served_model
            with script.lock:
                script.chats += 1
            base = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": model}
            self._event({**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                     "content": ""}}]})  # fmt: skip
            left, i = n, 0
            while left > 0:
                k = min(script.steps[i % len(script.steps)], left)
                left, i = left - k, i + 1
                with script.lock:
                    script.drafted += script.drafts if script.speculative else 0
                    script.accepted += k - 1 if script.speculative else 0
                choice = {"index": 0, "delta": {"content": "tok " * k},
                          "finish_reason": "length" if left == 0 else None}  # fmt: skip
                self._event({**base, "choices": [choice]})
            if (body.get("stream_options") or {}).get("include_usage"):
                prompt = sum(len(m.get("content", "")) for m in body.get("messages", [])) // 4
                usage = {"prompt_tokens": prompt, "completion_tokens": n,
                         "total_tokens": prompt + n}  # fmt: skip
                self._event({**base, "choices": [], "usage": usage})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler


@contextmanager
def serve(script: Script) -> Iterator[str]:
    """Run the stub on a free loopback port; yields its base URL (without /v1)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(script))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
