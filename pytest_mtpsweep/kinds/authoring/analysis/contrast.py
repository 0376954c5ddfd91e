"""Cohort vs baseline cohort within a subject, paired by task; tasks are the unit of inference.

Repeats are averaged within a task first: a task is the cluster, and its repeats are not
independent. Per task, the green-rate endpoints pair the two cohorts' pass rates and the token
endpoints take log ratios. The estimate is the mean over tasks; for a ratio it is exp of the
mean log.
Intervals (95 %):
- pass rates ("green", "first_attempt"): Newcombe's hybrid score interval for paired
  proportions (`paired_binary`). It is made for paired binary data and keeps its width when
  every task ties. The interval it replaced, a t/bootstrap-t interval over per-task
  differences, collapsed to [0, 0] there;
- token ratios: the decode kind's published interval on the log ratios, i.e. t at n−1 df or
  the symmetric bootstrap-t over task resamples, whichever is wider. The resamples are drawn
  with `Resamples.indices` (seed and resamples from the ladder), one index matrix per
  (subject, cohort).
bench/pass_rate_coverage.py measures both intervals' coverage. Only informative cells enter,
and a task enters when both cohorts have one. Subjects are never pooled unless asked; then a
task's value is the mean over the subjects that all have it paired.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ....kindapi.analysis import Resamples, Spread
from ..records import COMPLETION_TOKENS, PROMPT_TOKENS
from .paired_binary import METHOD as PAIRED_METHOD
from .paired_binary import paired_difference

# endpoint -> (column, "difference" | "ratio")
ENDPOINTS: dict[str, tuple[str, str]] = {
    "green": ("green", "difference"),
    "first_attempt": ("first", "difference"),
    PROMPT_TOKENS: (PROMPT_TOKENS, "ratio"),
    COMPLETION_TOKENS: (COMPLETION_TOKENS, "ratio"),
}
LEVEL = 0.95
POOLED = "pooled"
RATIO_METHOD = Spread.PROMPTS_ONLY  # the decode kind's published interval: t or bootstrap-t
METHODS = {"difference": PAIRED_METHOD, "ratio": RATIO_METHOD}


@dataclass(frozen=True)
class Contrast:
    """One endpoint of one cohort vs the baseline cohort, in one subject (or pooled)."""

    subject: str
    cohort: str
    baseline: str
    endpoint: str
    scale: str  # "difference" (rates, in fractions) or "ratio"
    tasks: int  # tasks paired
    estimate: float
    low: float
    high: float
    resamples_kept: int  # 0 for a difference: its interval draws no resamples
    baseline_value: float  # mean over the paired tasks
    cohort_value: float
    method: str = ""  # the interval: METHODS[scale]


def task_means(cells: pd.DataFrame, column: str) -> pd.DataFrame:
    """Informative cells' `column`, averaged over repeats: rows tasks, columns cohorts."""
    info = cells[cells["informative"]]
    return info.pivot_table(index="task", columns="cohort", values=column, aggfunc="mean")


def task_cells(cells: pd.DataFrame, column: str) -> pd.DataFrame:
    """How many informative cells stand behind each task mean: rows tasks, columns cohorts."""
    info = cells[cells["informative"]]
    return info.pivot_table(index="task", columns="cohort", values=column, aggfunc="count")


def paired_means(cells: pd.DataFrame, cohort: str, baseline: str, column: str) -> pd.DataFrame:
    """Task means of the two cohorts (columns baseline, cohort) on the tasks both have."""
    means = task_means(cells, column)
    if cohort not in means or baseline not in means:
        return pd.DataFrame(columns=[baseline, cohort], dtype=float)
    return means[[baseline, cohort]].dropna().astype(float)


def per_task(cells: pd.DataFrame, cohort: str, baseline: str, column: str, scale: str) -> pd.Series:
    """The paired value of each task: difference or log ratio (NaN where it cannot be formed)."""
    pair = paired_means(cells, cohort, baseline, column)
    a, b = pair[baseline].to_numpy(float), pair[cohort].to_numpy(float)
    if scale == "difference":
        values = b - a
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.where((a > 0) & (b > 0), np.log(b / a), np.nan)
    return pd.Series(values, index=pair.index, dtype=float)


