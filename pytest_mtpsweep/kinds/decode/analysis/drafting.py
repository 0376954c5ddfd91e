"""Speculative decoding as a mechanism (issue 49): tokens per step, drafted tokens per step,
acceptance, the step's cost against a plain step, break-even, ceiling and predicted speedup, each
with an interval from a paired cluster bootstrap.

The cost model (Leviathan et al. 2023; Chen et al. 2023): a step verifies k drafted tokens in one
batch and yields L = 1 + a tokens (a accepted); with per-position acceptance p1 >= p2 >= ...,
E[L] = 1 + sum_k prod_{i<=k} p_i. A step costs C(k) = T_verify(k) + k * T_draft against T1 for a
plain step, so the speedup is E[L] * T1 / C(k); drafting pays where E[L] passes the break-even
C(k) / T1, and the ceiling is the speedup with every draft accepted, (k + 1) * T1 / C(k).

Every count enters as a sum over a (prompt, cycle) cell and every quantity is a ratio of sums
(tokens / steps, not a mean of per-request ratios, which weights a short answer like a long
one and is biased). Prompts are the clusters and cycles the session level: a resample draws
prompts and, from two cycles on, cycles too (a crossed, "pigeonhole" bootstrap, Owen 2007),
with one draw shared by the treatment, its baseline and every arm of the subset, so the pairing
by prompt and cycle holds in every resample. The interval is est +- t * SD of the resampled logs
(widened for few cycles, `spread_factor`) at the prompts' df: bench/mechanism_coverage.py
measures its coverage.

The model's step cost is estimated from the run's own arms: a least-squares line of step time
(in plain steps) on k-bar across the drafting arms of one drafter, C(k)/T1 = fixed + per_draft * k,
refitted in every resample. With one arm, or arms whose k-bar does not vary, the line cannot be
fitted: the arm's own step cost stands, the predicted speedup equals the measured one by
construction and the efficiency is not given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ....kindapi.analysis import Resamples, t_quantile
from .contraststats import FloatArray

SAVES, COSTS, CANNOT_TELL, DRAFTED_NONE = "saves", "costs", "cannot tell", "drafted no tokens"


@dataclass(frozen=True)
class CellCounts:
    """One drafting arm in one subset, paired with its baseline: sums per (prompt, cycle), each a
    (prompts, cycles) array, 0 where that pair has no valid measurement of both arms."""

    tokens: FloatArray  # decoded after the first token: predicted_n - 1
    steps: FloatArray  # tokens - draft_n_accepted
    drafted: FloatArray
    accepted: FloatArray
    ms: FloatArray  # predicted_ms
    base_tokens: FloatArray  # the baseline's predicted_n - 1 on the same prompts and cycles
    base_ms: FloatArray


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its 95 % interval (NaN where it cannot be had)."""

    value: float
    low: float = math.nan
    high: float = math.nan


@dataclass(frozen=True)
class ArmMechanism:
    """The mechanism of one arm in one subset; every ratio in plain steps (T1 = 1)."""

    mean_len: Estimate  # E[L]
    k_bar: Estimate  # k-bar
    acceptance: Estimate  # accepted / drafted
    step_ratio: Estimate  # T_step / T1, which is also the break-even E[L]
    ceiling: Estimate  # (k-bar + 1) / step ratio
    measured: Estimate  # E[L] / step ratio: the server clock's speedup
    predicted: Estimate  # E[L] / (fixed + per_draft * k-bar), the fitted cost
    efficiency: Estimate  # measured / predicted
    verdict: str  # SAVES, COSTS, CANNOT_TELL or DRAFTED_NONE
    fitted: bool  # whether the step cost came from a line over several arms


def expected_length(rates: Sequence[float]) -> float:
    """E[L] = 1 + sum_k prod_{i<=k} p_i for conditional per-position acceptance rates p_1, ...

    llama-server's `--spec-synth-rates` are not these: they are the chances of reaching each
    position (already the products), so its planted E[L] is 1 + sum(rates) (it logs "mean
    length = 2.8" for 0.9,0.6,0.3)."""
    return 1.0 + float(np.cumprod(np.asarray(rates, dtype=np.float64)).sum()) if rates else 1.0


