"""The sweep simulation behind bench/sweep_coverage.py and its fast test: known curves along one
setting, analysed through the package's own `kinds/decode/analysis/sweepstats.py`, fixed and with arms dropped at
looks (`analysis/sequential.py`'s levels).

Log rate of arm a on prompt p in cycle c = base_p + mu_a + prompt_sd·u_pa + s_ca + e_pca: u_pa
a prompt's own response to the arm (normal, or t3 scaled to sd 1), s_ca the arm's session offset
in that cycle (one model load; sd session_sd, shared by the subsets of one session), e_pca the
cell noise (sd noise_sd; normal or t3). The baseline is an arm with mu = 0. The truth of an arm
is mu_a: what the mean over prompts estimates. The reversal scenario holds two subsets with
their own curves and the same sessions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from pytest_mtpsweep.analysis.sequential import Design
from pytest_mtpsweep.kinds.decode.analysis.sweepstats import (
    SweepData,
    arms_to_drop,
    best_set,
    where_gain_starts,
)

FloatArray = npt.NDArray[np.float64]
ARM_NAMES = ("none", "v1", "v2", "v3", "v4", "v5", "v6")


def pct(values: tuple[float, ...]) -> tuple[float, ...]:
    """Percent changes as log effects."""
    return tuple(math.log1p(v / 100.0) for v in values)


@dataclass(frozen=True)
class Curve:
    """One sweep's truth: per subset, the log effect of each arm (the baseline's first, 0)."""

    effects: Mapping[str, tuple[float, ...]]
    prompts: int = 8
    prompt_sd: float = 0.03
    noise_sd: float = 0.03
    session_sd: float = 0.015
    shape: str = "t3"
    direction: Mapping[str, str] = field(default_factory=dict)  # subset -> step-down direction
    start: Mapping[str, str] = field(default_factory=dict)  # subset -> the step-down's first end

    @property
    def arms(self) -> tuple[str, ...]:
        return ARM_NAMES[: len(next(iter(self.effects.values())))]


def _draw(rng: np.random.Generator, shape: str, size: tuple[int, ...]) -> FloatArray:
    if shape == "t3":
        return np.asarray(rng.standard_t(3, size=size) / math.sqrt(3.0))
    return np.asarray(rng.standard_normal(size))


def simulate(curve: Curve, cycles: int, rng: np.random.Generator) -> dict[str, SweepData]:
    """Per subset, one replication's SweepData over `cycles` cycles."""
    k = len(curve.arms)
    sessions = curve.session_sd * rng.standard_normal((cycles, k))
    out = {}
    for subset, mu in curve.effects.items():
        n_p = curve.prompts
        base = 3.5 + 0.3 * rng.standard_normal(n_p)
        u = curve.prompt_sd * _draw(rng, curve.shape, (n_p, k))
        e = curve.noise_sd * _draw(rng, curve.shape, (n_p, cycles, k))
        y = base[:, None, None] + np.array(mu) + u[:, None, :] + sessions[None] + e
        prompts = np.repeat(np.arange(n_p), cycles)
        clusters = np.tile(np.arange(1, cycles + 1), n_p)
        out[subset] = SweepData(
            arms=curve.arms,
            baseline="none",
            log_rates=y.reshape(n_p * cycles, k),
            clusters=clusters,
            prompts=prompts,
            subset=subset,
            setting="value",
            start=curve.start.get(subset, "last"),
        )
    return out


def restrict(data: SweepData, cycles: int, dropped_at: Mapping[str, int]) -> SweepData:
    """The data a look sees: cycles up to `cycles`, a dropped arm's cells after its drop NaN."""
    keep = np.asarray(data.clusters) <= cycles
    y = np.array(data.log_rates[keep], dtype=np.float64)
    c = np.asarray(data.clusters)[keep]
    for arm, at in dropped_at.items():
        y[c > at, data.arms.index(arm)] = np.nan
    prompts = None if data.prompts is None else np.asarray(data.prompts)[keep]
    return SweepData(
        data.arms, data.baseline, y, c, prompts, data.subset, data.setting, start=data.start
    )


