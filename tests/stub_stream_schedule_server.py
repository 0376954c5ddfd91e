#!/usr/bin/env python3
"""STAND-IN streaming server: SSE chat chunks on a KNOWN schedule, for the load client's tests
and bench only.

This is no inference server and runs no model. It answers /v1/chat/completions with
stream=true as an OpenAI-compatible server would, but on a schedule it states: the first token
`ttft_ms` after the request takes a slot, then one token every `itl_ms`, `max_tokens` tokens,
finish_reason "length", usage in the last chunk. With `slots` fewer than the requests in flight,
the rest queue (first come, first served), so a client can be shown a server that cannot keep
up; past `max_queue` waiting requests it answers 429. Each chunk carries, beside the OpenAI
fields, `"stub": {"recv_ns", "start_ns", "due_ns", "sent_ns"}` (the request read, its slot
taken, the chunk due, the chunk sent) on CLOCK_MONOTONIC, which every process of the host
shares, so a bench can split the client's share of a delay from the stand-in's own.

A directive in the prompt text changes one request (`!name=value`, several allowed):
  !status=CODE   answer HTTP CODE with a JSON error, no stream
  !truncate=K    close the connection after K tokens, without finish, usage or [DONE]
  !usage=JSON    send this usage object (compact JSON, no spaces); !usage=none omits usage
  !reasoning=K   send the first K tokens as reasoning_content
  !per_chunk=K   put K tokens in each chunk
  !ttft_ms=X, !itl_ms=X   this request's schedule
  !model=NAME    answer as model NAME (every chunk's `model`); !model=none leaves it out
A request with "timings_per_token": true gets llama-server's cumulative `timings` in every chunk.

A simulated prefix cache (`--prefill-us-per-token` above 0): a request's prompt is its
messages' words (each message `role:` then its content split on whitespace) and each word a
token; the first token waits `prefill_us_per_token` for every prompt token not cached, on top of
`ttft_ms`. With "cache_prompt": true the longest prefix shared with one of the last
`--cache-entries` prompts (each kept with the words it answered) is cached, at most all but the
prompt's last token (as llama-server re-reads its last token); the final chunk then says so as
llama-server does: `usage.prompt_tokens` the prompt's tokens,
`usage.prompt_tokens_details.cached_tokens` and `timings.cache_n` the cached ones,
`timings.prompt_n` the rest. `--cache-entries 0` caches nothing (cache_n 0): a server without
a prompt cache. A request without cache_prompt is answered as before (usage prompt_tokens 8).

With `slots`, GET /props answers `{"total_slots": slots}` and GET /slots llama-server's list of
slots (`is_processing` for as many as are streaming), so a client can witness the slot count.
GET /stats answers the server's own counters (requests, in_flight, max_in_flight, active,
max_active, queued, max_queued, rejected, bearer); POST /stats/reset zeroes them. With `--log
PATH` every chat request appends one JSON line there as it is read (`recv_ns` on
CLOCK_MONOTONIC, its `max_tokens`, the last message's `content`): a witness of what a client
sent and when, on the stand-in's own clock. GET /bodies
answers the last `BODIES` chat requests' bodies as they came, oldest first (what a client sent).

Stdlib only (asyncio streams). Command line:

    stub_stream_schedule_server.py [--host 127.0.0.1] [--port 0] [--ttft-ms 20] [--itl-ms 10]
                                   [--slots 0 (unlimited)] [--max-queue -1 (unlimited)]
                                   [--model stand-in (the name every answer carries)]
                                   [--log PATH (each chat request's time and content)]
                                   [--prefill-us-per-token 0] [--cache-entries 16]

It prints `listening on HOST:PORT` once it accepts connections, and stops on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import selectors
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Any

MODEL = "stand-in"
now = time.monotonic_ns
HIGH_WATER = 64 * 1024  # wait for the socket to drain only past this much unsent
BODIES = 256  # chat request bodies kept for GET /bodies
# A token chunk written from a template: json.dumps per chunk would double the stand-in's CPU,
# and its own lateness is what a bench must keep small. The words are plain ASCII.
TOKEN = (
    'data: {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "model": "stand-in", '
    '"choices": [{"index": 0, "delta": {"%s": "%s"}, "finish_reason": null}], '
    '"stub": {"recv_ns": %d, "start_ns": %d, "due_ns": %d, "sent_ns": %d}}\n\n'
)


@dataclass(frozen=True)
class Schedule:
    """When the tokens of one request are due, counted from the moment it takes a slot."""

    ttft_ms: float = 20.0
    itl_ms: float = 10.0
    slots: int = 0  # 0: unlimited
    max_queue: int = -1  # -1: unlimited
    model: str = MODEL  # the `model` every chunk names (another: a wrong server answered)
    log: str | None = None  # append each chat request's recv_ns, max_tokens, content here
    prefill_us: float = 0.0  # per uncached prompt token, before the first token (0: no cache)
    cache_entries: int = 16  # prompts (with their answers) the simulated cache keeps


@dataclass
class Counters:
    """The stand-in's own witness of what the client did to it."""

    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    active: int = 0
    max_active: int = 0
    queued: int = 0
    max_queued: int = 0
    rejected: int = 0
    bearer: int = 0  # requests that carried an `Authorization: Bearer` header

    def as_json(self) -> dict[str, int]:
        return dict(vars(self))


