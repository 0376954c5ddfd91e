"""Planning from a pilot: how many cycles a headline cell needs for its published 95 % interval
to reach a half-width, from the variance components of the cycles run so far.

A cell's pair log ratios follow the two-way model the analysis itself uses (Spread.of_sessions):
y[p, c] = mu + a_p + b_c + e_pc, prompts p = 1..n, cycles c = 1..k, with variances σa² (prompt),
σb² (session pair) and σe² (cell noise). At k cycles the published estimator's terms have the
expectations

    prompt term  P = var(prompt means)/n = (σa² + σe²/k)/n        (df n - 1)
    cycle term   C = var(cycle means)/k  = (σb² + σe²/n)/k        (df k - 1)
    residual     R = MS_E/(n k)          = σe²/(n k)              (df (n - 1)(k - 1))

so, exactly as the estimator does, SE² = P below INTERVAL.session_cycles cycles (df n - 1) and
SE² = P + max(0, C - R) from there (Satterthwaite df over P, C and R, floored at
min(n - 1, k - 1); n - 1 when the session share is 0), and the half-width is 100·e^est·sinh(q·SE) with q the larger of Student's t and
the capped bootstrap-t quantile (the pilot's, carried as a multiple of t at n - 1 df: it
reflects the prompts' shape, not the cycles). The σa²/n term does not shrink with cycles: a
cell whose prompts disagree has a floor only more prompts lower.

The components are estimates (the session's from k - 1 degrees of freedom: one after a 2-cycle
pilot), so the range comes from draws of the three mean squares (half from each one's
chi-square interval, half from the parametric bootstrap), each followed by the mean squares a
run of k cycles would then estimate (E·χ²_df/df): it spans both the pilot's chance and the
run's. A cell whose unit is the cycle (load's per-block throughput) is `plan_by_cycle`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..base.constants import INTERVAL
from ..ladder.values import MAX_CYCLES
from .stats import FloatArray

MAX_PLAN_CYCLES = MAX_CYCLES  # what a ladder may plan
RANGE = (0.10, 0.90)  # the central 80 % of the draws: the range printed beside the estimate
DRAWS = 4000


@dataclass(frozen=True)
class Components:
    """A cell's mean squares (log scale) from its complete prompt × cycle rows."""

    n: int  # prompts with pairs: the estimator's clusters
    cycles: int  # cycles the pilot ran
    ms_prompt: float  # k·var(row means), df n_rows - 1
    ms_cycle: float  # n_rows·var(column means), df k - 1
    ms_noise: float  # the two-way residual mean square, df (n_rows - 1)(k - 1)
    rows: int  # complete rows the mean squares come from

    @property
    def dfs(self) -> tuple[float, float, float]:
        r, k = self.rows - 1.0, self.cycles - 1.0
        return r, k, r * k


def variances(ms_p: FloatArray, ms_c: FloatArray, ms_e: FloatArray, k: int, n: int) -> FloatArray:
    """(σa², σb², σe²) from mean squares; a negative estimate is 0, as Spread.of_sessions has it."""
    prompt = np.maximum(0.0, (ms_p - ms_e) / k)
    session = np.maximum(0.0, (ms_c - ms_e) / n)
    return np.stack([prompt, session, np.asarray(ms_e, dtype=np.float64)])


def point_variances(comp: Components) -> FloatArray:
    """(σa², σb², σe²) of the pilot's own mean squares, each (1,)."""
    ms = [np.array([m]) for m in (comp.ms_prompt, comp.ms_cycle, comp.ms_noise)]
    return variances(ms[0], ms[1], ms[2], comp.cycles, comp.rows)


def components(matrix: FloatArray) -> Components | None:
    """The mean squares of a prompts × cycles matrix of log ratios (NaN: no pair); None when
    fewer than 2 cycles or 2 complete rows leave nothing to separate."""
    has = np.isfinite(matrix)
    matrix = matrix[:, has.any(axis=0)]
    n = int(np.isfinite(matrix).any(axis=1).sum())
    rows = matrix[np.isfinite(matrix).all(axis=1)]
    m, k = rows.shape
    if k < 2 or m < 2:
        return None
    col, row, grand = rows.mean(axis=0), rows.mean(axis=1), float(rows.mean())
    resid = rows - row[:, None] - col[None, :] + grand
    return Components(
        n=n,
        cycles=k,
        ms_prompt=float(k * row.var(ddof=1)),
        ms_cycle=float(m * col.var(ddof=1)),
        ms_noise=float((resid**2).sum()) / ((m - 1) * (k - 1)),
        rows=m,
    )


