"""A simulated capacity search with known capacities, shared by tests and
bench/capacity_coverage.py: no server, the search's and the analysis' own functions.

A request at concurrency L of a server with capacity c attains with probability
logistic(logit(target) - steep·ln(L / c) + u_p), u_p a prompt's own effect shared by every
treatment (the pairing); the true capacity is where the prompts' mean attainment is the target.
Each cycle's first treatment leads the search, the other replays its levels then searches on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_mtpsweep.kinds.load.capacity import CapacitySettings, next_level

if TYPE_CHECKING:
    import pandas as pd


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def attain_p(
    s: CapacitySettings, level: float, cap: float, u: np.ndarray, steep: float
) -> np.ndarray:
    z = _logit(s.attainment) - steep * math.log(level / cap) + u
    out: np.ndarray = 1.0 / (1.0 + np.exp(-z))
    return out


def true_capacity(s: CapacitySettings, cap: float, u: np.ndarray, steep: float) -> float:
    """Where the mean attainment over these prompts is the target (bisection on ln L)."""
    lo, hi = math.log(cap) - 10, math.log(cap) + 10
    for _ in range(80):
        mid = (lo + hi) / 2
        if attain_p(s, math.exp(mid), cap, u, steep).mean() >= s.attainment:
            lo = mid
        else:
            hi = mid
    return math.exp(lo)


def run(
    rng: np.random.Generator, s: CapacitySettings, caps: dict[str, float], *, cycles: int = 2,
    prompts: int = 12, requests: int = 24, prompt_sd: float = 0.6, steep: float = 4.0,
) -> tuple[pd.DataFrame, dict[str, float], dict[str, list[list[tuple[float, bool]]]]]:  # fmt: skip
    """The request rows a run would record, each treatment's true capacity, its probes."""
    import pandas as pd

    u = rng.normal(0.0, prompt_sd, prompts)
    order = [i % prompts for i in range(requests)]
    rows: list[dict[str, Any]] = []
    probes: dict[str, list[list[tuple[float, bool]]]] = {t: [] for t in caps}
    keys = list(caps)
    for cycle in range(1, cycles + 1):
        sessions = keys if cycle % 2 else list(reversed(keys))
        led: list[float] = []
        for k, t in enumerate(sessions):
            own: list[tuple[float, bool]] = []
            while True:
                level = led[len(own)] if k and len(own) < len(led) else next_level(s, own)
                if level is None:
                    break
                p = attain_p(s, level, caps[t], u[order], steep)
                good = rng.random(requests) < p
                own.append((level, float(good.mean()) >= s.attainment))
                rows += [{"treatment": t, "cycle": cycle, "level_value": level,
                          "prompt_id": f"p{order[i]}", "valid": True,
                          "ttft_ms": 1.0 if good[i] else 100.0, "e2e_ms": 1.0,
                          "itl_mean_ms": 1.0} for i in range(requests)]  # fmt: skip
            if k == 0:
                led = [lv for lv, _ in own]
            probes[t].append(own)
    truth = {t: true_capacity(s, c, u, steep) for t, c in caps.items()}
    return pd.DataFrame(rows), truth, probes


SLO = {"ttft_ms": 50.0}


def pairs(treatments: Sequence[str]) -> list[tuple[str, str]]:
    return [(t, treatments[0]) for t in treatments[1:]]