class Slots:
    """`n` slots served first come, first served: a freed slot passes straight to the longest
    waiting request (asyncio.Semaphore lets a newcomer take it first)."""

    def __init__(self, n: int) -> None:
        self.free = n
        self.waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def full(self) -> bool:
        return self.free == 0 or bool(self.waiters)

    async def take(self) -> None:
        if not self.full():
            self.free -= 1
            return
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        await fut

    def give_back(self) -> None:
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():  # a waiter whose client left was cancelled: skip it
                fut.set_result(None)
                return
        self.free += 1


@dataclass
class StandIn:
    schedule: Schedule
    counters: Counters = field(default_factory=Counters)
    slots: Slots | None = None
    cache: list[tuple[str, ...]] = field(default_factory=list)  # the simulated prefix cache
    bodies: collections.deque[Any] = field(default_factory=lambda: collections.deque(maxlen=BODIES))

    def __post_init__(self) -> None:
        if self.schedule.slots > 0:
            self.slots = Slots(self.schedule.slots)


def directives(body: dict[str, Any]) -> dict[str, str]:
    """The `!name=value` words of the last message's text."""
    messages = body.get("messages")
    text = ""
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        text = str(messages[-1].get("content") or "")
    found: dict[str, str] = {}
    for word in text.split():
        if word.startswith("!") and "=" in word:
            name, _, value = word[1:].partition("=")
            found[name] = value
    return found