def expected_ms(var: FloatArray, n: int, k: int) -> FloatArray:
    """E[MS_P], E[MS_C], E[MS_E] at n prompts and k cycles for components (σa², σb², σe²)."""
    return np.stack([var[2] + k * var[0], var[2] + n * var[1], var[2]])


def realised_ms(var: FloatArray, n: int, k: int, rng: np.random.Generator) -> FloatArray:
    """One draw of what a run of k cycles would estimate: each mean square E·χ²_df/df."""
    dfs = (n - 1.0, max(k - 1.0, 1.0), (n - 1.0) * max(k - 1.0, 1.0))
    ms = expected_ms(var, n, k)
    return np.stack(
        [m * rng.chisquare(df, size=m.shape) / df for m, df in zip(ms, dfs, strict=True)]
    )


def width_from_ms(
    ms: FloatArray, n: int, k: int, est: float, q_ratio: float = 0.0, confidence: float = 0.95
) -> FloatArray:
    """The published interval's half-width (percent) from a k-cycle run's mean squares (3, ...)
    = (MS_P, MS_C, MS_E), by the estimator's own formulas (module docstring).

    `q_ratio` is the pilot's bootstrap-t quantile over Student's t at n - 1 df (0: t alone):
    the bootstrap-t part of q, which depends on the prompts' shape rather than on the cycles.
    """
    from scipy.special import stdtrit

    prompt = ms[0] / (k * n)
    df_p = float(n - 1)
    if k < INTERVAL.session_cycles:
        total, df = prompt, np.full_like(prompt, df_p)
    else:
        cycle, resid = ms[1] / (n * k), ms[2] / (n * k)
        session = np.maximum(0.0, cycle - resid)
        total = prompt + session
        den = prompt**2 / df_p + cycle**2 / (k - 1) + resid**2 / (df_p * (k - 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            # Floored at the fewest df of a positive term, as Spread.of_sessions floors it.
            df = np.where(session > 0, np.maximum(total**2 / den, min(df_p, k - 1.0)), df_p)
    q_t = stdtrit(df, 0.5 + confidence / 2.0)
    q = np.maximum(
        q_t,
        np.minimum(
            q_ratio * stdtrit(df_p, 0.5 + confidence / 2.0), INTERVAL.boot_t_max_factor * q_t
        ),
    )
    with np.errstate(over="ignore"):  # a hopeless draw's width is inf, which no target meets
        return np.asarray(100.0 * math.exp(est) * np.sinh(q * np.sqrt(total)))


def half_width(
    var: FloatArray, n: int, k: int, est: float, q_ratio: float = 0.0, confidence: float = 0.95
) -> FloatArray:
    """The expected run's half-width (percent) at k cycles for components `var` (3, ...):
    the estimator's formulas at the expected mean squares."""
    return width_from_ms(expected_ms(var, n, k), n, k, est, q_ratio, confidence)


def even_cycles(max_cycles: int) -> tuple[int, ...]:
    """The cycle counts a plan may name: whole counterbalanced pairs, 2 to max_cycles."""
    return tuple(range(2, max_cycles + 1, 2))


def first_reaching(widths: FloatArray, ks: Sequence[int], target: float) -> FloatArray:
    """Per row of widths (rows, len(ks)): the first k whose width is within target, else inf."""
    ok = widths <= target
    first = np.argmax(ok, axis=-1)
    return np.where(ok.any(axis=-1), np.asarray(ks, dtype=np.float64)[first], np.inf)


@dataclass(frozen=True)
class CellPlan:
    """One headline cell's plan: cycles to reach the target, with its range and floor."""

    cell: str  # treatment:subset
    endpoint: str
    n_prompts: int
    pilot_cycles: int
    now: float  # the published half-width now (percent), NaN without an interval
    cycles: int | None  # None: not within max_cycles
    low: int | None  # the range's ends: None on `high` means beyond max_cycles
    high: int | None
    width_at_max: float  # predicted half-width at max_cycles
    floor: float  # the half-width no number of cycles goes below (prompts set it)
    note: str = ""

    @property
    def reachable(self) -> bool:
        return self.cycles is not None


def pilot_ratio(row: Mapping[str, object], n: int, confidence: float) -> float:
    """The pilot's bootstrap-t quantile over Student's t at n - 1 df, when the bootstrap-t set
    its published q; else 0 (Student's t governed: the bootstrap-t quantile was at most t, and
    the prediction is then t's alone)."""
    from scipy.special import stdtrit

    lo, hi = float(row["ci_low"]), float(row["ci_high"])  # type: ignore[arg-type]
    se, df = float(row["se_pct"]) / 100.0, float(row["df"])  # type: ignore[arg-type]
    usable = all(math.isfinite(v) for v in (lo, hi, se, df)) and lo > -100.0
    if not usable or se <= 0 or df <= 0 or n < 2:  # -100 %: exp underflowed, q is lost
        return 0.0
    p = 0.5 + confidence / 2.0
    q = (math.log1p(hi / 100.0) - math.log1p(lo / 100.0)) / 2.0 / se
    if q <= float(stdtrit(df, p)) * (1.0 + 1e-6):
        return 0.0
    return q / float(stdtrit(n - 1.0, p))


def plan_cell(
    cell: str,
    endpoint: str,
    matrix: FloatArray,
    row: Mapping[str, object],
    *,
    target: float,
    max_cycles: int,
    confidence: float = 0.95,
    pilot_confidence: float = 0.95,
    draws: int = DRAWS,
    seed: int = 0,
) -> CellPlan:
    """The plan of one cell from its prompts × cycles log ratios and its published row
    (`pilot_confidence`: the level that row was published at, a [stop] look's or 95 %)."""
    now = _now(row)
    comp = components(matrix)
    n = int(np.isfinite(matrix).any(axis=1).sum())
    cycles_run = int(np.isfinite(matrix).any(axis=0).sum())
    if comp is None:
        why = (
            "no pair of this treatment and the baseline yet"
            if cycles_run == 0
            else "under 2 cycles the prompts' spread and the noise are one; run a cycle pair"
            if cycles_run < 2
            else "fewer than 2 prompts have pairs in every cycle"
        )
        return CellPlan(
            cell, endpoint, n, cycles_run, now, None, None, None, math.nan, math.nan, why
        )
    pct = float(row["pct_change"])  # type: ignore[arg-type]
    est = math.log1p(pct / 100.0) if math.isfinite(pct) and pct > -100.0 else 0.0
    ratio = pilot_ratio(row, n, pilot_confidence)
    ks = even_cycles(max_cycles)
    point = point_variances(comp)
    widths = np.stack([half_width(point, n, k, est, ratio, confidence) for k in ks], axis=-1)
    best = first_reaching(widths, ks, target)[0]
    # The range: components drawn from the pilot's chi-square intervals, then what a run of k
    # cycles would estimate with them, so it spans both the pilot's and the run's chance.
    rng = np.random.default_rng(seed)
    drawn = component_draws(comp, draws, rng)
    curves = np.stack(
        [width_from_ms(realised_ms(drawn, n, k, rng), n, k, est, ratio, confidence) for k in ks],
        axis=-1,
    )
    need = first_reaching(curves, ks, target)
    low, high = np.quantile(need, RANGE, method="lower")
    floor = half_width(point, n, 10**9, est, ratio, confidence)[0]
    notes = []
    if now <= target and pilot_confidence >= confidence:
        # The run already holds it: its own interval outranks the model, which at the pilot's
        # cycles differs from it only where a component was truncated at 0.
        best, low = min(best, comp.cycles), min(low, comp.cycles)
        notes.append(f"reached: this run's interval is ±{now:.1f} %")
    if n < INTERVAL.min_prompts:
        notes.append(f"{n} prompts: no decision below {INTERVAL.min_prompts} at any cycles")
    if not math.isfinite(best) and floor > target:
        notes.append(f"the prompts' spread alone gives ±{floor:.1f} %: add prompts")
    return CellPlan(
        cell=cell,
        endpoint=endpoint,
        n_prompts=n,
        pilot_cycles=comp.cycles,
        now=now,
        cycles=int(best) if math.isfinite(best) else None,
        low=int(low) if math.isfinite(low) else None,
        high=int(high) if math.isfinite(high) else None,
        width_at_max=float(widths[0, -1]),
        floor=float(floor),
        note="; ".join(notes),
    )


def _now(row: Mapping[str, object]) -> float:
    lo, hi = float(row["ci_low"]), float(row["ci_high"])  # type: ignore[arg-type]
    return (hi - lo) / 2.0 if math.isfinite(lo) and math.isfinite(hi) else math.nan


def component_draws(comp: Components, draws: int, rng: np.random.Generator) -> FloatArray:
    """Draws of (σa², σb², σe²) (3, draws): half fiducial, each mean square ms·df/χ²_df (the
    chi-square interval's distribution), half parametric bootstrap, ms·χ²_df/df.

    With the 1 df of a 2-cycle pilot's session term the two disagree most: by
    bench/plan_accuracy.py the fiducial half alone held 0.63 of the runs without a session
    effect in its 80 % range and the bootstrap half alone 0.59 of the session-heavy ones; the
    mixture holds 0.78-0.97 (docs/analysis.md, "Planning from a pilot").
    """
    half = draws // 2
    ms = []
    for value, df in zip((comp.ms_prompt, comp.ms_cycle, comp.ms_noise), comp.dfs, strict=True):
        fiducial = value * df / rng.chisquare(df, size=half)
        boot = value * rng.chisquare(df, size=draws - half) / df
        ms.append(np.concatenate([fiducial, boot]))
    return variances(ms[0], ms[1], ms[2], comp.cycles, comp.rows)


def plan_by_cycle(
    cell: str,
    endpoint: str,
    values: FloatArray,
    *,
    target: float,
    max_cycles: int,
    draws: int = DRAWS,
    seed: int = 0,
) -> CellPlan:
    """The plan of a cell whose unit is the cycle (one log gain per cycle, Student's t at
    k - 1 df, no bootstrap): SE² = s²/k, so more cycles always help and there is no floor."""
    from scipy.special import stdtrit

    v = values[np.isfinite(values)]
    k0 = int(v.size)
    if k0 < 2:
        why = "under 2 cycles there is no spread between cycles to plan from; run a cycle pair"
        return CellPlan(cell, endpoint, k0, k0, math.nan, None, None, None, math.nan, math.nan, why)
    est, var = float(v.mean()), float(v.var(ddof=1))
    t0 = float(stdtrit(k0 - 1, 0.975))
    now = 100.0 * math.exp(est) * math.sinh(t0 * math.sqrt(var / k0))
    ks = even_cycles(max_cycles)

    def width(s2: FloatArray, k: int) -> FloatArray:
        with np.errstate(over="ignore"):
            return np.asarray(
                100.0 * math.exp(est) * np.sinh(stdtrit(k - 1, 0.975) * np.sqrt(s2 / k))
            )

    point = np.stack([width(np.array([var]), k) for k in ks], axis=-1)
    best = first_reaching(point, ks, target)[0]
    rng = np.random.default_rng(seed)
    half, df = draws // 2, k0 - 1.0
    drawn = var * np.concatenate(
        [df / rng.chisquare(df, half), rng.chisquare(df, draws - half) / df]
    )
    curves = np.stack(
        [width(drawn * rng.chisquare(k - 1, draws) / (k - 1), k) for k in ks], axis=-1
    )
    low, high = np.quantile(first_reaching(curves, ks, target), RANGE, method="lower")
    return CellPlan(
        cell=cell,
        endpoint=endpoint,
        n_prompts=0,  # the cycle is the unit: prompts do not enter
        pilot_cycles=k0,
        now=now,
        cycles=int(best) if math.isfinite(best) else None,
        low=int(low) if math.isfinite(low) else None,
        high=int(high) if math.isfinite(high) else None,
        width_at_max=float(point[0, -1]),
        floor=0.0,
    )


def cycle_seconds(sessions: Sequence[Mapping[str, object]]) -> float | None:
    """One cycle's wall time: per treatment its sessions' mean duration_s, summed (None when
    no session file says)."""
    per: dict[str, list[float]] = {}
    for s in sessions:
        d = s.get("duration_s")
        if isinstance(d, int | float) and not isinstance(d, bool) and math.isfinite(d) and d >= 0:
            per.setdefault(str(s.get("treatment")), []).append(float(d))
    if not per:
        return None
    return sum(sum(v) / len(v) for v in per.values())
