"""What the load client adds, against a stand-in server that streams on a known schedule.

The stand-in (tests/stub_stream_schedule_server.py) is no inference server: it sends the first
token `--ttft-ms` after a request arrives and one every `--itl-ms`, and stamps each chunk with
when it was due and when it was sent, on the host's CLOCK_MONOTONIC, which the client stamps on
too. So each chunk's delay splits into the stand-in's share (sent - due) and the client's
(arrival - sent, the kernel's loopback included). Printed:

- at 1, 16 and 64 concurrent streams (closed loop): the latency added over the schedule, for
  TTFT (measured - ttft) and per token (arrival - due), median and p99; the client's share; the
  ITL error against the schedule; the client's own lag; its CPU per read;
- the same 64 streams read through httpx.AsyncClient, for reference (why `rig/wire.py` exists);
- the highest open-loop rate whose client lag p99 stays under 1 ms (doubling, then bisecting,
  within --budget-s).

    python bench/load_client.py [--ttft-ms 20] [--itl-ms 20] [--tokens 64] [--budget-s 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_mtpsweep.kinds.load.loadgen.level import (
    ClosedLoop,
    LevelRun,
    OpenLoop,
    new_loop,
    run_level,
)
from pytest_mtpsweep.kinds.load.loadgen.payload import (
    LoadPrompt,
    LoadSpec,
    LoadTarget,
    request_body,
)
from pytest_mtpsweep.kinds.load.loadgen.reads import sse_lines
from pytest_mtpsweep.kinds.load.loadgen.summary import percentile, summarise

STAND_IN = Path(__file__).resolve().parent.parent / "tests" / "stub_stream_schedule_server.py"
MS = 1e6
PROMPTS = [LoadPrompt("p0", "hello")]
ANCHORS = (
    "anchors: inference-perf documents a median scheduling delay of ~1.1 ms (p99 3.9 ms); "
    "AIPerf's event-loop timers round to ~1 ms at >= 500 req/s"
)


def start_stand_in(*flags: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(STAND_IN), *flags], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise SystemExit(f"the stand-in did not start: {line!r}")
    return proc, f"http://{line.split()[-1]}"


def token_events(
    pieces: Sequence[bytes], stamps: Sequence[int]
) -> Iterator[tuple[int, int, int, int]]:
    """(arrival, due, sent, request read) of every chunk that carried a token."""
    for line, t in sse_lines(pieces, stamps):
        if line.startswith("data: {"):
            ev = json.loads(line[6:])
            choices = ev.get("choices") or [{}]
            if choices[0].get("delta", {}).get("content"):
                stub = ev["stub"]
                yield t, stub["due_ns"], stub["sent_ns"], stub["recv_ns"]


def pct(values: Sequence[float], q: float) -> float:
    got = percentile(values, q)
    return float("nan") if got is None else got


def closed_row(run: LevelRun, ttft_ms: float, itl_ms: float) -> dict[str, float]:
    added: list[float] = []
    client: list[float] = []
    stand_in: list[float] = []
    ttft_added: list[float] = []
    ttft_client: list[float] = []
    to_read: list[float] = []
    gaps: list[float] = []
    reads = 0
    for raw in run.raw:
        reads += len(raw.pieces)
        events = list(token_events(raw.pieces, raw.stamps))
        for t, due, sent, _ in events:
            added.append((t - due) / MS)
            client.append((t - sent) / MS)
            stand_in.append((sent - due) / MS)
        if events and raw.t_send_ns is not None:
            ttft_added.append((events[0][0] - raw.t_send_ns) / MS - ttft_ms)
            to_read.append((events[0][3] - raw.t_send_ns) / MS)
            ttft_client.append((events[0][0] - events[0][2]) / MS)
    for r in run.records:
        gaps.extend(g / MS for g in r.itl_ns)
    lag = summarise(run).client_lag_ms
    return {
        "ttft_p50": pct(ttft_added, 50),
        "ttft_p99": pct(ttft_added, 99),
        "to_read_p50": pct(to_read, 50),
        "ttft_client_p50": pct(ttft_client, 50),
        "ttft_client_p99": pct(ttft_client, 99),
        "tok_p50": pct(added, 50),
        "tok_p99": pct(added, 99),
        "client_p50": pct(client, 50),
        "client_p99": pct(client, 99),
        "standin_p50": pct(stand_in, 50),
        "itl_p50_err": (pct(gaps, 50) / itl_ms - 1) * 100,
        "itl_mean_err": (statistics.fmean(gaps) / itl_ms - 1) * 100,
        "itl_p99_dev": pct([abs(g - itl_ms) for g in gaps], 99),
        "lag_p50": lag.p50 or float("nan"),
        "lag_p99": lag.p99 or float("nan"),
        "cpu_us_read": run.cpu_s / max(reads, 1) * 1e6,
        "cpu_share": run.cpu_s / ((run.t_end_ns - run.t_start_ns) / 1e9) * 100,
        "errors": sum(not r.ok for r in run.records),
    }


def closed_level(url: str, c: int, tokens: int, ttft_ms: float, itl_ms: float) -> dict[str, float]:
    run = run_level(
        LoadTarget(url, "stand-in"),
        LoadSpec(max_tokens=tokens),
        PROMPTS,
        ClosedLoop(c, max(2 * c, 4)),
        timeout_s=120,
        warmup=c,
        keep_raw=True,
    )
    return closed_row(run, ttft_ms, itl_ms)


def httpx_level(url: str, c: int, tokens: int) -> dict[str, float]:
    """The same closed loop through httpx.AsyncClient: the client's share and CPU per read."""
    import httpx

    body = request_body(LoadTarget(url, "stand-in"), LoadSpec(max_tokens=tokens), PROMPTS[0])
    kept: list[tuple[list[bytes], list[int]]] = []

    async def go() -> float:
        limits = httpx.Limits(max_connections=c, max_keepalive_connections=c)
        async with httpx.AsyncClient(trust_env=False, limits=limits, timeout=60) as client:

            async def lane(n: int, keep: bool) -> None:
                for _ in range(n):
                    pieces: list[bytes] = []
                    stamps: list[int] = []
                    async with client.stream(
                        "POST", f"{url}/v1/chat/completions", content=body
                    ) as r:
                        async for piece in r.aiter_raw():
                            stamps.append(time.monotonic_ns())
                            pieces.append(piece)
                    if keep:
                        kept.append((pieces, stamps))

            await asyncio.gather(*(lane(1, False) for _ in range(c)))  # connections open
            t0 = time.process_time()
            await asyncio.gather(*(lane(2, True) for _ in range(c)))
            return time.process_time() - t0

    loop, _ = new_loop(c)
    try:
        cpu_s = loop.run_until_complete(go())
    finally:
        loop.close()
    client = [(t - sent) / MS for p, s in kept for t, _, sent, _ in token_events(p, s)]
    reads = sum(len(p) for p, _ in kept)
    return {
        "client_p50": pct(client, 50),
        "client_p99": pct(client, 99),
        "cpu_us_read": cpu_s / max(reads, 1) * 1e6,
    }


