"""Treatment-vs-baseline contrasts: intervals, decisions and the census, per endpoint, treatment
and subset (pairing, layout, tie-break, cycles and position in their own modules)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ....kindapi import SUBSETS
from ....kindapi import analysis as stats
from .contraststats import FloatArray, mde_pct, nan_mean, sign_flip_pvalue
from .cycles import drift_table, per_cycle_table
from .layout import Layout, Series, make_layout
from .pairing import (
    BASELINE_ONLY,
    GAP_COLUMNS,
    TREATMENT_ONLY,
    cell_means,
    pair_cells,
)
from .position import position_trend_table
from .runvalues import ENDPOINTS, AnalysisSettings
from .sessionpool import BORROWED_SESSION, borrow_session, pooled_session_level
from .tiebreak import apply_tiebreak

# one cycle's session variance and its df, borrowed from the run's arms (None: none to borrow)
Borrow = tuple[float, float] | None

CONTRAST_COLUMNS: tuple[str, ...] = (
    "endpoint",
    "treatment",
    "baseline",
    "subset",
    "n_prompts",
    "n_pairs",
    "cycles",
    "pct_change",
    "ci_low",
    "ci_high",
    "ci90_low",
    "ci90_high",
    "interval_method",
    "se_pct",
    "df",
    "session_se_pct",
    "arith_pct_change",
    "boot_ci_low",
    "boot_ci_high",
    "perm_p",
    "perm_method",
    "sign_disagreement",
    "significance_disagreement",
    "boot_requested",
    "boot_kept",
    "mde_pct",
    "underpowered",
    "decision",
    "counterbalanced",
    "divergence_pp",
    "published",
    "published_reason",
    "note",
)


CENSUS_COLUMNS: tuple[str, ...] = (
    "endpoint",
    "treatment",
    "baseline",
    "subset",
    "n_prompts",
    "n_pairs",
    "gaps_baseline_only",
    "gaps_treatment_only",
    "boot_requested",
    "boot_kept",
)


@dataclass(frozen=True, eq=False)
class ContrastTables:
    """The contrast-level tables of one analysis."""

    contrasts: pd.DataFrame
    census: pd.DataFrame
    gaps: pd.DataFrame
    per_cycle: pd.DataFrame
    drift: pd.DataFrame
    position_trend: pd.DataFrame
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)  # every pair's log ratio


DECIDED: tuple[str, ...] = ("faster", "slower", "equivalent")


def _decision(row: dict[str, Any], parts: Sequence[Series], margin: float) -> tuple[str, str]:
    """(decision, why not) for one row; `insufficient` below INTERVAL.min_prompts."""
    sizes = {p.subset: int(np.isfinite(p.log).sum()) for p in parts}
    if not sizes or min(sizes.values()) == 0:
        return "inconclusive", ""
    small = [f"{s} {n}" for s, n in sizes.items() if n < stats.INTERVAL.min_prompts]
    if small:
        return "insufficient", (
            f"fewer than {stats.INTERVAL.min_prompts} prompts ({', '.join(small)}): no decision"
        )
    bounds = [row["ci_low"], row["ci_high"], row["ci90_low"], row["ci90_high"]]
    if not all(math.isfinite(b) for b in bounds):
        return "inconclusive", "no interval"
    # Equivalence first: an effect pinned inside the margin is negligible even if non-zero.
    if -margin < row["ci90_low"] and row["ci90_high"] < margin:
        return "equivalent", ""
    if row["ci_low"] > 0:
        return "faster", ""
    if row["ci_high"] < 0:
        return "slower", ""
    return "inconclusive", ""


def _spread(
    parts: Sequence[Series], finite: Sequence[FloatArray], borrow: Borrow = None
) -> tuple[stats.Spread, str]:
    """The published SE: with the session level from 4 shared cycles; under 4, the session
    level the run's arms share (`borrow`, `kinds/decode/analysis/sessionpool.py`) where there is one to
    borrow, else prompts only."""
    shared = np.logical_and.reduce([np.isfinite(p.matrix).any(axis=0) for p in parts])
    cycles = int(shared.sum())
    if cycles < stats.INTERVAL.session_cycles:
        base = stats.Spread.of_prompts(finite)
        got = borrow_session(base.se, base.df, cycles, borrow)
        if got is None:
            return base, ""
        se, df = got
        return stats.Spread(se, df, BORROWED_SESSION, se**2 - base.se**2), (
            f"session level borrowed from the run's arms ({cycles} cycle(s) of its own)"
        )
    spread = stats.Spread.of_sessions(finite, [p.matrix[:, shared] for p in parts])
    if spread.method != stats.Spread.WITH_SESSION and math.isfinite(spread.se):
        return spread, "session level not estimable: fewer than 2 prompts hold every cycle"
    return spread, ""


def _borrowable(layout: Layout, rows: Sequence[int], min_df: float) -> Borrow:
    """One cycle's session variance and df for a contrast against the baseline, pooled over
    these series' (one endpoint's treatments') per-session mean log ratios."""
    if len(rows) < 2:
        return None
    means = nan_mean(np.moveaxis(layout.matrix[list(rows)], 0, -1), axis=0)  # (sessions, rows)
    pooled = pooled_session_level(means)
    if pooled is None or pooled.df < min_df:
        return None
    return pooled.of_pair(with_baseline=True)