def true_mcb(mu: tuple[float, ...]) -> FloatArray:
    """θ_i − max_{j≠i} θ_j for every arm."""
    m = np.array(mu)
    return np.array([m[i] - np.delete(m, i).max() for i in range(m.size)])


@dataclass(frozen=True)
class Fixed:
    """One replication of one subset, analysed once at the end."""

    false_start: bool  # the step-down (either direction) declared an arm against its truth
    unadjusted_false: bool  # some arm's own 95 % interval excluded 0 against its truth
    first_effective: str | None
    best_in: tuple[bool, ...]  # per true best arm (ties: each), whether the best set holds it
    naive_wrong: bool  # the largest point estimate is not a true best
    covered: bool  # every MCB interval holds its truth
    best_size: int


def _is_true(effect: float, direction: str) -> bool:
    return effect > 0 if direction == "faster" else effect < 0


FLIP = {"first": "last", "last": "first"}


def false_calls(data: SweepData, mu: tuple[float, ...], boot: int, seed: int, alpha: float) -> bool:
    """Whether the step-down, run in both directions (the pre-registered one from its end, the
    other from the other end), declares an arm whose truth is not in that direction."""
    truth = dict(zip(data.arms, mu, strict=True))
    for direction, start in (("faster", data.start), ("slower", FLIP[data.start])):
        step = where_gain_starts(
            data, direction=direction, alpha=alpha, boot=boot, seed=seed, start=start
        )
        if any(not _is_true(truth[a], direction) for a in step.effective):
            return True
    return False


def analyse_fixed(
    data: SweepData, mu: tuple[float, ...], direction: str, boot: int, seed: int
) -> Fixed:
    """The step-down in the pre-registered direction (where it starts), both directions' false
    calls against each arm's own 95 % interval's, the best set and the naive pick."""
    step = where_gain_starts(data, direction=direction, boot=boot, seed=seed)
    best = best_set(data, boot=boot, seed=seed)
    truth = dict(zip(data.arms, mu, strict=True))
    unadjusted = any(
        (iv.low_pct > 0 and not _is_true(truth[iv.arm], "faster"))
        or (iv.high_pct < 0 and not _is_true(truth[iv.arm], "slower"))
        for iv in step.intervals
    )
    top = max(mu)
    best_arms = {a for a in data.arms if truth[a] == top}
    estimates = {iv.arm: iv.estimate_pct for iv in step.intervals}
    estimates[data.baseline] = 0.0
    naive = max(estimates, key=lambda a: estimates[a])
    return Fixed(
        false_start=false_calls(data, mu, boot, seed, 0.05),
        unadjusted_false=unadjusted,
        first_effective=step.first_effective,
        best_in=tuple(a in best.best for a in data.arms if a in best_arms),
        naive_wrong=naive not in best_arms,
        covered=_covered(best.intervals, data.arms, mu),
        best_size=len(best.best),
    )


def _covered(intervals: tuple[object, ...], arms: tuple[str, ...], mu: tuple[float, ...]) -> bool:
    truth = true_mcb(mu)
    ok = True
    for iv, t in zip(intervals, truth, strict=True):
        t_pct = 100.0 * math.expm1(float(t))
        low, high = getattr(iv, "low_pct"), getattr(iv, "high_pct")  # noqa: B009
        ok &= low - 1e-9 <= t_pct <= high + 1e-9
    return ok


@dataclass(frozen=True)
class Sequential:
    """One replication with arms dropped at looks (the subsets of a run drop an arm only where
    every subset says so, since a session serves them all)."""

    best_dropped: bool  # a unique true best of some subset left before the stop
    sessions: int  # arm-cycle sessions run
    grid: int  # the full grid's sessions
    truth_in_best: bool  # at the stop, every subset's best set holds its true best
    covered: bool  # at the stop, every subset's MCB intervals hold their truths
    false_start: bool
    stop_cycle: int