def mean_interval(
    values: pd.Series, scale: str, idx: np.ndarray
) -> tuple[float, float, float, int]:
    """Mean over tasks and the published interval: est ± q·se, q the larger of Student's t at
    n−1 df and the symmetric bootstrap-t quantile over the task resamples (the decode kind's
    interval, whose coverage bench/coverage.py measures; the percentile bootstrap under-covers
    at 4-16 clusters). Used for the token ratios; bench/pass_rate_coverage.py measures it on
    them, and shows why it is not used for pass rates."""
    arr = values.to_numpy(float)
    finite = arr[np.isfinite(arr)]
    n = finite.size
    est = float(finite.mean()) if n else math.nan
    low = high = math.nan
    kept = 0
    if n >= 2:
        se = float(finite.std(ddof=1)) / math.sqrt(n)
        q_boot = math.nan
        if arr.size and idx.size:
            draws = arr[idx]  # (boot, tasks); NaN tasks are skipped
            with np.errstate(invalid="ignore", divide="ignore"):
                counts = np.isfinite(draws).sum(axis=1)
                means = np.nanmean(draws, axis=1)
                sds = np.nanstd(draws, axis=1, ddof=1)
                t_star = np.abs(means - est) / (sds / np.sqrt(counts))
            kept = int(np.isfinite(means).sum())
            ok = np.isfinite(t_star)  # a resample of identical values has no t
            if ok.any():
                q_boot = float(np.quantile(t_star[ok], LEVEL))
        spread = Spread(se, float(n - 1), Spread.PROMPTS_ONLY)
        low, high = spread.interval(est, q_boot, LEVEL)
        if se == 0.0:
            low = high = est
        if scale == "difference":  # a difference of two rates lies in [-1, 1]
            low, high = max(low, -1.0), min(high, 1.0)
    if scale == "ratio":
        est, low, high = (math.exp(x) if math.isfinite(x) else math.nan for x in (est, low, high))
    return est, low, high, kept


def rate_interval(
    pair: pd.DataFrame, cohort: str, baseline: str, cells: tuple[float, float], level: float = LEVEL
) -> tuple[float, float, float]:
    """Newcombe's paired interval of mean(cohort) − mean(baseline) over the paired tasks;
    `cells` = (cohort's, baseline's) informative cells behind those task means."""
    if pair.empty:
        return math.nan, math.nan, math.nan
    est, low, high = paired_difference(
        pair[cohort].to_numpy(float), pair[baseline].to_numpy(float), level, cells[0], cells[1]
    )
    return float(est), float(low), float(high)


def cells_behind(
    cells: pd.DataFrame, pair: pd.DataFrame, cohort: str, baseline: str, column: str
) -> tuple[float, float]:
    """(cohort's, baseline's) informative cells behind the task means of `pair`."""
    counts = task_cells(cells, column).reindex(pair.index)

    def total(c: str) -> float:
        return float(counts[c].sum()) if c in counts else 0.0

    return total(cohort), total(baseline)


def contrasts(
    cells: pd.DataFrame, subject: str, cohort: str, baseline: str, boot: int, seed: int
) -> list[Contrast]:
    """Every endpoint of `cohort` vs `baseline` within `subject`."""
    mine = cells[cells["subject"] == subject]
    series = {e: per_task(mine, cohort, baseline, col, sc) for e, (col, sc) in ENDPOINTS.items()}
    tasks = sorted(set().union(*(s.index for s in series.values())))
    idx = Resamples.indices(len(tasks), boot, seed, f"{subject}:{cohort}:{baseline}")
    out = []
    for endpoint, (column, scale) in ENDPOINTS.items():
        values = series[endpoint].reindex(tasks)
        if scale == "difference":
            pair = paired_means(mine, cohort, baseline, column)
            behind = cells_behind(mine, pair, cohort, baseline, column)
            est, low, high = rate_interval(pair, cohort, baseline, behind)
            kept = 0
        else:
            est, low, high, kept = mean_interval(values, scale, idx)
        means = task_means(mine, column).reindex(tasks)
        base_v, coh_v = (
            float(means[c].mean()) if c in means else math.nan for c in (baseline, cohort)
        )
        out.append(
            Contrast(
                subject,
                cohort,
                baseline,
                endpoint,
                scale,
                int(values.notna().sum()),
                est,
                low,
                high,
                kept,
                base_v,
                coh_v,
                METHODS[scale],
            )
        )
    return out