@dataclass(frozen=True)
class _Boot:
    """One row's share of its resamples' summary."""

    kept: int
    q95: float
    q90: float
    low: float
    high: float


def _boot_rows(
    resamples: stats.Resamples, est: FloatArray, levels: tuple[float, float]
) -> list[_Boot]:
    """Each series' share of its resamples' summary (`Resamples.summary`), row by row."""
    summary = resamples.summary(est, levels)
    return [
        _Boot(
            int(summary.kept[k]),
            float(summary.q95[k]),
            float(summary.q90[k]),
            float(summary.low[k]),
            float(summary.high[k]),
        )
        for k in range(len(summary.kept))
    ]


def _interval_columns(
    point: float,
    finite: Sequence[FloatArray],
    parts: Sequence[Series],
    boot: _Boot,
    settings: AnalysisSettings,
    borrow: Borrow = None,
) -> tuple[dict[str, Any], stats.Spread, str]:
    """The published 95 % / 90 % intervals and their SE, df and method, in percent."""
    spread, note = _spread(parts, finite, borrow)
    lo95, hi95 = spread.interval(point, boot.q95, settings.confidence)
    lo90, hi90 = spread.interval(point, boot.q90, settings.equivalence_confidence)
    with_session = spread.method in (stats.Spread.WITH_SESSION, BORROWED_SESSION)
    session_se = math.sqrt(spread.session_var) if with_session else math.nan
    columns = {
        "ci_low": stats.to_pct(lo95),
        "ci_high": stats.to_pct(hi95),
        "ci90_low": stats.to_pct(lo90),
        "ci90_high": stats.to_pct(hi90),
        "interval_method": spread.method,
        "se_pct": 100.0 * spread.se,
        "df": spread.df,
        "session_se_pct": 100.0 * session_se,
        "mde_pct": mde_pct(spread),
    }
    return columns, spread, note


def _crosscheck_columns(
    finite: Sequence[FloatArray], boot: _Boot, settings: AnalysisSettings
) -> dict[str, Any]:
    """The percentile-bootstrap interval and the sign-flip p-value."""
    if finite and all(v.size for v in finite):
        weights = np.concatenate([np.full(v.size, 1.0 / (len(finite) * v.size)) for v in finite])
        perm_p, perm_method = sign_flip_pvalue(
            np.concatenate(finite), weights, seed=settings.seed, n_mc=settings.boot
        )
    else:
        perm_p, perm_method = math.nan, "none"
    return {
        "boot_ci_low": stats.to_pct(boot.low),
        "boot_ci_high": stats.to_pct(boot.high),
        "perm_p": perm_p,
        "perm_method": perm_method,
        "boot_requested": settings.boot,
        "boot_kept": boot.kept,
    }


