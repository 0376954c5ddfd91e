#!/usr/bin/env python3
"""STUB llama-server: a fake that speaks llama-server's HTTP API, for fault-injection tests only.

This is NOT llama.cpp and runs no model. It exists for what a real llama-server cannot be made
to do on demand: fail to start, load slowly, refuse a request, stream anomalies, drop the
connection, hang, or crash mid-session. Everything a real server can do is tested against the
real one; use this only through `--server-bin tests/stub_llama_server.py` in fault tests.

It is stdlib-only so that whatever `python3` the shebang finds (>= 3.11) can run it.

Command line (llama-server's own flags are accepted; the ones it does not know are ignored):

    stub_llama_server.py --host H --port P --alias A -m MODEL --ctx-size N [llama flags...]
                         [--fault SPEC ...] [--stub-token-ms MS]
    stub_llama_server.py --version

SPEC is MODE or MODE@N: apply MODE to the N-th chat request counted from 1, warm-up included
(no @N: to every chat request). MTPSWEEP_STUB_FAULTS may hold more SPECs, comma-separated.
Modes: exit-at-start, slow-start=S, http-400, reasoning, unknown-delta, no-usage, wrong-alias,
disconnect, hang, stall=S, die, exit-after@N, the hostile ones that never end: endless,
pings=S, huge-body, and the lying ones: predicted-ms=MS, nan-cache, impossible-drafts and
slow-from=MS@N (see FAULT_MODES); drafts makes an honest drafter's counts.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import signal
import socket
import socketserver
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NoReturn

VERSION_LINES = ("version: 0.0.0-stub (build 1, commit 5tub5tub)", "built with stub")
# a wrapper built as another build (tests/protocol/test_treatment_builds.py) names its own
BUILD_INFO = os.environ.get("MTPSWEEP_STUB_BUILD_INFO", "b1-5tub5tub")
FAULT_ENV = "MTPSWEEP_STUB_FAULTS"
FEW_EVENTS = 3  # content events sent before disconnect / hang / die
DEFAULT_MAX_TOKENS = 16  # llama-server would generate until EOS; a stub needs a bound

FAULT_MODES: dict[str, str] = {
    "exit-at-start": "print an error and exit 1 before listening",
    # what a build for another CPU does at its first matrix product (SIGILL), and the OOM killer
    "sigill-at-start": "log llama.cpp's last line before its warm-up, then die by SIGILL",
    "sigkill-at-start": "log a loading line, then die by SIGKILL (as the OOM killer ends it)",
    "slow-start": "=S: every endpoint answers 503 'Loading model' for S seconds",
    "http-400": "answer the request with HTTP 400 and a JSON error",
    "reasoning": "send a reasoning_content delta before the content",
    "unknown-delta": "add an unrecognised field to the first content delta",
    "no-usage": "omit the usage chunk",
    "wrong-alias": "report model 'someone-else' in every chunk",
    "disconnect": "close the socket after a few content events, without [DONE]",
    "hang": "stop sending after a few content events, keeping the socket open",
    "stall": "=S: fall silent for S seconds after a few content events, then go on",
    "die": "os._exit(1) the whole server after a few content events",
    "exit-after": "@N: exit 0 once the N-th request has been answered in full",
    # hostile: a reply without end, until the client hangs up
    "endless": "stream content events without end (never a finish); unstreamed: a body without end",
    "pings": "=S: stream only ': ping' SSE comments, one each S seconds, without end",
    "huge-body": "answer one line without end (no newline), as fast as the socket takes it",
    # lying: numbers a server's timings cannot truly hold (issue 43)
    "predicted-ms": "=MS: claim timings.predicted_ms MS (1e-9: a decode no stream allows)",
    "nan-cache": "claim timings.cache_n NaN (written as JSON's non-standard NaN)",
    # a stand-in for a host gone busy mid-session: the decode slows and stays slow
    "slow-from": "=MS@N: from the N-th request on (no @N: from the first), MS per token",
    # a drafter's counts (issue 49): honest ones, and ones that cannot be
    "drafts": "report draft_n n-1 and draft_n_accepted (n-1)//2, as a drafting server does",
    "impossible-drafts": "claim draft_n_accepted 5 of draft_n 2 (more accepted than drafted)",
}
STARTUP_MODES = frozenset({"exit-at-start", "slow-start", "sigill-at-start", "sigkill-at-start"})
DEATHS = {"sigill-at-start": signal.SIGILL, "sigkill-at-start": signal.SIGKILL}
NEEDS_N = frozenset({"exit-after"})
TIMED_MODES = ("slow-start", "stall", "pings", "predicted-ms", "slow-from")  # MODE=SECONDS (or MS)
PAD = b"x" * 65536  # huge-body's unending line, a write at a time


class FaultError(ValueError):
    """A --fault SPEC that does not parse."""


@dataclass(frozen=True)
class Fault:
    mode: str
    nth: int | None = None  # None: every chat request
    seconds: float = 0.0  # slow-start and stall only

    def applies(self, request_no: int) -> bool:
        return self.nth is None or self.nth == request_no


def parse_fault(spec: str) -> Fault:
    """`MODE`, `MODE@N` or `slow-start=S`; raises FaultError with the reason."""
    text = spec.strip()
    nth: int | None = None
    if "@" in text:
        text, _, n_text = text.partition("@")
        try:
            nth = int(n_text)
        except ValueError:
            raise FaultError(f"fault {spec!r}: @N must be an integer") from None
        if nth < 1:
            raise FaultError(f"fault {spec!r}: requests count from 1")
    mode, eq, value = text.partition("=")
    if mode not in FAULT_MODES:
        raise FaultError(f"fault {spec!r}: unknown mode; known: {', '.join(FAULT_MODES)}")
    seconds = 0.0
    if mode in TIMED_MODES:
        if not eq:
            raise FaultError(f"fault {spec!r}: {mode} needs =SECONDS")
        try:
            seconds = float(value)
        except ValueError:
            raise FaultError(f"fault {spec!r}: {value!r} is not a number of seconds") from None
    elif eq:
        raise FaultError(f"fault {spec!r}: only {', '.join(TIMED_MODES)} take =VALUE")
    if mode in STARTUP_MODES and nth is not None:
        raise FaultError(f"fault {spec!r}: {mode} happens at start-up and takes no @N")
    if mode in NEEDS_N and nth is None:
        raise FaultError(f"fault {spec!r}: {mode} needs @N")
    return Fault(mode, nth, seconds)


def die_by(sig: signal.Signals) -> NoReturn:
    """End this process by `sig` with its default action, no core file (a crash, as the kernel
    delivers it to a binary that runs an instruction its CPU lacks)."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.stderr.write("llama threadpool init, n_threads = 2\n")
    sys.stderr.flush()
    if sig != signal.SIGKILL:  # SIGKILL has no handler to reset
        signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    time.sleep(5)  # the signal arrives first
    os._exit(3)


