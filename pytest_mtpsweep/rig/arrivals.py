"""The request schedule of a load level: when each request is meant to go, and with which prompt.

Pure functions of their arguments (a seed among them), so every treatment of a ladder is sent
the same schedule and its requests pair by index. Stdlib `random` (a Mersenne Twister seeded
with an int) gives the same draws on every platform and Python version this project supports,
and keeps numpy out of the import.
"""

from __future__ import annotations

import math
import random

NS_PER_S = 1_000_000_000


def poisson_schedule(rate: float, n: int, seed: int) -> tuple[int, ...]:
    """Intended send times of `n` requests, ns from the level's start, for Poisson arrivals at
    `rate` requests/s: exponential gaps of mean 1/rate, the first gap from the start, sorted."""
    if not (isinstance(rate, int | float) and math.isfinite(rate) and rate > 0):
        raise ValueError(f"arrival rate {rate!r} is not a positive number of requests/s; give one")
    if n < 0:
        raise ValueError(f"request count {n} is negative; give 0 or more requests")
    draw = random.Random(seed).expovariate
    out: list[int] = []
    t = 0.0
    for _ in range(n):
        t += draw(rate)
        out.append(round(t * NS_PER_S))
    return tuple(out)


def prompt_order(n: int, n_prompts: int, seed: int) -> tuple[int, ...]:
    """Which prompt each of `n` requests sends: whole seeded permutations of the prompt set one
    after another, so every prompt is used equally often (±1) in any run of requests."""
    if n_prompts < 1:
        raise ValueError("the prompt set is empty; give at least one prompt")
    if n < 0:
        raise ValueError(f"request count {n} is negative; give 0 or more requests")
    rng = random.Random(seed)
    out: list[int] = []
    while len(out) < n:
        block = list(range(n_prompts))
        rng.shuffle(block)
        out.extend(block)
    return tuple(out[:n])