def open_level(url: str, rate: float, seconds: float) -> tuple[float, float, float, int]:
    """(client lag p99, send lag p50, send lag p99, errors) of `seconds` at `rate`."""
    n = max(int(rate * seconds), 20)
    run = run_level(
        LoadTarget(url, "stand-in"),
        LoadSpec(max_tokens=4),
        PROMPTS,
        OpenLoop(rate, n, seed=1, max_in_flight=512),
        timeout_s=seconds * 4 + 10,
        warmup=8,
    )
    s = summarise(run)
    nan = float("nan")
    return (
        s.client_lag_ms.p99 or nan,
        s.send_lag_ms.p50 or nan,
        s.send_lag_ms.p99 or nan,
        s.requests - s.completed,
    )


def idle_floor(seconds: float = 2.0, period_ms: float = 1.0) -> tuple[float, float]:
    """(p50, p99) ms of how late an idle event loop's timers wake on this host now: the
    floor under any client lag measured here."""

    async def go() -> list[float]:
        lags: list[float] = []
        end = time.monotonic_ns() + int(seconds * 1e9)
        while (due := time.monotonic_ns() + int(period_ms * MS)) < end:
            await asyncio.sleep(period_ms / 1e3)
            lags.append((time.monotonic_ns() - due) / MS)
        return lags

    loop, _ = new_loop(1)
    try:
        lags = loop.run_until_complete(go())
    finally:
        loop.close()
    return pct(lags, 50), pct(lags, 99)