def run_sequential(
    curve: Curve,
    design: Design,
    rng: np.random.Generator,
    boot: int,
    seed: int,
    margin_pct: float | None = None,
) -> Sequential:
    """Looks after the design's cycles; at each, every subset's arms_to_drop at the look's level;
    an arm leaves when every subset drops it. Stops when one arm is left beside the baseline
    (or none), with `margin_pct` when every subset's best set at the look's level is within it
    (`BestSet.within_margin`), or at the last look."""
    full = simulate(curve, design.looks[-1], rng)
    arms = curve.arms
    dropped: dict[str, int] = {}
    sessions, last = 0, 0
    looks = list(zip(design.looks, design.confidence, strict=True))
    for n, (cycles, conf) in enumerate(looks):
        alive = [a for a in arms if a not in dropped]
        sessions += len(alive) * (cycles - last)
        last = cycles
        views = {s: restrict(d, cycles, dropped) for s, d in full.items()}
        drops = [
            {a for a, _ in arms_to_drop(v, alpha_look=1.0 - conf, boot=boot, seed=seed)}
            for v in views.values()
        ]
        for arm in set.intersection(*drops):
            dropped[arm] = cycles
        if len([a for a in arms if a not in dropped]) <= 2 or n == len(looks) - 1:
            break
        if margin_pct is not None and all(
            best_set(
                restrict(d, cycles, dropped), alpha=1.0 - conf, boot=boot, seed=seed
            ).within_margin(margin_pct)
            for d in full.values()
        ):
            break
    alpha = 1.0 - conf
    best_dropped = False
    truth_in, covered, false_start = True, True, False
    for subset in views:
        mu = curve.effects[subset]
        top = max(mu)
        winners = [a for a, m in zip(arms, mu, strict=True) if m == top]
        if len(winners) == 1 and winners[0] in dropped:
            best_dropped = True
        data = restrict(full[subset], cycles, dropped)
        best = best_set(data, alpha=alpha, boot=boot, seed=seed)
        truth_in &= bool(set(winners) & set(best.best))
        covered &= _covered(best.intervals, arms, mu)
        false_start |= false_calls(data, mu, boot, seed, alpha)
    return Sequential(
        best_dropped, sessions, len(arms) * design.looks[-1], truth_in, covered, false_start,
        cycles,
    )  # fmt: skip


# Known curves (percent change per arm against the baseline, the baseline first).
FLAT = Curve({"prose": pct((0, 0, 0, 0, 0, 0, 0))})
KNEE = Curve({"prose": pct((0, 0, 0, 0, 8, 10, 11))})  # the gain starts at v4
INSIDE = Curve({"prose": pct((0, 3, 7, 10, 9, 4, -2))})  # the best, v3, inside the range
TIE = Curve({"prose": pct((0, 5, 10, 10, 5, 0, -5))})  # two true bests: each must stay in
LOSERS = Curve({"prose": pct((0, -20, -8, 6, 10, 9, -12))})  # clear losers at both ends
REVERSAL = Curve(
    {"structured": pct((0, 6, 9, 11, 12, 12, 12)), "prose": pct((0, -8, -4, 0, 2, 2, 2))},
    direction={"structured": "faster", "prose": "slower"},
    start={"structured": "last", "prose": "first"},
)  # a loss on prose below v3, a gain on structured everywhere
HEAVY = replace(
    KNEE, session_sd=0.03
)  # sessions twice as noisy: the looks before 4 cycles miss them
CURVES: tuple[tuple[str, Curve], ...] = (
    ("flat null", FLAT),
    ("knee at v4", KNEE),
    ("best inside (v3)", INSIDE),
    ("tie at the top", TIE),
    ("clear losers", LOSERS),
    ("reversal on prose", REVERSAL),
    ("knee, session-heavy", HEAVY),
)
