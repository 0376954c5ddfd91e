"""Many streamed chat completions at once: one level of load, closed or open loop.

Closed loop (`ClosedLoop`): N lanes, each sends its next request when its last one ends. Open
loop (`OpenLoop`): requests go at the intended times of a seeded Poisson schedule
(`arrivals.poisson_schedule`), however the server keeps up; latency counts from the intended
time (coordinated omission), and a send that went late says by how much. Either runs a count
of requests or a duration: closed loop then sends while time remains, open loop the arrivals
within it (`OpenLoop.within`); the requests sent by then finish.

The timed loop per request only stamps each network read (monotonic ns) in the event loop's own
read callback and keeps its bytes (`wire`: why not httpx there); parsing waits until the level
has ended (`reads.reduce_request`). Connections are kept alive, at most one per lane
(closed loop) or per request in flight (open loop); one found closed before any byte of its
answer (the server dropped an idle keep-alive) is replaced and the request sent again once.
The client watches itself: a monitor task wakes every `monitor_ms` and records how late it woke (event-loop lag);
each chunk takes the lag of the next wake, each send its lag behind the intended time.

Timers: asyncio on epoll sleeps in whole milliseconds (a timer wakes up to 1 ms late), so the
level runs on its own event loop over select(2), whose timeout is in microseconds, and spins
the last `spin_us` before each intended send (yielding to the loop, so streams still flow).
select(2) takes descriptors below 1024 only: with too little room the default loop is used and
the run says so (`LevelRun.timer`).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import selectors
import socket
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from ....kindapi.records import redact_url
from ....kindapi.rig import ReadBound
from .arrivals import poisson_schedule, poisson_until
from .http1 import Exchange, Pool, Wire
from .payload import (
    LoadSpec,
    LoadTarget,
    PromptLike,
    auth_headers,
    check_target,
    request_bytes,
)
from .reads import RawRequest, StreamRecord, reduce_request

now = time.monotonic_ns
SELECT_FD_LIMIT = 1024  # FD_SETSIZE on Linux
FD_MARGIN = 128  # descriptors the rest of the process may open during a level
LEAD_NS = 2_000_000  # an open-loop request's task starts this long before its intended time


@dataclass(frozen=True)
class ClosedLoop:
    """N lanes: `requests` in all, or (requests None) new ones while `duration_s` remains."""

    concurrency: int
    requests: int | None
    duration_s: float | None = None  # lanes take the next slot until then; those sent finish

    @property
    def connections(self) -> int:
        if self.requests is None:
            return max(self.concurrency, 1)
        return max(min(self.concurrency, self.requests), 1)


@dataclass(frozen=True)
class OpenLoop:
    rate: float  # requests/s
    requests: int
    seed: int
    max_in_flight: int = 256  # past this a request waits for one to end, and its send lags
    duration_s: float | None = None  # set by `within`: the schedule is the arrivals in it
    arrivals: tuple[int, ...] | None = None  # a replay's own times (ns from the start), not Poisson

    @classmethod
    def within(
        cls, rate: float, duration_s: float, seed: int, max_in_flight: int = 256
    ) -> OpenLoop:
        """The seeded arrivals whose intended time is within `duration_s` (the same prefix of
        the schedule for every treatment, so its requests still pair by slot)."""
        n = len(poisson_until(rate, duration_s, seed))
        return cls(rate, n, seed, max_in_flight, duration_s)

    @property
    def connections(self) -> int:
        return max(min(self.max_in_flight, self.requests), 1)

    @property
    def schedule(self) -> tuple[int, ...]:
        if self.arrivals is not None:
            return self.arrivals
        return poisson_schedule(self.rate, self.requests, self.seed)


@dataclass(frozen=True)
class LevelRun:
    """One level's requests, in schedule order (one record per request, sent or not)."""

    load: ClosedLoop | OpenLoop
    records: tuple[StreamRecord, ...]
    warmup: tuple[StreamRecord, ...]
    t_start_ns: int
    t_end_ns: int
    timed_out: bool
    timer: str  # which event loop timed it
    monitor: tuple[tuple[int, int], ...]  # (woke_ns, lag_ns) of every monitor wake
    cpu_s: float = 0.0  # the client process's CPU time over the level (saturated: ~ its span)
    raw: tuple[RawRequest, ...] = ()  # what the timed loop kept, with keep_raw only


def new_loop(connections: int) -> tuple[asyncio.AbstractEventLoop, str]:
    """An event loop on select(2) (microsecond timers) when the descriptors fit, else the
    default one; and which it is."""
    with socket.socket() as probe:
        fd = probe.fileno()
    if fd + 2 * connections + FD_MARGIN < SELECT_FD_LIMIT:
        return asyncio.SelectorEventLoop(selectors.SelectSelector()), "select (µs timers)"
    return asyncio.new_event_loop(), "default (1 ms timers: too many descriptors for select)"


