"""Gate histories by simulation, judged by the real drift test (`analysis/drift.py`) and by the
naive rule "three losses in a row".

A history is N gates in a row, each reporting a percent change with a 95 % interval
estimate ± 1.96·SE. Each gate's SE is its own, drawn uniformly from 1-3 % (gates differ in
prompts and cycles); its error is Student's t with 3 degrees of freedom (heavy tails), scaled
to the reported SE (`honest`) or left √3 wider than the SE says (`narrow`: every interval
too narrow, as a bootstrap on few prompts can be). Under no change the true effect is 0; under
a slow drift every gate loses `effect` % against the build before it (−1 %: a loss a 2 % SE
gate misses most of the time), the shape of a CI that gates each commit against its parent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pytest_mtpsweep.analysis.drift import Point, drift, naive_runs

SE_RANGE = (1.0, 3.0)  # percent
DF = 3
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Scenario:
    name: str
    effect: float  # true percent change of every gate
    narrow: bool  # the reported SE is √(df/(df-2)) too small


SCENARIOS = (
    Scenario("no change, honest SEs", 0.0, False),
    Scenario("no change, SEs √3 too small", 0.0, True),
    Scenario("drift -1 % a gate", -1.0, False),
    Scenario("drift -1 % a gate, SEs √3 too small", -1.0, True),
)


@dataclass(frozen=True)
class Rate:
    hits: int
    n: int

    @property
    def rate(self) -> float:
        return self.hits / self.n

    def wilson(self) -> tuple[float, float]:
        """Wilson's 95 % score interval for the rate."""
        p, n, z = self.rate, self.n, Z95
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)

    def __str__(self) -> str:
        lo, hi = self.wilson()
        return f"{self.rate:6.3f} [{lo:.3f}, {hi:.3f}]"


@dataclass(frozen=True)
class Outcome:
    cusum: Rate  # histories the drift test flags at some gate
    naive: Rate  # histories the naive rule flags at some gate
    gate_losses: float  # share of single gates whose own interval excludes 0 on the loss side
    first_flag: float  # median gate of the drift test's first flag (nan: none flagged)


def histories(s: Scenario, n: int, gates: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Estimates and reported SEs, each (n, gates)."""
    rng = np.random.default_rng(seed)
    se = rng.uniform(*SE_RANGE, (n, gates))
    t = rng.standard_t(DF, (n, gates))
    if not s.narrow:
        t = t / math.sqrt(DF / (DF - 2))
    return s.effect + se * t, se


def simulate(s: Scenario, n: int, gates: int, seed: int) -> Outcome:
    est, se = histories(s, n, gates, seed)
    hits = naive = 0
    firsts: list[int] = []
    for e_row, se_row in zip(est.tolist(), se.tolist(), strict=True):
        d = drift(
            [Point(e, e - Z95 * s_, e + Z95 * s_) for e, s_ in zip(e_row, se_row, strict=True)]
        )
        if any(d.flagged):
            hits += 1
            firsts.append(d.flagged.index(True) + 1)
        naive += any(naive_runs(e_row))
    losses = float(np.mean(est + Z95 * se < 0))
    first = float(np.median(firsts)) if firsts else math.nan
    return Outcome(Rate(hits, n), Rate(naive, n), losses, first)
