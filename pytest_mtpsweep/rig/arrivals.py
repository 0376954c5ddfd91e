"""The request schedule of a load level: when each request is meant to go, and with which prompt.

Pure functions of their arguments (a seed among them), so every treatment of a ladder is sent
the same schedule and its requests pair by index. Stdlib `random` (a Mersenne Twister seeded
with an int) gives the same draws on every platform and Python version this project supports,
and keeps numpy out of the import.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator

NS_PER_S = 1_000_000_000


def poisson_schedule(rate: float, n: int, seed: int) -> tuple[int, ...]:
    """Intended send times of `n` requests, ns from the level's start, for Poisson arrivals at
    `rate` requests/s: exponential gaps of mean 1/rate, the first gap from the start, sorted."""
    _check_rate(rate)
    if n < 0:
        raise ValueError(f"request count {n} is negative; give 0 or more requests")
    return tuple(itertools.islice(_arrivals(rate, seed), n))


def poisson_until(rate: float, duration_s: float, seed: int) -> tuple[int, ...]:
    """The same seeded arrivals as `poisson_schedule`, every one whose intended time is within
    `duration_s` of the level's start: a prefix of the longer schedule, so a level given a
    duration is sent the same requests at the same times in every treatment."""
    _check_rate(rate)
    if not (isinstance(duration_s, int | float) and math.isfinite(duration_s) and duration_s > 0):
        raise ValueError(f"duration {duration_s!r} is not a positive number of seconds; give one")
    end = round(duration_s * NS_PER_S)
    return tuple(itertools.takewhile(lambda t: t <= end, _arrivals(rate, seed)))


def _check_rate(rate: float) -> None:
    if not (isinstance(rate, int | float) and math.isfinite(rate) and rate > 0):
        raise ValueError(f"arrival rate {rate!r} is not a positive number of requests/s; give one")


def _arrivals(rate: float, seed: int) -> Iterator[int]:
    """Exponential gaps of mean 1/rate, summed: ns from the start, without end."""
    draw = random.Random(seed).expovariate
    t = 0.0
    while True:
        t += draw(rate)
        yield round(t * NS_PER_S)


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