def per_position_problem(rates: Sequence[float]) -> str | None:
    """Why per-position acceptance rates cannot be (outside [0, 1], or rising), or None.

    A draft at position i + 1 is verified only after the one at i was accepted, so the rate of
    reaching it cannot exceed the rate of reaching i."""
    for i, p in enumerate(rates):
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            return f"acceptance at position {i + 1} is {p!r}, not a rate in [0, 1]"
        if i and p > rates[i - 1] + 1e-9:
            return f"acceptance rises from {rates[i - 1]:g} at position {i} to {p:g} at {i + 1}"
    return None


def weights(n: int, boot: int, seed: int, name: str) -> FloatArray:
    """(boot + 1, n) draw counts: row 0 all ones (the point estimate), then `boot` resamples."""
    idx = Resamples.indices(n, boot, seed, name)
    counts = np.zeros((boot, n))
    np.add.at(counts, (np.arange(boot)[:, None], idx), 1.0)
    return np.vstack([np.ones((1, n)), counts])


def draw_weights(
    prompts: int, cycles: int, boot: int, seed: int, subset: str
) -> tuple[FloatArray, FloatArray]:
    """Prompt and cycle draw counts for one subset; one cycle stays fixed (all ones).

    Unlike the rate's session level (4 cycles at least), cycles are drawn from 2 on: a step's
    cost moves with its session, and at 2-3 cycles leaving them fixed covered the predicted
    speedup in 0.72 of replications (bench/mechanism_coverage.py)."""
    wp = weights(prompts, boot, seed, subset)
    if cycles < 2:
        return wp, np.ones((boot + 1, cycles))
    return wp, weights(cycles, boot, seed, f"{subset}\x00cycles")


def spread_factor(cycles: int) -> float:
    """How much wider than the resamples' SD an interval is: sqrt(C / (C - 1)) with cycles drawn,
    as a bootstrap of C values understates their variance by (C - 1) / C (it also widens the
    prompts' share a little: conservative)."""
    return math.sqrt(cycles / (cycles - 1)) if cycles >= 2 else 1.0


def _total(x: FloatArray, wp: FloatArray, wc: FloatArray) -> FloatArray:
    return np.asarray(np.einsum("bp,pc,bc->b", wp, x, wc))


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def arm_draws(cell: CellCounts, wp: FloatArray, wc: FloatArray) -> dict[str, FloatArray]:
    """Each ratio of sums at the point (index 0) and in every resample: E[L], k-bar, acceptance,
    the step ratio T_step / T1 and the measured speedup."""
    steps = _total(cell.steps, wp, wc)
    mean_len = _ratio(_total(cell.tokens, wp, wc), steps)
    t_step = _ratio(_total(cell.ms, wp, wc), steps)
    t1 = _ratio(_total(cell.base_ms, wp, wc), _total(cell.base_tokens, wp, wc))
    step_ratio = _ratio(t_step, t1)
    return {
        "mean_len": mean_len,
        "k_bar": _ratio(_total(cell.drafted, wp, wc), steps),
        "acceptance": _ratio(_total(cell.accepted, wp, wc), _total(cell.drafted, wp, wc)),
        "step_ratio": step_ratio,
        "measured": _ratio(mean_len, step_ratio),
    }


