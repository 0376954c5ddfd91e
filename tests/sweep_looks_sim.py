"""A sweep's error rates at every look, by simulation through the package's own functions: the
drop rule at each look (`arms_to_drop` at the look's spent level, the margin passed as the run
passes it), and at each look the statements the report would print if the run stopped there
(the step-down both ways and the best set, at that look's repeated level), on known curves.

Log rate of arm a on prompt p of subset s in cycle c = base_p + mu_sa + prompt_sd·u_psa + s_ca +
drift·position_ca + e_psca, with u and e t3 (scaled to sd 1) or normal; s_ca the session offset of
the arm's session in cycle c (one model load serves both subsets), the baseline's sessions
`baseline_factor` times noisier; position_ca the session's place in the run (ascending arms in odd
cycles, the mirror in even ones, as the counterbalanced plan runs them). Two subsets, the same
curve on each, 8 prompts a subset. Used by bench/sweep_looks.py and its fast test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pytest_mtpsweep.analysis.sequential import Design
from pytest_mtpsweep.kinds.decode.analysis.sweepstats import (
    SweepData,
    arms_to_drop,
    best_set,
    where_gain_starts,
)

ARMS = ("none", "v1", "v2", "v3", "v4", "v5", "v6")
SUBSETS = ("prose", "structured")
FLIP = {"first": "last", "last": "first"}


def pct(values: Sequence[float]) -> tuple[float, ...]:
    """Percent changes as log effects, the baseline's 0 first."""
    return (0.0, *(math.log1p(v / 100.0) for v in values))


@dataclass(frozen=True)
class World:
    """One truth and its noise."""

    mu: tuple[float, ...]  # log effect per arm, the baseline first
    session_sd: float = 0.015
    prompts: int = 8
    prompt_sd: float = 0.03
    noise_sd: float = 0.03
    baseline_factor: float = 1.5  # the baseline's session offsets this much noisier
    drift_per_session: float = 0.0005  # log rate per session position (monotone evening drift)
    shape: str = "t3"
    start: str = "last"  # the step-down for a gain starts at the highest value

    @property
    def arms(self) -> tuple[str, ...]:
        return ARMS[: len(self.mu)]


@dataclass(frozen=True)
class Plan:
    """A design as a ladder gives it: the looks' cycles and levels, the margin, the pool."""

    looks: tuple[int, ...]
    confidence: tuple[float, ...]
    margin_pct: float = 0.0
    pool: bool = True

    @classmethod
    def of(
        cls, min_cycles: int, max_cycles: int, margin_pct: float = 0.0, pool: bool = True
    ) -> Plan:
        if min_cycles == max_cycles:
            return cls((max_cycles,), (0.95,), margin_pct, pool)
        d = Design.plan("decided", min_cycles, max_cycles, "pocock", None)
        return cls(d.looks, d.confidence, margin_pct, pool)


def _draw(rng: np.random.Generator, shape: str, size: tuple[int, ...]) -> np.ndarray:
    if shape == "t3":
        return np.asarray(rng.standard_t(3, size=size) / math.sqrt(3.0))
    return np.asarray(rng.standard_normal(size))


