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
run's. A cell's plan on this model is `cellplan.CellPlan`'s.
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
