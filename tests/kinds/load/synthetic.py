"""Synthetic load records, shaped as the load kind writes them, with gains the test chooses."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

# (treatment, cycle, level, prompt index, request index) -> a request's e2e in ms
LatencyFn = Callable[[str, int, str, int, int], float]


def lines(
    e2e: LatencyFn,
    *,
    treatments: Sequence[str] = ("none", "ngram"),
    cycles: int = 2,
    levels: Sequence[tuple[str, float]] = (("conc1", 1.0), ("conc4", 4.0)),
    prompts: int = 6,
    per_prompt: int = 1,
    throughput: Callable[[str, int, str], float] | None = None,
) -> list[dict[str, Any]]:
    """Request and level lines of a run: every (treatment, cycle) a session, every level a
    block, request i sending prompt i % prompts; TTFT and ITL scale with the e2e."""
    out: list[dict[str, Any]] = []
    ordinal = 0
    for cycle in range(1, cycles + 1):
        order = treatments if cycle % 2 else tuple(reversed(treatments))
        for t in order:
            ordinal += 1
            session = f"{ordinal:02d}_{t}_c{cycle}"
            blocks = levels if cycle % 2 else tuple(reversed(levels))
            for block, (label, value) in enumerate(blocks):
                ident = {"treatment": t, "cycle": cycle, "session": session, "level": label,
                         "mode": "closed", "level_value": value, "block": block}  # fmt: skip
                n = prompts * per_prompt
                for i in range(n):
                    ms = e2e(t, cycle, label, i % prompts, i)
                    out.append({**ident, "record": "request", "request": i,
                                "prompt_id": f"p{i % prompts}", "valid": True,
                                "ttft_ms": ms / 4, "e2e_ms": ms, "itl_mean_ms": ms / 40,
                                "itl_ms": [ms / 40] * 3, "output_tokens": 32,
                                "queued": False})  # fmt: skip
                tps = throughput(t, cycle, label) if throughput else 100.0
                out.append({**ident, "record": "level", "valid": True, "requests": n,
                            "completed": n, "output_tok_s": tps, "req_s": tps / 32,
                            "goodput_req_s": None, "queued": 0, "total_slots": 4,
                            "lag_flag": None, "client_lag_ms": {"p99": 0.5},
                            "occupancy": {"busy_slots_max": int(value)}})  # fmt: skip
    return out


def gains(
    by_level: dict[str, float], base: Callable[[int], float] = lambda p: 100.0 + 10 * p
) -> LatencyFn:
    """e2e where the treatment is `by_level[level]` times faster than the baseline, exactly."""

    def e2e(t: str, cycle: int, level: str, p: int, i: int) -> float:
        ms = base(p) * (1.0 + 0.01 * cycle)
        return ms if t == "none" else ms / by_level[level]

    return e2e


def log(x: float) -> float:
    return math.log(x)