def run_level(
    target: LoadTarget,
    spec: LoadSpec,
    prompts: Sequence[PromptLike],
    load: ClosedLoop | OpenLoop,
    *,
    timeout_s: float,
    warmup: int = 0,
    spin_us: float = 200.0,
    monitor_ms: float = 1.0,
    keep_raw: bool = False,
) -> LevelRun:
    """Run one level to its end or its `timeout_s`; request i sends prompts[i % len(prompts)].

    `warmup` requests go first, closed loop on the same connections, recorded apart."""
    check_target(target)
    if not prompts:
        raise ValueError("the prompt set is empty; give at least one prompt")
    lanes = load.concurrency if isinstance(load, ClosedLoop) else load.max_in_flight
    if (load.requests is not None and load.requests < 0) or lanes < 1:
        raise ValueError(f"{load}: requests must be >= 0 and concurrency >= 1; fix the level")
    if isinstance(load, ClosedLoop) and (load.requests is None) == (load.duration_s is None):
        raise ValueError(f"{load}: give a closed loop requests or duration_s, one of them")
    if load.duration_s is not None and not 0 < load.duration_s < math.inf:
        raise ValueError(f"{load}: duration_s must be a positive number of seconds")
    times = load.arrivals if isinstance(load, OpenLoop) else None
    if times is not None and (
        len(times) != load.requests or list(times) != sorted(times) or (times and times[0] < 0)
    ):
        raise ValueError("a replay's arrivals must be one time per request, from 0, in order")
    level = _Level(target, spec, prompts, load, timeout_s, spin_us, monitor_ms)
    loop, timer = new_loop(load.connections)
    try:
        return loop.run_until_complete(level.run(warmup, timer, keep_raw))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