def _summarise(
    parts: Sequence[Series], boot: _Boot, settings: AnalysisSettings, borrow: Borrow = None
) -> dict[str, Any]:
    finite = [p.log[np.isfinite(p.log)] for p in parts]
    complete = all(v.size > 0 for v in finite)
    point = float(np.mean([v.mean() for v in finite])) if complete else math.nan
    arith = float(np.mean([np.nanmean(p.arith) for p in parts])) * 100.0 if complete else math.nan
    if complete:
        intervals, _, session_note = _interval_columns(point, finite, parts, boot, settings, borrow)
    else:
        intervals = _interval_columns(math.nan, [], parts, boot, settings)[0]
        session_note = ""
    balanced = np.concatenate([p.balanced[np.isfinite(p.balanced)] for p in parts])
    cycles = sorted(frozenset().union(*(p.cycles for p in parts)))
    row: dict[str, Any] = {
        "n_prompts": int(sum(v.size for v in finite)),
        "n_pairs": int(sum(np.nansum(p.n_pairs) for p in parts)),
        "cycles": ",".join(str(c) for c in cycles),
        "pct_change": stats.to_pct(point),
        **intervals,
        "arith_pct_change": arith,
        **_crosscheck_columns(finite, boot, settings),
        "counterbalanced": bool(balanced.size) and bool(balanced.all()),
    }
    row["sign_disagreement"] = bool(
        row["pct_change"] * arith < 0
        or (row["ci_low"] > 0 and row["boot_ci_high"] < 0)
        or (row["ci_high"] < 0 and row["boot_ci_low"] > 0)
    )
    excludes_zero = row["ci_low"] > 0 or row["ci_high"] < 0
    row["significance_disagreement"] = bool(
        math.isfinite(row["perm_p"]) and excludes_zero != (row["perm_p"] < 0.05)
    )
    row["decision"], why = _decision(row, parts, settings.margin_pct)
    # Power matters only where no decision was reached; a decided cell was powered enough.
    mde = row["mde_pct"]
    row["underpowered"] = row["decision"] not in DECIDED and not (
        math.isfinite(mde) and mde <= settings.margin_pct
    )
    notes = [why] if why else []
    if not complete:
        notes.append("no pairs" if len(parts) == 1 else "pooled needs pairs in every subset")
    if complete and not row["counterbalanced"]:
        notes.append("not counterbalanced: some prompts lack an odd or an even cycle")
    if session_note:
        notes.append(session_note)
    row["note"] = "; ".join(notes)
    return row


def compute_contrasts(
    records: pd.DataFrame,
    *,
    treatments: Sequence[str],
    subsets: Sequence[str],
    settings: AnalysisSettings,
) -> ContrastTables:
    """Every contrast of `treatments` against the baseline, per endpoint and subset.

    `records` must hold only valid records of one comparability group. Each subset's prompts
    form its clusters; one index matrix per subset serves every treatment and both endpoints,
    and the pooled estimate is the equal-weight mean of the subset estimates inside each
    resample.
    """
    baseline = settings.baseline
    pairs, gaps = pair_cells(cell_means(records), treatments, baseline)
    keys = [(e, t) for e in ENDPOINTS for t in treatments]
    sessions = sorted(
        {(str(r), int(c)) for r, c in zip(pairs["run_id"], pairs["cycle"], strict=True)}
    )
    layouts: dict[str, Layout] = {}
    boot: dict[str, stats.Resamples] = {}
    for s in subsets:
        universe = sorted(str(p) for p in records.loc[records["subset"] == s, "prompt_id"].unique())
        layouts[s] = make_layout(s, pairs[pairs["subset"] == s], keys, universe, sessions)
        idx = stats.Resamples.indices(len(universe), settings.boot, settings.seed, s)
        boot[s] = stats.Resamples.of(layouts[s].log, idx)

    levels = (settings.confidence, settings.equivalence_confidence)
    summaries = {s: _boot_rows(boot[s], layouts[s].log_mean, levels) for s in subsets}
    if len(subsets) >= 2:
        # Equal weight inside each resample; a resample missing any subset is not kept.
        pooled = stats.Resamples(
            np.mean(np.stack([boot[s].mean for s in subsets]), axis=0),
            np.sum(np.stack([boot[s].var_mean for s in subsets]), axis=0) / len(subsets) ** 2,
        )
        point = np.mean(np.stack([layouts[s].log_mean for s in subsets]), axis=0)
        summaries[SUBSETS.pooled] = _boot_rows(pooled, point, levels)
    borrow = {
        (s, e): _borrowable(
            layouts[s], [k for k, key in enumerate(keys) if key[0] == e], settings.borrow_min_df
        )
        if settings.pool_sessions
        else None
        for s in subsets
        for e in ENDPOINTS
    }
    rows: list[dict[str, Any]] = []
    for k, (endpoint, treatment) in enumerate(keys):
        head = {"endpoint": endpoint, "treatment": treatment, "baseline": baseline}
        for s in subsets:
            got = borrow[(s, endpoint)]
            row = _summarise([layouts[s].series(k)], summaries[s][k], settings, got)
            rows.append({**head, "subset": s, **row})
        if len(subsets) >= 2:
            parts = [layouts[s].series(k) for s in subsets]
            # one session serves every subset: the pooled mean keeps its offset whole
            each = [b for s in subsets if (b := borrow[(s, endpoint)]) is not None]
            most = max(each, default=None)
            row = _summarise(parts, summaries[SUBSETS.pooled][k], settings, most)
            rows.append({**head, "subset": SUBSETS.pooled, **row})
    return replace(_tables(rows, layouts, keys, gaps, records, settings), pairs=pairs)