def simulate(world: World, cycles: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Per subset, (prompts, cycles, arms) log rates."""
    k = len(world.mu)
    sd = np.full(k, world.session_sd)
    sd[0] *= world.baseline_factor
    sessions = sd * rng.standard_normal((cycles, k))
    position = np.array([np.arange(k) if c % 2 == 0 else np.arange(k)[::-1] for c in range(cycles)])
    position = position + k * np.arange(cycles)[:, None]
    shared = sessions + world.drift_per_session * position
    out = {}
    for subset in SUBSETS:
        p = world.prompts
        base = 3.5 + 0.3 * rng.standard_normal(p)
        u = world.prompt_sd * _draw(rng, world.shape, (p, k))
        e = world.noise_sd * _draw(rng, world.shape, (p, cycles, k))
        out[subset] = base[:, None, None] + np.array(world.mu) + u[:, None, :] + shared[None] + e
    return out


def view(
    world: World, y: np.ndarray, cycles: int, dropped: dict[str, int], pool: bool
) -> SweepData:
    """What a look (or the report) sees: cycles up to `cycles`, a dropped arm's later cells gone."""
    cube = np.array(y[:, :cycles, :])
    for arm, at in dropped.items():
        cube[:, at:, world.arms.index(arm)] = np.nan
    p, c, k = cube.shape
    return SweepData(
        arms=world.arms,
        baseline="none",
        log_rates=cube.reshape(p * c, k),
        clusters=np.tile(np.arange(1, c + 1), p),
        prompts=np.repeat(np.arange(p), c),
        setting="value",
        start=world.start,
        pool_sessions=pool,
    )


@dataclass
class Outcome:
    """One replication: per look, whether its statements held; then over the run."""

    false_faster: list[bool] = field(default_factory=list)
    false_slower: list[bool] = field(default_factory=list)
    best_in: list[bool] = field(default_factory=list)  # every true best in every subset's set
    best_dropped: bool = False
    sessions: int = 0
    stop_look: int = 0


def _statements(
    world: World, data: SweepData, alpha: float, boot: int, seed: int
) -> tuple[bool, bool, bool]:
    """(a false faster call, a false slower call, every true best in the set) at this level."""
    truth = dict(zip(world.arms, world.mu, strict=True))
    up = where_gain_starts(data, direction="faster", alpha=alpha, boot=boot, seed=seed)
    down = where_gain_starts(
        data, direction="slower", alpha=alpha, boot=boot, seed=seed, start=FLIP[data.start]
    )
    best = best_set(data, alpha=alpha, boot=boot, seed=seed)
    top = max(world.mu)
    winners = [a for a, m in truth.items() if m == top]
    return (
        any(truth[a] <= 0 for a in up.effective),
        any(truth[a] >= 0 for a in down.effective),
        all(a in best.best for a in winners),
    )


def replicate(world: World, plan: Plan, rng: np.random.Generator, boot: int, seed: int) -> Outcome:
    """One run: looks drop arms (an arm leaves when every subset drops it); at each look the
    statements a report there would print are judged against the truth; the run stops when one
    arm is left beside the baseline, or at the last look."""
    ys = simulate(world, plan.looks[-1], rng)
    dropped: dict[str, int] = {}
    out = Outcome()
    top = max(world.mu)
    winners = {a for a, m in zip(world.arms, world.mu, strict=True) if m == top}
    last = 0
    for n, (cycles, conf) in enumerate(zip(plan.looks, plan.confidence, strict=True)):
        alive = [a for a in world.arms if a not in dropped]
        out.sessions += len(alive) * (cycles - last)
        last = cycles
        alpha = 1.0 - conf
        views = {s: view(world, y, cycles, dropped, plan.pool) for s, y in ys.items()}
        ff = fs = False
        held = True
        for data in views.values():
            a, b, c = _statements(world, data, alpha, boot, seed)
            ff, fs, held = ff or a, fs or b, held and c
        out.false_faster.append(ff)
        out.false_slower.append(fs)
        out.best_in.append(held)
        out.stop_look = n + 1
        if n == len(plan.looks) - 1:
            break
        leaving = set.intersection(
            *(
                {
                    a
                    for a, _ in arms_to_drop(
                        d, alpha_look=alpha, margin_pct=plan.margin_pct, boot=boot, seed=seed
                    )
                }
                for d in views.values()
            )
        )
        for arm in leaving:
            dropped[arm] = cycles
        out.best_dropped |= bool(winners & leaving) and len(winners) == 1
        if len([a for a in world.arms if a not in dropped]) <= 2:
            break
    return out


@dataclass(frozen=True)
class Rates:
    """Shares of replications: at any look taken, and at the stop."""

    false_faster_any: float
    false_slower_any: float
    false_faster_stop: float
    false_slower_stop: float
    best_in_every_look: float
    best_in_stop: float
    best_dropped: float
    sessions: float
    grid: int
    reps: int


def rates(world: World, plan: Plan, reps: int, boot: int, seed: int) -> Rates:
    """The design's error rates over `reps` replications (seeded: the same call, the same rates)."""
    rng = np.random.default_rng(seed)
    got = [replicate(world, plan, rng, boot, r) for r in range(reps)]
    return Rates(
        float(np.mean([any(g.false_faster) for g in got])),
        float(np.mean([any(g.false_slower) for g in got])),
        float(np.mean([g.false_faster[-1] for g in got])),
        float(np.mean([g.false_slower[-1] for g in got])),
        float(np.mean([all(g.best_in) for g in got])),
        float(np.mean([g.best_in[-1] for g in got])),
        float(np.mean([g.best_dropped for g in got])),
        float(np.mean([g.sessions for g in got])),
        len(world.mu) * plan.looks[-1],
        reps,
    )


def wilson_upper(share: float, n: int, z: float = 1.959964) -> float:
    """The upper end of the Wilson 95 % interval of a share of n."""
    centre = share + z * z / (2 * n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return (centre + half) / (1 + z * z / n)


KNEE = pct((0, 0, 0, 8, 15, 20))
INVERTED_U = pct((5, 12, 18, 12, 5, 0))
FLAT = pct((0, 0, 0, 0, 0, 0))
CURVES = (("knee", KNEE), ("inverted U", INVERTED_U), ("flat null", FLAT))