def log(message: str) -> None:
    # Flushed at once: a later os._exit must not swallow it.
    sys.stderr.write(f"stub: {message}\n")
    sys.stderr.flush()


@dataclass
class StubState:
    """What every handler thread shares: identity, faults and the request counter."""

    alias: str
    model: str
    n_ctx: int
    slots: int
    token_s: float
    faults: tuple[Fault, ...]
    started: float = field(default_factory=time.monotonic)
    stop: threading.Event = field(default_factory=threading.Event)
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_request(self) -> int:
        with self._lock:
            self._count += 1
            return self._count

    def loading(self) -> bool:
        waits = [f.seconds for f in self.faults if f.mode == "slow-start"]
        return bool(waits) and time.monotonic() - self.started < max(waits)

    def token_pause(self, request_no: int) -> float:
        """Seconds between tokens: --stub-token-ms, or slow-from's once its request is reached."""
        slow = [
            f.seconds for f in self.faults if f.mode == "slow-from" and (f.nth or 1) <= request_no
        ]
        return max(slow) / 1000.0 if slow else self.token_s

    def modes_for(self, request_no: int) -> frozenset[str]:
        return frozenset(
            f.mode for f in self.faults if f.mode not in STARTUP_MODES and f.applies(request_no)
        )


class StubServer(ThreadingHTTPServer):
    daemon_threads = True
    # A hung handler must not keep server_close() (and so SIGTERM) waiting.
    block_on_close = False

    def __init__(self, host: str, port: int, state: StubState) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.state = state
        super().__init__((host, port), StubHandler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would also run getfqdn(host), a DNS lookup that can stall.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class StubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked streaming, as llama-server does
    server_version = "stub-llama-server"
    server: StubServer
    note = ""  # appended to the request's log line
    last = False  # exit-after: this response is the server's last

    def setup(self) -> None:
        super().setup()
        # Each SSE event is one small write; Nagle would hold it back and distort timings.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @property
    def state(self) -> StubState:
        return self.server.state

    # -- plumbing ----------------------------------------------------------------------------

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        log(f'{self.address_string()} "{self.requestline}" {code}{self.note}')

    def log_message(self, format: str, *args: Any) -> None:
        log(format % args)

    def end_headers(self) -> None:
        if self.last:
            # The next request must not arrive on this connection while the process exits.
            self.send_header("Connection", "close")
        super().end_headers()

    def send_json(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_error_json(self, code: int, message: str, kind: str) -> None:
        self.send_json(code, {"error": {"code": code, "message": message, "type": kind}})

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def loading_refusal(self) -> bool:
        if not self.state.loading():
            return False
        self.send_json(503, {"error": {"code": 503, "message": "Loading model"}})
        return True

    # -- endpoints ---------------------------------------------------------------------------

    def do_GET(self) -> None:
        self.note, self.last = "", False  # a kept-alive connection serves many requests
        path = self.path.split("?", 1)[0]
        if self.loading_refusal():
            return
        st = self.state
        if path in ("/health", "/v1/health"):
            self.send_json(200, {"status": "ok"})
        elif path == "/props":
            self.send_json(
                200,
                {
                    "build_info": BUILD_INFO,
                    "model_path": st.model,
                    "model_alias": st.alias,
                    "total_slots": st.slots,
                    "default_generation_settings": {"n_ctx": st.n_ctx},
                },
            )
        elif path in ("/models", "/v1/models"):
            self.send_json(
                200,
                {
                    "object": "list",
                    "data": [{"id": st.alias, "object": "model", "owned_by": "stub"}],
                },
            )
        else:
            self.send_error_json(404, "File Not Found", "not_found_error")

    def do_POST(self) -> None:
        self.note, self.last = "", False
        path = self.path.split("?", 1)[0]
        raw = self.read_body()
        if self.loading_refusal():
            return
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self.send_error_json(404, "File Not Found", "not_found_error")
            return
        n = self.state.next_request()
        modes = self.state.modes_for(n)
        self.note = f" request={n}" + (f" faults={','.join(sorted(modes))}" if modes else "")
        self.last = "exit-after" in modes
        try:
            self.answer_chat(n, raw, modes)
        except (BrokenPipeError, ConnectionResetError):
            log(f"request {n}: the client went away")
            self.close_connection = True
            return
        if "exit-after" in modes:
            log(f"request {n}: exit-after fault, exiting")
            self.state.stop.set()

    # -- completions -------------------------------------------------------------------------

    def answer_chat(self, n: int, raw: bytes, modes: frozenset[str]) -> None:
        if "http-400" in modes:
            self.send_error_json(400, "stream_options not supported", "invalid_request_error")
            return
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            self.send_error_json(400, f"bad request body: {exc}", "invalid_request_error")
            return
        if body.get("stream"):
            self.stream_completion(n, body, modes)
        else:
            self.whole_completion(n, body, modes)

    def stream_completion(self, n: int, body: dict[str, Any], modes: frozenset[str]) -> None:
        st = self.state
        tokens = make_tokens(body)
        opts = body.get("stream_options")
        include_usage = isinstance(opts, dict) and bool(opts.get("include_usage"))
        base = {
            "id": f"chatcmpl-stub{n}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": "someone-else" if "wrong-alias" in modes else st.alias,
            "system_fingerprint": BUILD_INFO,
        }

        def event(payload: dict[str, Any] | str) -> None:
            text = payload if isinstance(payload, str) else json.dumps({**base, **payload})
            data = f"data: {text}\n\n".encode()
            # One write per event, framing included, so no event is split across packets.
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        if "pings" in modes:  # nothing but comments: no event, no end
            pause = max(f.seconds for f in st.faults if f.mode == "pings" and f.applies(n))
            log(f"request {n}: pings fault, a comment each {pause:g} s without end")
            while True:
                self.write_chunk(b": ping\n\n")
                time.sleep(pause)
        if "huge-body" in modes:
            log(f"request {n}: huge-body fault, one line without end")
            self.write_forever(b'data: {"pad": "')
        event(choice({"role": "assistant", "content": None}))
        if "endless" in modes:
            log(f"request {n}: endless fault, content without end")
            for i in itertools.count():
                event(choice({"content": f"tok{i % 1000} "}))
                time.sleep(st.token_s)
        if "reasoning" in modes:
            event(choice({"reasoning_content": "thinking..."}))
        few = min(FEW_EVENTS, len(tokens))
        pause = st.token_pause(n)
        first = last = time.monotonic()
        if few == 0 and self.fault_mid_stream(n, modes):
            return
        for i, tok in enumerate(tokens):
            if i:
                time.sleep(pause)
            delta: dict[str, Any] = {"content": tok}
            if i == 0 and "unknown-delta" in modes:
                delta["secret_field"] = 1
            event(choice(delta))
            first, last = (time.monotonic(),) * 2 if i == 0 else (first, time.monotonic())
            if i + 1 == few and self.fault_mid_stream(n, modes):
                return
        event(choice({}, "length"))
        if include_usage and "no-usage" not in modes:
            # An honest clock: llama-server's predicted_ms is the decode's wall time (a stall
            # and a busy host's late sleeps included), which the client checks its arrivals
            # against (rig/timings.py).
            usage = usage_fields(body, len(tokens), pause, 1000.0 * (last - first))
            if "predicted-ms" in modes:
                claim = max(
                    f.seconds for f in st.faults if f.mode == "predicted-ms" and f.applies(n)
                )
                usage["timings"]["predicted_ms"] = claim
            if "nan-cache" in modes:
                usage["timings"]["cache_n"] = math.nan
            if "drafts" in modes:
                usage["timings"].update(
                    draft_n=len(tokens) - 1, draft_n_accepted=(len(tokens) - 1) // 2
                )
            if "impossible-drafts" in modes:
                usage["timings"].update(draft_n=2, draft_n_accepted=5)
            event({"choices": [], **usage})
        event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def fault_mid_stream(self, n: int, modes: frozenset[str]) -> bool:
        """Act on die / hang / disconnect; True when the stream must stop here."""
        if "die" in modes:
            log(f"request {n}: die fault, os._exit(1) mid-stream")
            os._exit(1)
        if "stall" in modes:
            pause = max(f.seconds for f in self.state.faults if f.mode == "stall" and f.applies(n))
            log(f"request {n}: stall fault, silent for {pause:g} s")
            time.sleep(pause)
        if "hang" in modes:
            log(f"request {n}: hang fault, going silent")
            self.close_connection = True
            time.sleep(3600)
            return True
        if "disconnect" in modes:
            log(f"request {n}: disconnect fault, closing without [DONE]")
            self.close_connection = True
            # No chunked terminator: the client must see a truncated body, not a finished one.
            self.connection.shutdown(socket.SHUT_RDWR)
            return True
        return False

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def write_forever(self, start: bytes) -> NoReturn:
        """`start`, then padding without end or newline, until the client hangs up (the write
        raises, and do_POST logs that the client went away)."""
        self.write_chunk(start)
        while True:
            self.write_chunk(PAD)

    def whole_completion(self, n: int, body: dict[str, Any], modes: frozenset[str]) -> None:
        if modes & {"endless", "huge-body"}:
            log(f"request {n}: {'/'.join(sorted(modes))} fault, a body without end")
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.write_forever(b'{"pad": "')
        tokens = make_tokens(body)
        time.sleep(self.state.token_s * len(tokens))
        message: dict[str, Any] = {"role": "assistant", "content": "".join(tokens)}
        if "reasoning" in modes:
            message["reasoning_content"] = "thinking..."
        out: dict[str, Any] = {
            "id": f"chatcmpl-stub{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "someone-else" if "wrong-alias" in modes else self.state.alias,
            "choices": [{"index": 0, "message": message, "finish_reason": "length"}],
        }
        if "no-usage" not in modes:
            out.update(usage_fields(body, len(tokens), self.state.token_s))
        self.send_json(200, out)


def prompt_text(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages", []), sort_keys=True)


def make_tokens(body: dict[str, Any]) -> list[str]:
    """max_tokens words, the same for the same prompt and seed."""
    raw = body.get("max_tokens", body.get("n_predict", DEFAULT_MAX_TOKENS))
    count = raw if isinstance(raw, int) and raw >= 0 else DEFAULT_MAX_TOKENS
    key = f"{prompt_text(body)}|{body.get('seed')}".encode()
    digest = hashlib.sha256(key).digest()
    start, step = int.from_bytes(digest[:2]), digest[2] | 1
    return [f"tok{(start + i * step) % 1000} " for i in range(count)]


def usage_fields(
    body: dict[str, Any], n_tokens: int, token_s: float, measured_ms: float | None = None
) -> dict[str, Any]:
    # A crude token count, but stable: the same prompt always reports the same prompt_n.
    prompt_n = len(prompt_text(body).split()) + 4
    # Streamed: the decode's measured wall time; whole: the nominal pace (nothing to check it).
    nominal = max(n_tokens - 1, 0) * token_s * 1000.0
    predicted_ms = nominal if measured_ms is None else measured_ms
    return {
        "usage": {
            "completion_tokens": n_tokens,
            "prompt_tokens": prompt_n,
            "total_tokens": prompt_n + n_tokens,
        },
        "timings": {
            "prompt_n": prompt_n,
            "prompt_ms": 1.0,
            "prompt_per_second": prompt_n * 1000.0,
            "predicted_n": n_tokens,
            "predicted_ms": predicted_ms,
            "predicted_per_second": n_tokens * 1000.0 / predicted_ms if predicted_ms > 0 else 0.0,
            "cache_n": 0,
        },
    }


# llama-server's short spellings of the flags the stub reads. They are rewritten to the long
# form up front because argparse would read an unknown `-md PATH` as `-m d` or `-ctk` as `-c tk`.
SHORT_FLAGS = {"-m": "--model", "-c": "--ctx-size", "-a": "--alias", "-np": "--parallel"}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="stub_llama_server.py",
        description="STUB llama-server for fault-injection tests (not llama.cpp).",
        add_help=False,  # `-h` would swallow llama-server's `-hf`
        allow_abbrev=False,  # `--ctx` or `--fa` must not pass for --ctx-size or --fault
    )
    p.add_argument("--help", action="help")
    p.add_argument("--version", action="store_true")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--model", default="stub.gguf")
    p.add_argument("--alias")
    p.add_argument("--ctx-size", type=int, default=4096)
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--fault", action="append", default=[], metavar="SPEC")
    p.add_argument("--stub-token-ms", type=float, default=2.0, metavar="MS")
    args, _ignored = p.parse_known_args([SHORT_FLAGS.get(a, a) for a in argv])
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.version:
        for line in VERSION_LINES:  # llama-server prints these to stderr
            print(line, file=sys.stderr)
        return 0
    specs = [s for s in os.environ.get(FAULT_ENV, "").split(",") if s.strip()] + args.fault
    try:
        faults = tuple(parse_fault(s) for s in specs)
    except FaultError as exc:
        log(f"error: {exc}")
        return 2
    if any(f.mode == "exit-at-start" for f in faults):
        log("error: exit-at-start fault: failed to load model (stub)")
        return 1
    for f in faults:
        if f.mode in DEATHS:
            die_by(DEATHS[f.mode])
    state = StubState(
        alias=args.alias or os.path.basename(args.model),
        model=args.model,
        n_ctx=args.ctx_size,
        slots=max(args.parallel, 1),
        token_s=max(args.stub_token_ms, 0.0) / 1000.0,
        faults=faults,
    )

    def on_signal(signum: int, _frame: object) -> None:
        log(f"received {signal.Signals(signum).name}, shutting down")
        state.stop.set()

    # Installed before binding so that a stop that arrives early is still clean.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server = StubServer(args.host, args.port, state)
    except OSError as exc:
        log(
            f"error: couldn't bind HTTP server socket, hostname: {args.host}, port: {args.port}: {exc}"
        )
        return 1
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    log(
        f"STUB llama-server listening on http://{args.host}:{args.port} "
        f"alias={state.alias} model={state.model} n_ctx={state.n_ctx} "
        f"faults={','.join(specs) or 'none'}"
    )
    # A timed wait, so the signal handler runs promptly in this (main) thread.
    while not state.stop.wait(0.1):
        pass
    server.shutdown()
    server.server_close()
    log("stopped")
    # os._exit, not a return: daemon handler threads (a hang, a stream) could otherwise still be
    # writing at interpreter shutdown and turn a clean stop into a fatal-error abort.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