class _Level:
    """The mutable state of one level while it runs; gone once its LevelRun exists."""

    def __init__(
        self,
        target: LoadTarget,
        spec: LoadSpec,
        prompts: Sequence[PromptLike],
        load: ClosedLoop | OpenLoop,
        timeout_s: float,
        spin_us: float,
        monitor_ms: float,
    ) -> None:
        self.spec, self.prompts, self.load = spec, prompts, load
        self.target = target
        self.model = target.model  # what every answer's `model` must name
        self.schedule = load.schedule if isinstance(load, OpenLoop) else ()
        headers = self.headers = auth_headers(target)
        # The key goes into the request bytes only; errors are scrubbed of it. One encoding per
        # prompt, however often a long order repeats it (a replay's share an id, not a text).
        encoded: dict[tuple[str, str, int | None], bytes] = {}
        for p in prompts:
            key = (p.id, p.text, getattr(p, "max_tokens", None))
            if key not in encoded:
                encoded[key] = request_bytes(target, spec, p, headers)
        self.requests = [encoded[(p.id, p.text, getattr(p, "max_tokens", None))] for p in prompts]
        self.secrets = [v.split(" ", 1)[-1] for v in headers.values()]
        self.pool = Pool(target.base_url)
        self.timeout_s = timeout_s
        # Bytes and lines per response from max_tokens; its time is the level's timeout.
        self.bound = ReadBound.stream(spec.max_tokens, timeout_s)
        self.spin_ns = int(spin_us * 1000)
        self.period_ns = int(monitor_ms * 1e6)
        self.raws: dict[int, RawRequest] = {}
        self.monitor: list[tuple[int, int]] = []
        self.stopping = False
        self.taken = 0  # the slots the measured loop has handed out (closed loop)

    async def run(self, warmup: int, timer: str, keep_raw: bool) -> LevelRun:
        deadline = now() + int(self.timeout_s * 1e9)
        timed_out = False
        try:
            warm: list[RawRequest] = []
            if warmup > 0:
                ahead = ClosedLoop(self.load.connections, warmup)
                timed_out = not await self._until(self._closed(ahead, now()), deadline)
                warm = [self.raws[i] for i in sorted(self.raws)]
                self.raws = {}
            monitor = asyncio.get_running_loop().create_task(self._monitor())
            cpu0 = time.process_time()
            t_start = now()
            body = (
                self._closed(self.load, t_start)
                if isinstance(self.load, ClosedLoop)
                else self._open(self.load, t_start)
            )
            timed_out = not await self._until(body, deadline) or timed_out
            t_end = now()
            cpu_s = time.process_time() - cpu0
            self.stopping = True
            await monitor
        finally:
            self.pool.close()
        samples = tuple(self.monitor)
        n = self.taken if self.load.requests is None else self.load.requests
        records = tuple(self._record(i, t_start, samples) for i in range(n))
        mt = self.spec.max_tokens
        return LevelRun(
            load=self.load,
            records=records,
            warmup=tuple(reduce_request(r, max_tokens=mt, expected_model=self.model) for r in warm),
            t_start_ns=t_start,
            t_end_ns=t_end,
            timed_out=timed_out,
            timer=timer,
            monitor=samples,
            cpu_s=cpu_s,
            raw=tuple(self.raws[i] for i in sorted(self.raws)) if keep_raw else (),
        )

    @staticmethod
    async def _until(work: Coroutine[Any, Any, None], deadline: int) -> bool:
        """Run `work` until the deadline; False when the deadline cut it short."""
        try:
            await asyncio.wait_for(work, max(deadline - now(), 0) / 1e9)
        except TimeoutError:
            return False
        return True

    def _record(self, index: int, t_start: int, monitor: Sequence[tuple[int, int]]) -> StreamRecord:
        raw = self.raws.get(index)
        if raw is None:  # never sent: the level's timeout came first
            intended = t_start + (self.schedule[index] if self.schedule else 0)
            raw = RawRequest(
                index,
                -1,
                self._prompt_id(index),
                intended,
                None,
                None,
                error=f"not sent: the level's timeout of {self.timeout_s:g} s came first",
            )
        return reduce_request(
            raw, max_tokens=self.spec.max_tokens, monitor=monitor, expected_model=self.model
        )

    def _prompt_id(self, index: int) -> str:
        return self.prompts[index % len(self.prompts)].id

    async def _monitor(self) -> None:
        """Wake every period and record how late the loop let it: the client's own lag."""
        samples, period = self.monitor, self.period_ns
        due = now() + period
        while not self.stopping:
            await asyncio.sleep(max(due - now(), 0) / 1e9)
            woke = now()
            samples.append((woke, woke - due))
            due = woke + period

    async def _wait_until(self, due: int) -> None:
        ahead = due - self.spin_ns - now()
        if ahead > 0:
            await asyncio.sleep(ahead / 1e9)
        while now() < due:  # the last stretch: yield, so other streams are still read
            await asyncio.sleep(0)

    async def _closed(self, load: ClosedLoop, t_start: int) -> None:
        """Each lane takes the next slot as it comes free: slot k is the k-th request of the
        level whichever lane sends it; with a duration, no slot is taken after its end."""
        indices = itertools.count() if load.requests is None else iter(range(load.requests))
        until = None if load.duration_s is None else t_start + round(load.duration_s * 1e9)
        self.taken = 0

        async def lane(slot: int) -> None:
            t_free = t_start
            # shared iterator; the check and the take have no await between them
            while until is None or now() < until:
                index = next(indices, None)
                if index is None:
                    return
                self.taken = index + 1
                await self._send(index, slot, t_free)
                t_free = now()

        await asyncio.gather(*(lane(k) for k in range(load.connections)))

    async def _open(self, load: OpenLoop, t_start: int) -> None:
        gate = asyncio.Semaphore(load.max_in_flight)
        loop = asyncio.get_running_loop()

        async def one(index: int, due: int) -> None:
            await self._wait_until(due)
            async with gate:  # saturated: the send waits, its lag is recorded
                await self._send(index, -1, due)

        tasks = []
        try:
            for index, offset in enumerate(self.schedule):
                due = t_start + offset
                # Started ahead of time so the send itself does not wait for a task switch.
                ahead = due - LEAD_NS - now()
                if ahead > 0:
                    await asyncio.sleep(ahead / 1e9)
                tasks.append(loop.create_task(one(index, due)))
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _send(self, index: int, slot: int, intended: int, request: bytes = b"") -> None:
        # `request`: bytes built for this send (a conversation's turn), else the prebuilt ones
        request = request or self.requests[index % len(self.requests)]
        t_send = now()
        wire: Wire | None = None
        try:
            for attempt in (0, 1):
                try:
                    wire, reused = await self.pool.get()
                except (OSError, TimeoutError) as exc:
                    wire = None
                    self._keep(
                        index, slot, intended, t_send, None, redact_url(f"cannot connect: {exc!r}")
                    )
                    return
                ex = await wire.exchange(request, self.spec.read_timeout_s, self.bound)
                self.pool.put(wire)
                # A kept-alive connection the server had just closed: once more on a fresh one.
                if not (reused and not ex.received and ex.error and attempt == 0):
                    self._keep(index, slot, intended, t_send, ex, ex.error)
                    return
        except asyncio.CancelledError:
            why = f"cancelled at the level's timeout of {self.timeout_s:g} s"
            self._keep(index, slot, intended, t_send, wire.partial() if wire else None, why)
            raise

    def _keep(
        self,
        index: int,
        slot: int,
        intended: int,
        t_send: int,
        ex: Exchange | None,
        error: str | None,
    ) -> None:
        pid = self._prompt_id(index)
        why = self._scrub(error) if error else None
        if ex is None:
            self.raws[index] = RawRequest(index, slot, pid, intended, t_send, now(), error=why)
        else:
            self.raws[index] = RawRequest(
                index,
                slot,
                pid,
                intended,
                t_send,
                ex.t_end_ns,
                ex.pieces,
                ex.stamps,
                ex.status,
                why,
            )

    def _scrub(self, text: str) -> str:
        for s in self.secrets:
            if s:
                text = text.replace(s, "[redacted]")
        return text