def server_clocked(records: pd.DataFrame) -> set[str]:
    """The treatments whose interval rates may rest on the server's clock: all but those whose
    every record says `inter_chunk` (the client's own timing); an unknown basis counts."""
    if records.empty:
        return set()
    if "interval_basis" not in records.columns:
        return {str(t) for t in records["treatment"].unique()}
    client = records["interval_basis"] == "inter_chunk"
    per = client.groupby(records["treatment"]).all()
    return {str(t) for t, only_client in per.items() if not only_client}


def _tables(
    rows: list[dict[str, Any]],
    layouts: Mapping[str, Layout],
    keys: Sequence[tuple[str, str]],
    gaps: pd.DataFrame,
    records: pd.DataFrame,
    settings: AnalysisSettings,
) -> ContrastTables:
    baseline = settings.baseline
    body = [
        c for c in CONTRAST_COLUMNS if c not in ("divergence_pp", "published", "published_reason")
    ]
    contrasts = pd.DataFrame(rows, columns=body)
    contrasts = apply_tiebreak(contrasts, settings, server_clocked(records))[list(CONTRAST_COLUMNS)]
    contrasts = contrasts.astype(
        {
            "published": "bool",
            "underpowered": "bool",
            "sign_disagreement": "bool",
            "counterbalanced": "bool",
            "significance_disagreement": "bool",
        }
    )
    gaps = gaps.assign(baseline=baseline)[list(GAP_COLUMNS)]
    return ContrastTables(
        contrasts=contrasts,
        census=census_table(contrasts, gaps),
        gaps=gaps.reset_index(drop=True),
        per_cycle=per_cycle_table(layouts, keys, baseline),
        drift=drift_table(layouts, keys, baseline),
        position_trend=position_trend_table(
            records, [t for e, t in keys if e == ENDPOINTS[0]], baseline
        ),
    )


def census_table(contrasts: pd.DataFrame, gaps: pd.DataFrame) -> pd.DataFrame:
    """Pairs, gaps both ways and resamples kept per endpoint × treatment × subset."""
    if contrasts.empty:
        return pd.DataFrame(columns=list(CENSUS_COLUMNS))
    keys = ["endpoint", "treatment", "subset"]
    counts = (
        gaps.assign(one=1)
        .pivot_table(index=keys, columns="direction", values="one", aggfunc="sum", fill_value=0)
        .reindex(columns=[BASELINE_ONLY, TREATMENT_ONLY], fill_value=0)
        .rename(
            columns={BASELINE_ONLY: "gaps_baseline_only", TREATMENT_ONLY: "gaps_treatment_only"}
        )
        .reset_index()
        if not gaps.empty
        else pd.DataFrame(columns=[*keys, "gaps_baseline_only", "gaps_treatment_only"])
    )
    counts.columns.name = None
    per_subset = contrasts[contrasts["subset"] != SUBSETS.pooled][keys].merge(
        counts, on=keys, how="left"
    )
    pooled = (
        per_subset.groupby(["endpoint", "treatment"], as_index=False, sort=False)[
            ["gaps_baseline_only", "gaps_treatment_only"]
        ]
        .sum(min_count=0)
        .assign(subset=SUBSETS.pooled)
    )
    counts = pd.concat([per_subset, pooled], ignore_index=True)
    census = contrasts.merge(counts, on=keys, how="left")
    for column in ("gaps_baseline_only", "gaps_treatment_only"):
        census[column] = census[column].fillna(0).astype("int64")
    return census[list(CENSUS_COLUMNS)].reset_index(drop=True)
