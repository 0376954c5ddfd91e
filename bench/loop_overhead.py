"""What the harness adds inside a timed interval: the per-event cost of the stamping loop.

`client.stream_chat` does, per SSE line, one `time.monotonic_ns()` and two list appends; all
parsing waits until the stream ends. This times exactly that loop over pre-built lines (so the
network and the server are out of the picture) and compares it with a loop that parses each
event as it arrives, which is what the harness avoids.

    python bench/loop_overhead.py [--events 200000]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

LINE = 'data: {"choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}],"model":"m-none"}'


def stamping_loop(lines: list[str]) -> int:
    kept: list[str] = []
    stamps: list[int] = []
    append_line, append_stamp, now = kept.append, stamps.append, time.monotonic_ns
    for line in lines:
        append_stamp(now())
        append_line(line)
    return len(kept)


def parsing_loop(lines: list[str]) -> int:
    n = 0
    for line in lines:
        time.monotonic_ns()
        n += len(json.loads(line[5:])["choices"])
    return n


def per_event_ns(fn: Callable[[list[str]], object], lines: list[str], repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn(lines)
        best = min(best, time.perf_counter_ns() - t0)
    return best / len(lines)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--events", type=int, default=200_000)
    n = ap.parse_args().events
    lines = [LINE] * n
    empty = per_event_ns(lambda ls: [None for _ in ls], lines)
    stamp = per_event_ns(stamping_loop, lines)
    parse = per_event_ns(parsing_loop, lines)
    print(f"events: {n}")
    print(f"bare iteration        {empty:8.1f} ns/event")
    print(f"stamping loop (used)  {stamp:8.1f} ns/event")
    print(f"parse-as-you-go       {parse:8.1f} ns/event")
    # At 200 tok/s an inter-token gap is 5 ms; the loop's share of one gap:
    print(f"share of a 5 ms inter-token gap: {stamp / 5e6 * 100:.5f} %")


if __name__ == "__main__":
    main()
