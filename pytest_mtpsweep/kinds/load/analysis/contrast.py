"""Treatment vs baseline per level, and how the gain changes from the lowest level to the
highest (the interaction), each with its interval (pure; the intervals are the decode
analysis' own, `analysis/stats.py`).

Gain, on the log scale: log(baseline / treatment) for a latency (positive: the treatment is
faster), log(treatment / baseline) for a throughput (positive: it serves more). Per-request
endpoints pair request i of a treatment's block with request i of the baseline's block of the
same cycle and level (the same prompt at the same place in the schedule); the pairs' gains are
averaged per (prompt, cycle), per prompt over cycles, and over prompts with equal weight, so a
prompt is the cluster (the bootstrap resamples prompts; with 4 or more cycles the session level
enters the SE as in decode). Per-block endpoints (output tok/s, req/s, goodput, and joules
per token, where less is better) have one value per cycle: the cycle is the unit, the interval
Student's t at cycles - 1 df. The interaction
is the same estimate on the difference high - low of the gains, per (prompt, cycle) or per cycle:
the ratio of gain factors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ....kindapi.analysis import INTERVAL, Resamples, Spread, to_pct
from ..records import E2E_MS, GOODPUT_REQ_S, ITL_MEAN_MS, J_PER_TOKEN, OUTPUT_TOK_S, REQ_S, TTFT_MS

if TYPE_CHECKING:
    import pandas as pd

REQUEST_ENDPOINTS = {"ttft": TTFT_MS, "itl": ITL_MEAN_MS, "e2e": E2E_MS}
LEVEL_ENDPOINTS = (OUTPUT_TOK_S, REQ_S, GOODPUT_REQ_S, J_PER_TOKEN)
# per-block endpoints where less is better: the gain is baseline / treatment, as a latency's
LOWER_IS_BETTER = frozenset({J_PER_TOKEN})
# per-block endpoints that only some runs have (goodput: SLOs; energy: NVML)
OPTIONAL = (GOODPUT_REQ_S, J_PER_TOKEN)
BY_CYCLE = "t over cycles"

FloatArray = npt.NDArray[np.float64]  # the kind's float array type


@dataclass(frozen=True)
class Estimate:
    """A mean log gain, its 95 % interval (log scale), and how it was had."""

    est: float
    low: float
    high: float
    se: float
    df: float
    method: str
    n_clusters: int
    n_pairs: int
    cycles: int


def _nan_estimate(method: str = "none") -> Estimate:
    return Estimate(math.nan, math.nan, math.nan, math.nan, math.nan, method, 0, 0, 0)


def clustered(
    matrix: FloatArray, n_pairs: int, *, boot: int, seed: int, key: str, confidence: float = 0.95
) -> Estimate:
    """The estimate from a clusters x cycles matrix of mean log gains (NaN where missing), its
    interval at `confidence` (0.95; a sequential look's own level under a stop rule)."""
    finite_rows = np.isfinite(matrix).any(axis=1)
    m = matrix[finite_rows]
    if m.shape[0] == 0:
        return _nan_estimate()
    with np.errstate(invalid="ignore"):
        per = np.nanmean(m, axis=1)
    est = float(per.mean())
    cycles = int(np.isfinite(m).any(axis=0).sum())
    spread: Spread = Spread.of_prompts([per])
    if cycles >= INTERVAL.session_cycles:
        shared = m[:, np.isfinite(m).any(axis=0)]
        spread = Spread.of_sessions([per], [shared])
    idx = Resamples.indices(per.size, boot, seed, key)
    summary = Resamples.of(per[None, :], idx).summary(np.array([est]), (confidence, 0.90))
    low, high = spread.interval(est, float(summary.q95[0]), confidence)
    method = spread.method if spread.method == Spread.WITH_SESSION else "boot-t (prompts)"
    return Estimate(est, low, high, spread.se, spread.df, method, int(per.size), n_pairs, cycles)


def by_cycle(values: FloatArray, confidence: float = 0.95) -> Estimate:
    """The estimate from one log gain per cycle: Student's t at cycles - 1 df."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return _nan_estimate(BY_CYCLE)
    est = float(v.mean())
    spread = Spread.of_prompts([v])
    low, high = spread.interval(est, math.nan, confidence)
    return Estimate(
        est, low, high, spread.se, spread.df, BY_CYCLE, int(v.size), int(v.size), int(v.size)
    )


def request_gains(
    requests: pd.DataFrame, treatment: str, baseline: str, level: str, endpoint: str
) -> pd.DataFrame:
    """Each pair's log gain (baseline over treatment) with its prompt and cycle."""
    col = REQUEST_ENDPOINTS[endpoint]
    keep = ["cycle", "request", "prompt_id", col]
    ok = requests[requests["valid"].astype(bool) & (requests["level"] == level)]
    t = ok[ok["treatment"] == treatment][keep]
    b = ok[ok["treatment"] == baseline][keep]
    pairs = t.merge(b, on=["cycle", "request", "prompt_id"], suffixes=("_t", "_b"))
    vt = pairs[f"{col}_t"].astype("float64").to_numpy()
    vb = pairs[f"{col}_b"].astype("float64").to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where((vt > 0) & (vb > 0), np.log(vb / vt), np.nan)
    out = pairs[["cycle", "prompt_id"]].assign(gain=gain)
    return out[np.isfinite(out["gain"])]


def cell_matrix(gains: pd.DataFrame) -> tuple[FloatArray, list[str], list[int]]:
    """(prompt, cycle) means of the gains as a prompts x cycles matrix."""
    cells = gains.groupby(["prompt_id", "cycle"])["gain"].mean().unstack("cycle")
    return cells.to_numpy(dtype=np.float64), [str(p) for p in cells.index], list(cells.columns)


def cycle_gains(
    requests: pd.DataFrame, treatment: str, baseline: str, level: str, endpoint: str
) -> dict[int, float]:
    """cycle -> the gain (percent) of one cycle's pairs alone, prompts weighted equally: a
    session that was slowed shows as a cycle unlike the others."""
    gains = request_gains(requests, treatment, baseline, level, endpoint)
    cells = gains.groupby(["cycle", "prompt_id"])["gain"].mean().groupby("cycle").mean()
    return {int(c): to_pct(float(v)) for c, v in cells.items()}


def level_gains(
    levels: pd.DataFrame, treatment: str, baseline: str, level: str, endpoint: str
) -> dict[int, float]:
    """cycle -> log(treatment / baseline) of a block figure (valid blocks only); of baseline /
    treatment where less is better (energy per token)."""
    ok = levels[levels["valid"].astype(bool) & (levels["level"] == level)]
    t = ok[ok["treatment"] == treatment].set_index("cycle")[endpoint]
    b = ok[ok["treatment"] == baseline].set_index("cycle")[endpoint]
    out = {}
    for cycle in sorted(set(t.index) & set(b.index)):
        vt, vb = float(t[cycle] or math.nan), float(b[cycle] or math.nan)
        if vt > 0 and vb > 0:
            out[int(cycle)] = (
                math.log(vb / vt) if endpoint in LOWER_IS_BETTER else math.log(vt / vb)
            )
    return out


@dataclass(frozen=True)
class Row:
    """One row of the contrast or interaction table (percent)."""

    treatment: str
    baseline: str
    endpoint: str
    level: str  # the level, or "high/low" for an interaction
    gain_pct: float
    ci_low: float
    ci_high: float
    n_prompts: int
    n_pairs: int
    cycles: int
    se_log: float
    df: float
    method: str
    gain_low_pct: float = math.nan  # interactions: the gain at the lowest and the highest level
    gain_high_pct: float = math.nan

    @property
    def excludes_zero(self) -> bool:
        return self.ci_low > 0 or self.ci_high < 0


def _row(t: str, b: str, endpoint: str, level: str, e: Estimate, **extra: float) -> Row:
    return Row(
        t,
        b,
        endpoint,
        level,
        to_pct(e.est),
        to_pct(e.low),
        to_pct(e.high),
        e.n_clusters,
        e.n_pairs,
        e.cycles,
        e.se,
        e.df,
        e.method,
        **extra,
    )


def endpoints(levels: pd.DataFrame) -> list[str]:
    """The endpoints this run has: every per-request one, throughput, goodput with SLOs, and
    energy per token where NVML gave it."""

    def has(e: str) -> bool:
        return e in levels and bool(levels[e].notna().any()) if len(levels) else False

    return [*REQUEST_ENDPOINTS, *(e for e in LEVEL_ENDPOINTS if e not in OPTIONAL or has(e))]


def contrast_rows(
    requests: pd.DataFrame,
    levels: pd.DataFrame,
    pairs: Sequence[tuple[str, str]],
    order: Sequence[str],
    *,
    boot: int,
    seed: int,
    confidence: float = 0.95,
) -> list[Row]:
    """Every (treatment vs baseline, endpoint, level), in level order."""
    out = []
    for t, b in pairs:
        for ep in endpoints(levels):
            for level in order:
                out.append(
                    _row(
                        t,
                        b,
                        ep,
                        level,
                        _estimate(
                            requests,
                            levels,
                            t,
                            b,
                            level,
                            ep,
                            boot=boot,
                            seed=seed,
                            confidence=confidence,
                        ),
                    )
                )
    return out


def _estimate(
    requests: pd.DataFrame,
    levels: pd.DataFrame,
    t: str,
    b: str,
    level: str,
    ep: str,
    *,
    boot: int,
    seed: int,
    confidence: float = 0.95,
) -> Estimate:
    if ep in REQUEST_ENDPOINTS:
        gains = request_gains(requests, t, b, level, ep)
        return clustered(
            cell_matrix(gains)[0],
            len(gains),
            boot=boot,
            seed=seed,
            key=f"{t}:{b}:{ep}:{level}",
            confidence=confidence,
        )
    per = level_gains(levels, t, b, level, ep)
    return by_cycle(np.array(list(per.values()), dtype=np.float64), confidence)


def interaction_rows(
    requests: pd.DataFrame,
    levels: pd.DataFrame,
    pairs: Sequence[tuple[str, str]],
    modes: dict[str, list[str]],
    *,
    boot: int,
    seed: int,
    confidence: float = 0.95,
) -> list[Row]:
    """Per (contrast, endpoint, mode with 2+ levels): gain at the highest level over the gain at
    the lowest, paired by (prompt, cycle) for per-request endpoints and by cycle otherwise."""
    out = []
    for t, b in pairs:
        for ep in endpoints(levels):
            for labels in modes.values():
                if len(labels) < 2:
                    continue
                lo, hi = labels[0], labels[-1]
                e = _interaction(
                    requests, levels, t, b, lo, hi, ep, boot=boot, seed=seed, confidence=confidence
                )
                g_lo = _estimate(
                    requests, levels, t, b, lo, ep, boot=boot, seed=seed, confidence=confidence
                )
                g_hi = _estimate(
                    requests, levels, t, b, hi, ep, boot=boot, seed=seed, confidence=confidence
                )
                out.append(
                    _row(
                        t,
                        b,
                        ep,
                        f"{hi}/{lo}",
                        e,
                        gain_low_pct=to_pct(g_lo.est),
                        gain_high_pct=to_pct(g_hi.est),
                    )
                )
    return out


def _interaction(
    requests: pd.DataFrame,
    levels: pd.DataFrame,
    t: str,
    b: str,
    lo: str,
    hi: str,
    ep: str,
    *,
    boot: int,
    seed: int,
    confidence: float = 0.95,
) -> Estimate:
    if ep in REQUEST_ENDPOINTS:
        g_lo, g_hi = (request_gains(requests, t, b, lv, ep) for lv in (lo, hi))
        m_lo, p_lo, c_lo = cell_matrix(g_lo)
        m_hi, p_hi, c_hi = cell_matrix(g_hi)
        prompts = sorted(set(p_lo) & set(p_hi))
        cycles = sorted(set(c_lo) & set(c_hi))
        if not prompts or not cycles:
            return _nan_estimate()
        a = m_hi[np.ix_([p_hi.index(p) for p in prompts], [c_hi.index(c) for c in cycles])]
        z = m_lo[np.ix_([p_lo.index(p) for p in prompts], [c_lo.index(c) for c in cycles])]
        return clustered(
            a - z,
            len(g_lo) + len(g_hi),
            boot=boot,
            seed=seed,
            key=f"{t}:{b}:{ep}:{hi}/{lo}",
            confidence=confidence,
        )
    per_lo, per_hi = (level_gains(levels, t, b, lv, ep) for lv in (lo, hi))
    shared = sorted(set(per_lo) & set(per_hi))
    return by_cycle(np.array([per_hi[c] - per_lo[c] for c in shared], dtype=np.float64), confidence)


def rows_frame(rows: Sequence[Row]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([{**asdict(r), "excludes_zero": r.excludes_zero} for r in rows])