async def read_request(
    reader: asyncio.StreamReader,
) -> tuple[str, str, dict[str, str], bytes] | None:
    """One HTTP/1.1 request (method, path, headers, body), or None when the client closed."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return method, path.split("?", 1)[0], headers, body


def response(code: int, body: Any, extra: str = "") -> bytes:
    data = json.dumps(body).encode()
    head = (
        f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n{extra}\r\n"
    )
    return head.encode() + data


def chunk(payload: bytes) -> bytes:
    return b"%X\r\n%s\r\n" % (len(payload), payload)


async def handle(stand_in: StandIn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
    sock = w.get_extra_info("socket")
    if sock is not None:  # one small write per event: Nagle would hold it back
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while (req := await read_request(reader)) is not None:
            method, path, headers, raw = req
            if headers.get("authorization", "").startswith("Bearer "):
                stand_in.counters.bearer += 1
            if path == "/stats" and method == "GET":
                w.write(response(200, stand_in.counters.as_json()))
            elif path == "/stats/reset" and method == "POST":
                stand_in.counters = Counters()
                w.write(response(200, {}))
            elif path == "/bodies" and method == "GET":
                w.write(response(200, list(stand_in.bodies)))
            elif path == "/health":
                w.write(response(200, {"status": "ok"}))
            elif path == "/props" and stand_in.slots is not None:
                w.write(response(200, {"total_slots": stand_in.schedule.slots}))
            elif path == "/slots" and stand_in.slots is not None:
                active = stand_in.counters.active
                busy = [
                    {"id": i, "is_processing": i < active} for i in range(stand_in.schedule.slots)
                ]
                w.write(response(200, busy))
            elif path == "/v1/chat/completions" and method == "POST":
                body = json.loads(raw or b"{}")
                stand_in.bodies.append(body)
                if not await chat(stand_in, body, w):
                    break
            else:
                w.write(response(404, {"error": {"message": "not found"}}))
            await w.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        w.close()
        with contextlib.suppress(ConnectionError):
            await w.wait_closed()


async def chat(stand_in: StandIn, body: dict[str, Any], w: asyncio.StreamWriter) -> bool:
    """Answer one chat request; False when the connection must close."""
    recv = now()
    if stand_in.schedule.log:
        messages = body.get("messages") or [{}]
        seen = {"recv_ns": recv, "max_tokens": body.get("max_tokens"),
                "content": messages[-1].get("content")}  # fmt: skip
        with open(stand_in.schedule.log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(seen) + "\n")
    c = stand_in.counters
    c.requests += 1
    c.in_flight += 1
    c.max_in_flight = max(c.max_in_flight, c.in_flight)
    try:
        d = directives(body)
        if "status" in d:
            code = int(d["status"])
            w.write(response(code, {"error": {"code": code, "message": "as directed"}}))
            return True
        slots = stand_in.slots
        waiting = slots is not None and slots.full()
        if waiting:
            if 0 <= stand_in.schedule.max_queue <= c.queued:
                c.rejected += 1
                w.write(response(429, {"error": {"message": "busy"}}, "Retry-After: 1\r\n"))
                return True
            c.queued += 1
            c.max_queued = max(c.max_queued, c.queued)
        if slots is not None:
            try:
                await slots.take()
            finally:
                if waiting:
                    c.queued -= 1
        c.active += 1
        c.max_active = max(c.max_active, c.active)
        try:
            return await stream(stand_in.schedule, body, d, w, recv, stand_in.cache)
        finally:
            c.active -= 1
            if slots is not None:
                slots.give_back()
    finally:
        c.in_flight -= 1


async def sleep_until(t_ns: int) -> None:
    delay = t_ns - now()
    if delay > 0:
        await asyncio.sleep(delay / 1e9)


def prompt_words(body: dict[str, Any]) -> tuple[str, ...]:
    """The simulated cache's tokens of a prompt: each message's `role:` and its words."""
    out: list[str] = []
    for m in body.get("messages") or []:
        if isinstance(m, dict):
            out += [f"{m.get('role')}:", *str(m.get("content") or "").split()]
    return tuple(out)


def cached(cache: list[tuple[str, ...]], words: tuple[str, ...]) -> int:
    """The longest prefix of `words` one entry holds, all but the last word at most."""
    best = 0
    for entry in cache:
        n = 0
        for a, b in zip(entry, words, strict=False):
            if a != b:
                break
            n += 1
        best = max(best, n)
    return min(best, max(len(words) - 1, 0))


async def stream(
    schedule: Schedule, body: dict[str, Any], d: dict[str, str], w: Any, recv: int,
    cache: list[tuple[str, ...]] | None = None,
) -> bool:  # fmt: skip
    t0 = now()
    ttft_ns = int(float(d.get("ttft_ms", schedule.ttft_ms)) * 1e6)
    simulated = schedule.prefill_us > 0 and body.get("cache_prompt") is True
    prompt = prompt_words(body) if simulated else ()
    cache_n = (
        cached(cache, prompt) if simulated and cache is not None and schedule.cache_entries else 0
    )
    if simulated:
        ttft_ns += int((len(prompt) - cache_n) * schedule.prefill_us * 1e3)
    itl_ns = int(float(d.get("itl_ms", schedule.itl_ms)) * 1e6)
    raw_n = body.get("max_tokens")
    n = raw_n if isinstance(raw_n, int) and raw_n >= 0 else 16
    per_chunk = max(int(d.get("per_chunk", "1")), 1)
    reasoning = int(d.get("reasoning", "0"))
    truncate = int(d["truncate"]) if "truncate" in d else None
    per_token = bool(body.get("timings_per_token"))
    model = d.get("model", schedule.model)
    base: dict[str, Any] = {"id": "chatcmpl-standin", "object": "chat.completion.chunk"}
    template = TOKEN
    if model != MODEL:  # the fast template names the stand-in's own model
        named = "" if model == "none" else f'"model": {json.dumps(model)}, '
        template = TOKEN.replace('"model": "stand-in", ', named.replace("%", "%%"))
    if model != "none":
        base["model"] = model
    w.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
    )

    def event(payload: dict[str, Any], due: int) -> None:
        sent = now()
        stub = {"recv_ns": recv, "start_ns": t0, "due_ns": due, "sent_ns": sent}
        data = json.dumps({**base, **payload, "stub": stub})
        w.write(chunk(b"data: %s\n\n" % data.encode()))

    def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    async def drain() -> None:
        if w.transport.get_write_buffer_size() > HIGH_WATER:
            await w.drain()

    event(choice({"role": "assistant", "content": None}), t0)
    await w.drain()
    sent_tokens = 0
    while sent_tokens < n:
        due = t0 + ttft_ns + (sent_tokens // per_chunk) * itl_ns
        await sleep_until(due)
        k = min(per_chunk, n - sent_tokens)
        key = "reasoning_content" if sent_tokens < reasoning else "content"
        words = "".join(f"t{sent_tokens + i} " for i in range(k))
        sent_tokens += k
        if per_token:
            payload = choice({key: words})
            payload["timings"] = {"predicted_n": sent_tokens}
            event(payload, due)
        else:
            data = template % (key, words, recv, t0, due, now())
            w.write(chunk(data.encode()))
        await drain()
        if truncate is not None and sent_tokens >= truncate:
            return False  # no terminating chunk: the client sees a cut-short body
    due = now()
    event(choice({}, "length"), due)
    usage: Any = {"prompt_tokens": 8, "completion_tokens": n, "total_tokens": 8 + n}
    timings: dict[str, Any] = {"predicted_n": n, "predicted_ms": max(n - 1, 0) * itl_ns / 1e6}
    if simulated:
        p = len(prompt)
        usage = {"prompt_tokens": p, "completion_tokens": n, "total_tokens": p + n,
                 "prompt_tokens_details": {"cached_tokens": cache_n}}  # fmt: skip
        timings |= {"cache_n": cache_n, "prompt_n": p - cache_n}
        if cache is not None and schedule.cache_entries:
            answer = [f"t{i}" for i in range(n)]
            cache.append((*prompt, "assistant:", *answer))
            del cache[: -schedule.cache_entries]
    if "usage" in d:
        usage = None if d["usage"] == "none" else json.loads(d["usage"])
    if usage is not None:
        event({"choices": [], "usage": usage, "timings": timings}, due)
    w.write(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    await w.drain()
    return True


async def serve(host: str, port: int, schedule: Schedule, ready: asyncio.Future[int]) -> None:
    """Serve until cancelled; `ready` gets the port once connections are accepted."""
    stand_in = StandIn(schedule)
    server = await asyncio.start_server(
        lambda r, w: handle(stand_in, r, w), host, port, backlog=1024
    )
    async with server:
        ready.set_result(server.sockets[0].getsockname()[1])
        await server.serve_forever()


def new_loop() -> asyncio.AbstractEventLoop:
    # select(2) takes a timeout in microseconds; epoll's is in milliseconds, and asyncio's
    # timers on it would wake up to 1 ms late, blurring the schedule this stand-in promises.
    return asyncio.SelectorEventLoop(selectors.SelectSelector())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="STAND-IN streaming server (no model).")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ttft-ms", type=float, default=20.0)
    p.add_argument("--itl-ms", type=float, default=10.0)
    p.add_argument("--slots", type=int, default=0)
    p.add_argument("--max-queue", type=int, default=-1)
    p.add_argument("--model", default=MODEL)
    p.add_argument("--log", default=None)
    p.add_argument("--prefill-us-per-token", type=float, default=0.0)
    p.add_argument("--cache-entries", type=int, default=16)
    a = p.parse_args(argv)
    schedule = Schedule(a.ttft_ms, a.itl_ms, a.slots, a.max_queue, a.model, a.log,
                        a.prefill_us_per_token, a.cache_entries)  # fmt: skip
    loop = new_loop()
    ready: asyncio.Future[int] = loop.create_future()
    task = loop.create_task(serve(a.host, a.port, schedule, ready))
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    ready.add_done_callback(lambda f: print(f"listening on {a.host}:{f.result()}", flush=True))
    with contextlib.suppress(asyncio.CancelledError):
        loop.run_until_complete(task)
    loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