def rate_search(url: str, budget_s: float, bound_ms: float = 1.0) -> float | None:
    """The highest rate tried whose client lag p99 stays under the bound, with no errors."""
    t_end = time.monotonic() + budget_s
    good: float | None = None
    bad: float | None = None
    rate = 50.0
    while time.monotonic() < t_end and rate >= 10:
        lag99, send50, send99, errors = open_level(url, rate, 2.0)
        ok = lag99 <= bound_ms and errors == 0
        print(
            f"  {rate:8.0f} req/s: client lag p99 {lag99:6.3f} ms, send lag p50 {send50:6.3f} "
            f"p99 {send99:6.3f} ms, errors {errors}  {'ok' if ok else 'over'}",
            flush=True,
        )
        if ok:
            good = rate
        else:
            bad = rate
        if bad is None:
            rate *= 2
        elif good is None:
            rate /= 2  # over at the first rate: look below it
        elif bad / good < 1.15:
            break
        else:
            rate = (good + bad) / 2
    return good


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ttft-ms", type=float, default=20.0)
    ap.add_argument("--itl-ms", type=float, default=20.0)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--streams", default="1,16,64")
    ap.add_argument("--budget-s", type=float, default=60.0, help="for the open-loop rate search")
    ap.add_argument("--no-httpx", action="store_true")
    a = ap.parse_args()
    print(f"host: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start")
    floor50, floor99 = idle_floor()
    print(
        f"host floor: an idle event loop's 1 ms timers wake {floor50:.3f} ms late (p50), "
        f"{floor99:.3f} ms (p99)"
    )
    proc, url = start_stand_in("--ttft-ms", str(a.ttft_ms), "--itl-ms", str(a.itl_ms))
    try:
        print(
            f"stand-in schedule: ttft {a.ttft_ms:g} ms, itl {a.itl_ms:g} ms, {a.tokens} tokens; "
            "figures in ms unless said"
        )
        print(
            f"{'streams':>7} | {'TTFT added p50/p99':>18} | {'token added p50/p99':>19} | "
            f"{'client share p50/p99':>20} | {'ITL err p50/mean %':>18} | {'lag p50/p99':>13} | "
            f"{'CPU us/read, % core':>19}"
        )
        for c in (int(x) for x in a.streams.split(",")):
            r = closed_level(url, c, a.tokens, a.ttft_ms, a.itl_ms)
            print(
                f"{c:>7} | {r['ttft_p50']:8.3f} {r['ttft_p99']:9.3f} | {r['tok_p50']:8.3f} "
                f"{r['tok_p99']:10.3f} | {r['client_p50']:9.3f} {r['client_p99']:10.3f} | "
                f"{r['itl_p50_err']:+8.3f} {r['itl_mean_err']:+9.3f} | {r['lag_p50']:6.3f} "
                f"{r['lag_p99']:6.3f} | {r['cpu_us_read']:8.1f} {r['cpu_share']:9.1f}%"
                + (f"  ({int(r['errors'])} errors)" if r["errors"] else ""),
                flush=True,
            )
            print(
                f"{'':>7}   of TTFT: send -> stand-in's read of the request p50 "
                f"{r['to_read_p50']:.3f}; stand-in's own lateness p50 {r['standin_p50']:.3f}; "
                f"the client's share p50 {r['ttft_client_p50']:.3f} p99 {r['ttft_client_p99']:.3f}; "
                f"ITL |deviation| p99 {r['itl_p99_dev']:.3f}"
            )
            last = (c, r)
        c, r = last
        print(
            f"at {c} streams the client adds p50 {r['client_p50']:.3f} ms per token and "
            f"{r['ttft_client_p50']:.3f} ms to the first (target <= 1 ms); its ITL error is "
            f"{r['itl_mean_err']:+.3f} % (target within 1 %); the rest of 'added' is the stand-in's "
            "(its read of the request, its own lateness), named above"
        )
        if not a.no_httpx:
            c = max(int(x) for x in a.streams.split(","))
            h = httpx_level(url, c, a.tokens)
            print(
                f"httpx.AsyncClient at {c} streams, for reference: client share p50 "
                f"{h['client_p50']:.3f} p99 {h['client_p99']:.3f}, CPU {h['cpu_us_read']:.1f} us/read"
            )
    finally:
        proc.terminate()
        proc.wait()
    proc, url = start_stand_in("--ttft-ms", "5", "--itl-ms", "5")
    try:
        print("open loop (4 tokens, ttft 5 ms, itl 5 ms; 2 s per rate): ")
        best = rate_search(url, a.budget_s)
        if best is None:
            print("highest rate with client lag p99 <= 1 ms: none of those tried (see the floor)")
        else:
            print(f"highest rate with client lag p99 <= 1 ms: {best:.0f} req/s")
    finally:
        proc.terminate()
        proc.wait()
    print(ANCHORS)
    print(f"load average {os.getloadavg()[0]:.2f} at the end (the host is shared: see the README)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
