"""The mechanism simulation behind bench/mechanism_coverage.py and its fast test: drafting arms
whose acceptance is a planted per-position curve, timed with a planted step cost, analysed
through the package's own `kinds/decode/analysis/drafting.py`.

Each request of prompt p decodes until it has n_p tokens (n_p drawn per prompt, 8 to 96); a
step drafts k tokens (the arm's n_max) and accepts the first a of them, position i with the
planted rate p_i given i - 1 accepted, so E[L] = 1 + sum_k prod_{i<=k} p_i exactly (the counts
of one request are what the server's `timings` report). A step costs T1_p * (fixed + per_draft
* k) * exp(s + e): T1_p the prompt's plain step, s the arm's session offset in that cycle
(normal, sd session_sd), e the request's noise (t3 scaled to sd noise_sd, clipped at 8 sd); the baseline's plain
step has its own session offsets and noise. Noise and offsets are centred on the ratio scale
(E[exp] = 1), so the truth of an arm is E[L] / (fixed + per_draft * k).

The naive variant averages each request's tokens / steps and treats requests as independent
(mean +- 1.96 SD / sqrt(n)): short answers weigh like long ones, and the sessions' and prompts'
shared offsets are ignored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_mtpsweep.kinds.decode.analysis.drafting import (
    CellCounts,
    expected_length,
    subset_mechanism,
)

FloatArray = npt.NDArray[np.float64]
CURVE = (0.8, 0.6, 0.45, 0.3)
ARMS = (2, 3, 4)  # n_max of each drafting arm


@dataclass(frozen=True)
class Scenario:
    prompts: int = 10
    cycles: int = 3
    curve: tuple[float, ...] = CURVE
    fixed: float = 1.05
    per_draft: float = 0.25
    noise_sd: float = 0.08
    session_sd: float = 0.04


def _t3(rng: np.random.Generator, size: tuple[int, ...], sd: float) -> FloatArray:
    # t3 (variance 3) scaled to sd, clipped at 8 sd (exp of an unclipped t has no mean, so a
    # ratio of summed times would have no truth), then centred so that E[exp] = 1.
    def draw(shape: tuple[int, ...] | int) -> FloatArray:
        t = np.clip(rng.standard_t(3, size=shape), -8.0 * math.sqrt(3.0), 8.0 * math.sqrt(3.0))
        return np.asarray(t * sd / math.sqrt(3.0))

    return np.asarray(draw(size) - math.log(float(np.mean(np.exp(draw(200_000))))))


def _accepted(rng: np.random.Generator, curve: tuple[float, ...], k: int, steps: int) -> FloatArray:
    # Position i is reached only if i - 1 were accepted: the count is the first rejection.
    u = rng.random((steps, k)) < np.asarray(curve[:k])[None, :]
    return np.asarray(np.cumprod(u, axis=1).sum(axis=1), dtype=np.float64)


def _request(
    rng: np.random.Generator, curve: tuple[float, ...], k: int, n: int
) -> tuple[float, float, float]:
    """(tokens, steps, accepted) of one request decoding until it has n tokens."""
    a = _accepted(rng, curve, k, n)  # n steps are enough: each yields a token at least
    steps = int(np.searchsorted(np.cumsum(1.0 + a), n)) + 1
    return float(steps + a[:steps].sum()), float(steps), float(a[:steps].sum())


def truth(sc: Scenario, k: int) -> tuple[float, float]:
    """(E[L], predicted speedup) of an arm drafting k tokens a step."""
    length = expected_length(sc.curve[:k])
    return length, length / (sc.fixed + sc.per_draft * k)


def simulate(rng: np.random.Generator, sc: Scenario) -> tuple[dict[str, CellCounts], list[float]]:
    """Every arm's counts (prompts x cycles) and the naive per-request tokens / steps of each."""
    p, c = sc.prompts, sc.cycles
    length = rng.integers(8, 97, size=p)
    t1 = np.exp(rng.normal(0.0, 0.2, size=p)) * 20.0
    base_s = rng.normal(0, sc.session_sd, c) - sc.session_sd**2 / 2
    base_ms = (
        t1[:, None] * length[:, None] * np.exp(base_s[None, :] + _t3(rng, (p, c), sc.noise_sd))
    )
    base_tokens = np.repeat(length[:, None].astype(np.float64), c, axis=1)
    cells, naive = {}, {}
    for k in ARMS:
        arr = np.zeros((4, p, c))
        per_request = []
        sess = rng.normal(0, sc.session_sd, c) - sc.session_sd**2 / 2
        noise = _t3(rng, (p, c), sc.noise_sd)
        for i in range(p):
            for j in range(c):
                tokens, steps, acc = _request(rng, sc.curve, k, int(length[i]))
                cost = t1[i] * (sc.fixed + sc.per_draft * k) * math.exp(sess[j] + noise[i, j])
                arr[:, i, j] = (tokens, steps, acc, steps * cost)
                per_request.append(tokens / steps)
        cells[f"k{k}"] = CellCounts(
            tokens=arr[0], steps=arr[1], drafted=arr[1] * k, accepted=arr[2], ms=arr[3],
            base_tokens=base_tokens, base_ms=base_ms,
        )  # fmt: skip
        naive[f"k{k}"] = per_request
    return cells, [float(np.mean(v)) for v in naive.values()] + [
        1.96 * float(np.std(v, ddof=1)) / math.sqrt(len(v)) for v in naive.values()
    ]


def coverage(sc: Scenario, reps: int, boot: int, seed: int = 20261207) -> dict[str, float]:
    """Shares of replications whose interval holds the truth: E[L] and predicted speedup of
    each arm, pooled over the arms, and the naive per-request E[L]'s."""
    rng = np.random.default_rng(seed)
    held = {"mean_len": 0, "predicted": 0, "naive_tokens_per_step": 0}
    for r in range(reps):
        cells, naive = simulate(rng, sc)
        got = subset_mechanism(cells, boot=boot, seed=r, subset="s", df=sc.prompts - 1)
        for n, k in enumerate(ARMS):
            length, speed = truth(sc, k)
            m = got[f"k{k}"]
            held["mean_len"] += m.mean_len.low <= length <= m.mean_len.high
            held["predicted"] += m.predicted.low <= speed <= m.predicted.high
            mean, half = naive[n], naive[len(ARMS) + n]
            held["naive_tokens_per_step"] += mean - half <= length <= mean + half
    return {key: v / (reps * len(ARMS)) for key, v in held.items()}