def pooled(
    cells: pd.DataFrame, subjects: Sequence[str], cohort: str, baseline: str, boot: int, seed: int
) -> list[Contrast]:
    """Asked for only: each task's value averaged over the subjects (its pass rate per cohort,
    or its log ratio), then the same intervals over tasks."""
    out = []
    per = {
        e: [per_task(cells[cells["subject"] == s], cohort, baseline, col, sc) for s in subjects]
        for e, (col, sc) in ENDPOINTS.items()
    }
    common = sorted(set.intersection(*(set(s.index) for s in per["green"]))) if subjects else []
    idx = Resamples.indices(len(common), boot, seed, f"{POOLED}:{cohort}:{baseline}")
    for endpoint, (column, scale) in ENDPOINTS.items():
        frame = pd.concat([s.reindex(common) for s in per[endpoint]], axis=1)
        values = frame.mean(axis=1, skipna=False) if len(frame.columns) else pd.Series(dtype=float)
        if scale == "difference":
            mine = [cells[cells["subject"] == s] for s in subjects]
            pairs = [paired_means(m, cohort, baseline, column).reindex(common) for m in mine]
            pair = (sum(pairs[1:], pairs[0]) / len(pairs)) if pairs else pd.DataFrame()
            behind = [
                cells_behind(m, p, cohort, baseline, column)
                for m, p in zip(mine, pairs, strict=True)
            ]
            total = (sum(b[0] for b in behind), sum(b[1] for b in behind))
            est, low, high = rate_interval(pair.dropna(), cohort, baseline, total)
            kept = 0
        else:
            est, low, high, kept = mean_interval(values, scale, idx)
        out.append(
            Contrast(
                POOLED,
                cohort,
                baseline,
                endpoint,
                scale,
                int(values.notna().sum()),
                est,
                low,
                high,
                kept,
                math.nan,
                math.nan,
                METHODS[scale],
            )
        )
    return out


def direction(c: Contrast) -> int:
    """+1, −1 or 0 (no difference, or nothing to compare)."""
    centre = (
        c.estimate
        if c.scale == "difference"
        else math.log(c.estimate)
        if c.estimate > 0
        else math.nan
    )
    if not math.isfinite(centre) or abs(centre) < 1e-12:
        return 0
    return 1 if centre > 0 else -1


def agreement(rows: Sequence[Contrast]) -> list[str]:
    """Whether the subjects point the same way, endpoint by endpoint, said in words."""
    subjects = list(dict.fromkeys(r.subject for r in rows if r.subject != POOLED))
    if len(subjects) < 2:
        return ["One subject: there is nothing to compare across subjects."]
    lines, same = [], []
    for (cohort, endpoint), group in _by(rows).items():
        signs = {r.subject: direction(r) for r in group}
        if len(set(signs.values())) == 1:  # all up, all down, or none moves
            same.append(f"{cohort}/{endpoint}")
        else:
            word = {1: "up", -1: "down", 0: "no difference"}
            told = ", ".join(f"{s} {word[v]}" for s, v in signs.items())
            lines.append(f"{cohort} vs {group[0].baseline}, {endpoint}: subjects differ ({told}).")
    if not lines:
        return [f"All {len(subjects)} subjects point the same way on every endpoint."]
    return [f"Subjects point the same way on: {', '.join(same) or 'none'}.", *lines]


def _by(rows: Sequence[Contrast]) -> dict[tuple[str, str], list[Contrast]]:
    out: dict[tuple[str, str], list[Contrast]] = {}
    for r in rows:
        if r.subject != POOLED:
            out.setdefault((r.cohort, r.endpoint), []).append(r)
    return out