def fit_cost(k: FloatArray, ratio: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per draw, the least-squares line ratio = fixed + per_draft * k over the arms (rows of
    `k` and `ratio`, each (arms, draws)); NaN where k-bar does not vary."""
    k_mean, r_mean = k.mean(axis=0), ratio.mean(axis=0)
    dk = k - k_mean
    sxx = (dk * dk).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(sxx > 1e-12, (dk * (ratio - r_mean)).sum(axis=0) / sxx, np.nan)
    return r_mean - slope * k_mean, slope


def interval(draws: FloatArray, df: float, *, log: bool = True, factor: float = 1.0) -> Estimate:
    """The point (draw 0) +- t(df) * factor * SD of the resamples, on the log scale for a ratio;
    the resamples that are not finite (a draw without any step) are left out."""
    point = float(draws[0])
    if not math.isfinite(point) or (log and point <= 0):
        return Estimate(math.nan)
    rest = draws[1:]
    rest = rest[np.isfinite(rest) & (rest > 0)] if log else rest[np.isfinite(rest)]
    q = factor * t_quantile(0.975, df) if df >= 1 else math.nan
    if rest.size < 2 or not math.isfinite(q):
        return Estimate(point)
    if log:
        half = q * float(np.log(rest).std(ddof=1))
        return Estimate(point, point * math.exp(-half), point * math.exp(half))
    half = q * float(rest.std(ddof=1))
    return Estimate(point, point - half, point + half)


def verdict(measured: Estimate, drafted: float) -> str:
    """Whether drafting saves more than it costs: the measured speedup's interval (E[L] against
    its break-even) above 1, below 1, or straddling it; an arm that drafted nothing is named so."""
    if drafted <= 0:
        return DRAFTED_NONE
    if measured.low > 1.0:
        return SAVES
    if measured.high < 1.0:
        return COSTS
    return CANNOT_TELL


def subset_mechanism(
    cells: Mapping[str, CellCounts], *, boot: int, seed: int, subset: str, df: float
) -> dict[str, ArmMechanism]:
    """Every arm of one drafter in one subset (cells share their prompts and cycles): the ratios
    with intervals, the cost line fitted over the arms that drafted, and each arm's prediction."""
    if not cells:
        return {}
    first = next(iter(cells.values()))
    n_prompts, n_cycles = first.tokens.shape
    wp, wc = draw_weights(int(n_prompts), int(n_cycles), boot, seed, subset)
    factor = spread_factor(first.tokens.shape[1])

    def est(values: FloatArray) -> Estimate:
        return interval(values, df, factor=factor)

    draws = {arm: arm_draws(cell, wp, wc) for arm, cell in cells.items()}
    drafting = [a for a, c in cells.items() if float(c.drafted.sum()) > 0]
    fixed = per_draft = np.full(boot + 1, np.nan)
    if len(drafting) >= 2:
        k = np.vstack([draws[a]["k_bar"] for a in drafting])
        fixed, per_draft = fit_cost(k, np.vstack([draws[a]["step_ratio"] for a in drafting]))
    fitted = bool(np.isfinite(fixed[0]))
    out = {}
    for arm, d in draws.items():
        cost = fixed + per_draft * d["k_bar"] if fitted else d["step_ratio"]
        predicted = _ratio(d["mean_len"], cost)
        measured = est(d["measured"])
        out[arm] = ArmMechanism(
            mean_len=est(d["mean_len"]),
            k_bar=est(d["k_bar"]),
            acceptance=est(d["acceptance"]),
            step_ratio=est(d["step_ratio"]),
            ceiling=est(_ratio(d["k_bar"] + 1.0, d["step_ratio"])),
            measured=measured,
            predicted=est(predicted),
            efficiency=est(_ratio(d["measured"], predicted)) if fitted else Estimate(math.nan),
            verdict=verdict(measured, float(cells[arm].drafted.sum())),
            fitted=fitted and arm in drafting,
        )
    return out


def cost_line(
    cells: Mapping[str, CellCounts], *, boot: int, seed: int, subset: str, df: float
) -> tuple[Estimate, Estimate]:
    """(fixed, per_draft) of the step-cost line C(k)/T1 = fixed + per_draft * k over the arms
    that drafted, with intervals (linear scale); NaN with fewer than two arms or one k-bar."""
    drafting = {a: c for a, c in cells.items() if float(c.drafted.sum()) > 0}
    if len(drafting) < 2:
        return Estimate(math.nan), Estimate(math.nan)
    first = next(iter(drafting.values()))
    n_prompts, n_cycles = first.tokens.shape
    wp, wc = draw_weights(int(n_prompts), int(n_cycles), boot, seed, subset)
    draws = [arm_draws(c, wp, wc) for c in drafting.values()]
    k = np.vstack([d["k_bar"] for d in draws])
    fixed, per_draft = fit_cost(k, np.vstack([d["step_ratio"] for d in draws]))
    factor = spread_factor(first.tokens.shape[1])
    return (
        interval(fixed, df, log=False, factor=factor),
        interval(per_draft, df, log=False, factor=factor),
    )
