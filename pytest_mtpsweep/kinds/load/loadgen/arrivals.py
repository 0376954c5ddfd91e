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
# The bounds of one level's schedule, checked before anything is drawn (the load ladder states
# them in its refusals): a schedule is a tuple in memory and a list in plan.json.
MAX_SCHEDULE = 1_000_000  # requests (or expected arrivals: rate x duration_s) per level block
MIN_RATE = 0.001  # requests/s: one gap in ~17 min; slower leaves a block of an hour empty
MAX_RATE = 1_000_000.0  # requests/s: one per µs, the client's timer resolution


def poisson_schedule(rate: float, n: int, seed: int) -> tuple[int, ...]:
    """Intended send times of `n` requests, ns from the level's start, for Poisson arrivals at
    `rate` requests/s: exponential gaps of mean 1/rate, the first gap from the start, sorted."""
    _check_rate(rate)
    _check_count(n)
    return tuple(itertools.islice(_arrivals(rate, seed), n))


def poisson_until(rate: float, duration_s: float, seed: int) -> tuple[int, ...]:
    """The same seeded arrivals as `poisson_schedule`, every one whose intended time is within
    `duration_s` of the level's start: a prefix of the longer schedule, so a level given a
    duration is sent the same requests at the same times in every treatment."""
    _check_rate(rate)
    if not (isinstance(duration_s, int | float) and math.isfinite(duration_s) and duration_s > 0):
        raise ValueError(f"duration {duration_s!r} is not a positive number of seconds; give one")
    if rate * duration_s > MAX_SCHEDULE:
        raise ValueError(
            f"rate × duration_s = {rate * duration_s:.3g} arrivals; at most {MAX_SCHEDULE} per level"
        )
    end = round(duration_s * NS_PER_S)
    # A Poisson count passes its mean by a few sd (1,000 at 10**6): twice it is never reached,
    # so the cap only stops a runaway draw.
    within = itertools.takewhile(lambda t: t <= end, _arrivals(rate, seed))
    return tuple(itertools.islice(within, 2 * MAX_SCHEDULE))


def first_arrival_ns(rate: float, seed: int) -> int:
    """The intended time of the seeded schedule's first arrival: whether a block of a duration
    schedules any request, known without drawing the rest."""
    _check_rate(rate)
    return next(_arrivals(rate, seed))


def _check_rate(rate: float) -> None:
    if not (isinstance(rate, int | float) and math.isfinite(rate) and rate > 0):
        raise ValueError(f"arrival rate {rate!r} is not a positive number of requests/s; give one")
    if not MIN_RATE <= rate <= MAX_RATE:
        raise ValueError(
            f"arrival rate {rate!r} is outside {MIN_RATE:g} to {MAX_RATE:g} requests/s; give one "
            "within it"
        )


def _check_count(n: int) -> None:
    if n < 0:
        raise ValueError(f"request count {n} is negative; give 0 or more requests")
    if n > MAX_SCHEDULE:
        raise ValueError(f"request count {n} is over {MAX_SCHEDULE}; give at most that many")


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
    _check_count(n)
    rng = random.Random(seed)
    out: list[int] = []
    while len(out) < n:
        block = list(range(n_prompts))
        rng.shuffle(block)
        out.extend(block)
    return tuple(out[:n])
