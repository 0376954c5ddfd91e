"""Treatment-vs-baseline contrasts: pairing, cluster bootstrap, decisions and the tie-break."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pytest_mtpsweep.analysis.model import ENDPOINTS, POOLED, AnalysisSettings
from pytest_mtpsweep.analysis.stats import (
    FloatArray,
    index_matrix,
    mde_pct,
    percentile_interval,
    resample_means,
    sign_flip_pvalue,
    t_interval,
    to_pct,
)

BASELINE_ONLY = "baseline without treatment"
TREATMENT_ONLY = "treatment without baseline"

CONTRAST_COLUMNS: tuple[str, ...] = (
    "endpoint", "treatment", "baseline", "subset", "n_prompts", "n_pairs", "cycles",
    "pct_change", "ci_low", "ci_high", "ci90_low", "ci90_high", "arith_pct_change",
    "t_ci_low", "t_ci_high", "perm_p", "perm_method", "sign_disagreement",
    "significance_disagreement", "boot_requested", "boot_kept", "se_pct", "mde_pct",
    "underpowered", "decision", "counterbalanced", "divergence_pp", "published",
    "published_reason", "note",
)  # fmt: skip
GAP_COLUMNS: tuple[str, ...] = (
    "endpoint", "treatment", "baseline", "subset", "run_id", "prompt_id", "cycle", "direction",
)  # fmt: skip
CENSUS_COLUMNS: tuple[str, ...] = (
    "endpoint", "treatment", "baseline", "subset", "n_prompts", "n_pairs",
    "gaps_baseline_only", "gaps_treatment_only", "boot_requested", "boot_kept",
)  # fmt: skip
PER_CYCLE_COLUMNS: tuple[str, ...] = (
    "endpoint", "treatment", "baseline", "subset", "run_id", "cycle", "n_pairs", "pct_change",
)  # fmt: skip
DRIFT_COLUMNS: tuple[str, ...] = (
    "endpoint", "treatment", "baseline", "subset", "pct_odd_cycles", "pct_even_cycles",
    "drift_pp",
)  # fmt: skip


@dataclass(frozen=True, eq=False)
class ContrastTables:
    """The contrast-level tables of one analysis."""

    contrasts: pd.DataFrame
    census: pd.DataFrame
    gaps: pd.DataFrame
    per_cycle: pd.DataFrame
    drift: pd.DataFrame


SERIES_KEYS: list[str] = ["endpoint", "treatment"]
CELL_KEYS: list[str] = ["endpoint", "run_id", "subset", "prompt_id", "cycle"]


def cell_means(records: pd.DataFrame) -> pd.DataFrame:
    """Mean rate per (endpoint, run, treatment, subset, prompt, cycle): repeats averaged first."""
    ids = records[["run_id", "treatment", "subset", "prompt_id", "cycle"]]
    long = pd.concat(
        [ids.assign(endpoint=e, rate=records[f"rate_{e}"]) for e in ENDPOINTS],
        ignore_index=True,
    )
    long = long[np.isfinite(long["rate"].to_numpy(dtype=np.float64))]
    return long.groupby([*CELL_KEYS, "treatment"], as_index=False, sort=True)["rate"].mean()


def pair_cells(
    cells: pd.DataFrame, treatments: Sequence[str], baseline: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pairs, gaps): treatment cells matched with baseline cells within (run, prompt, cycle).

    Runs are part of the key so that pooled runs never pair one run's treatment with another
    run's baseline.
    """
    t_cells = cells[cells["treatment"].isin(list(treatments))].rename(columns={"rate": "rate_t"})
    b_cells = (
        cells[cells["treatment"] == baseline]
        .drop(columns="treatment")
        .rename(columns={"rate": "rate_b"})
        .merge(pd.DataFrame({"treatment": list(treatments)}, dtype=object), how="cross")
    )
    merged = t_cells.merge(b_cells, on=[*CELL_KEYS, "treatment"], how="outer", indicator=True)
    both = (merged["_merge"] == "both").to_numpy()
    pairs = merged.loc[both, [*CELL_KEYS, "treatment", "rate_t", "rate_b"]]
    ratio = pairs["rate_t"].to_numpy(dtype=np.float64) / pairs["rate_b"].to_numpy(np.float64)
    pairs = pairs.assign(log_ratio=np.log(ratio), ratio_minus_1=ratio - 1.0)
    gaps = merged.loc[~both, [*CELL_KEYS, "treatment"]].assign(
        direction=np.where(
            merged.loc[~both, "_merge"] == "right_only", BASELINE_ONLY, TREATMENT_ONLY
        )
    )
    return pairs.reset_index(drop=True), gaps.reset_index(drop=True)


def cluster_values(pairs: pd.DataFrame) -> pd.DataFrame:
    """One value per prompt and series: the mean over its cycles of the log ratio (and ratio-1)."""
    parity = pairs["cycle"].to_numpy() % 2
    return (
        pairs.assign(odd=parity == 1, even=parity == 0)
        .groupby([*SERIES_KEYS, "subset", "prompt_id"], as_index=False, sort=True)
        .agg(
            log_value=("log_ratio", "mean"),
            arith_value=("ratio_minus_1", "mean"),
            n_pairs=("log_ratio", "size"),
            odd=("odd", "any"),
            even=("even", "any"),
        )
    )


@dataclass(frozen=True)
class _Series:
    """One (endpoint, treatment) series on one subset's clusters; NaN where a prompt lacks pairs."""

    log: FloatArray
    arith: FloatArray
    n_pairs: FloatArray
    balanced: FloatArray
    cycles: frozenset[int]


@dataclass(frozen=True)
class _Layout:
    """Every series of one subset as (series, clusters) arrays, rows in `keys` order."""

    log: FloatArray
    arith: FloatArray
    n_pairs: FloatArray
    balanced: FloatArray
    cycles: tuple[frozenset[int], ...]

    def series(self, k: int) -> _Series:
        return _Series(
            self.log[k], self.arith[k], self.n_pairs[k], self.balanced[k], self.cycles[k]
        )


def _layout(
    clusters: pd.DataFrame,
    pairs: pd.DataFrame,
    keys: Sequence[tuple[str, str]],
    universe: Sequence[str],
) -> _Layout:
    shape = (len(keys), len(universe))
    log, arith, n_pairs, balanced = (np.full(shape, np.nan) for _ in range(4))
    index = pd.MultiIndex.from_tuples(list(keys), names=SERIES_KEYS) if keys else None
    if index is not None and not clusters.empty:
        rows = index.get_indexer(pd.MultiIndex.from_frame(clusters[SERIES_KEYS]))
        cols = pd.Categorical(clusters["prompt_id"], categories=list(universe)).codes
        log[rows, cols] = clusters["log_value"].to_numpy(dtype=np.float64)
        arith[rows, cols] = clusters["arith_value"].to_numpy(dtype=np.float64)
        n_pairs[rows, cols] = clusters["n_pairs"].to_numpy(dtype=np.float64)
        balanced[rows, cols] = (clusters["odd"] & clusters["even"]).to_numpy(dtype=np.float64)
    seen = {
        (str(e), str(t)): frozenset(int(c) for c in cycles)
        for (e, t), cycles in pairs.groupby(SERIES_KEYS, sort=False)["cycle"].unique().items()
    }
    cycles = tuple(seen.get(key, frozenset()) for key in keys)
    return _Layout(log, arith, n_pairs, balanced, cycles)


def _decision(row: dict[str, Any], margin: float, decidable: bool) -> str:
    bounds = [row["ci_low"], row["ci_high"], row["ci90_low"], row["ci90_high"]]
    if not decidable or not all(math.isfinite(b) for b in bounds):
        return "inconclusive"
    # Equivalence first: an effect pinned inside the margin is negligible even if non-zero.
    if -margin < row["ci90_low"] and row["ci90_high"] < margin:
        return "equivalent"
    if row["ci_low"] > 0:
        return "faster"
    if row["ci_high"] < 0:
        return "slower"
    return "inconclusive"


def _summarise(
    parts: Sequence[_Series], boot_log: FloatArray, settings: AnalysisSettings
) -> dict[str, Any]:
    finite = [p.log[np.isfinite(p.log)] for p in parts]
    sizes = [v.size for v in finite]
    complete = all(size > 0 for size in sizes)
    kept = boot_log[np.isfinite(boot_log)] if complete else np.empty(0)
    point = float(np.mean([v.mean() for v in finite])) if complete else math.nan
    arith = float(np.mean([np.nanmean(p.arith) for p in parts])) * 100.0 if complete else math.nan
    lo95, hi95 = percentile_interval(kept, 0.95)
    lo90, hi90 = percentile_interval(kept, 0.90)
    t_lo, t_hi = t_interval(finite, 0.95) if complete else (math.nan, math.nan)
    if complete:
        weights = np.concatenate([np.full(v.size, 1.0 / (len(finite) * v.size)) for v in finite])
        perm_p, perm_method = sign_flip_pvalue(
            np.concatenate(finite), weights, seed=settings.seed, n_mc=settings.boot
        )
    else:
        perm_p, perm_method = math.nan, "none"
    se, mde = mde_pct(kept)
    balanced = np.concatenate([p.balanced[np.isfinite(p.balanced)] for p in parts])
    cycles = sorted(frozenset().union(*(p.cycles for p in parts)))
    row: dict[str, Any] = {
        "n_prompts": int(sum(sizes)),
        "n_pairs": int(sum(np.nansum(p.n_pairs) for p in parts)),
        "cycles": ",".join(str(c) for c in cycles),
        "pct_change": to_pct(point),
        "ci_low": to_pct(lo95),
        "ci_high": to_pct(hi95),
        "ci90_low": to_pct(lo90),
        "ci90_high": to_pct(hi90),
        "arith_pct_change": arith,
        "t_ci_low": to_pct(t_lo),
        "t_ci_high": to_pct(t_hi),
        "perm_p": perm_p,
        "perm_method": perm_method,
        "boot_requested": settings.boot,
        "boot_kept": int(kept.size),
        "se_pct": se,
        "mde_pct": mde,
        "underpowered": not (math.isfinite(mde) and mde <= settings.margin_pct),
        "counterbalanced": bool(balanced.size) and bool(balanced.all()),
    }
    pct = row["pct_change"]
    row["sign_disagreement"] = bool(
        pct * arith < 0
        or (row["ci_low"] > 0 and row["t_ci_high"] < 0)
        or (row["ci_high"] < 0 and row["t_ci_low"] > 0)
    )
    boot_excludes_zero = row["ci_low"] > 0 or row["ci_high"] < 0
    row["significance_disagreement"] = bool(
        math.isfinite(perm_p) and boot_excludes_zero != (perm_p < 0.05)
    )
    decidable = complete and min(sizes) >= 2
    row["decision"] = _decision(row, settings.margin_pct, decidable)
    notes: list[str] = []
    if not complete:
        notes.append("no pairs" if len(parts) == 1 else "pooled needs pairs in every subset")
    elif not decidable:
        notes.append("fewer than 2 prompts in a subset: no decision")
    if complete and not row["counterbalanced"]:
        notes.append("not counterbalanced: some prompts lack an odd or an even cycle")
    row["note"] = "; ".join(notes)
    return row


def _tiebreak_choice(prim: float, intv: float, registered: str, tb: float) -> tuple[str, str]:
    has_p, has_i = math.isfinite(prim), math.isfinite(intv)
    if not (has_p or has_i):
        return registered, f"neither endpoint has pairs; the registered {registered} row stands"
    if not has_i:
        return "primary", "interval basis has no pairs, so the primary figure is published"
    if not has_p:
        return (
            "interval",
            "primary endpoint has no pairs, so the interval-basis figure is published",
        )
    div = abs(prim - intv)
    if registered == "interval":
        return "interval", "interval basis is the pre-registered endpoint"
    if div > tb:
        return "interval", (
            f"endpoints differ by {div:.2f} pp > {tb:g} pp tie-break, so the interval-basis "
            "figure is published"
        )
    return "primary", (
        f"endpoints agree within {div:.2f} pp (tie-break {tb:g} pp), so the primary figure stands"
    )


def apply_tiebreak(contrasts: pd.DataFrame, settings: AnalysisSettings) -> pd.DataFrame:
    """Mark which endpoint is published per treatment × subset, with the reason.

    The pre-registered endpoint stands unless the two endpoints differ by more than the
    tie-break (in percentage points), in which case the interval-basis figure is published;
    an endpoint without pairs yields to the other.
    """
    if contrasts.empty:
        return contrasts.assign(divergence_pp=[], published=[], published_reason=[])
    wide = contrasts.pivot(index=["treatment", "subset"], columns="endpoint", values="pct_change")
    wide = wide.reindex(columns=list(ENDPOINTS))
    prim = wide["primary"].to_numpy(dtype=np.float64)
    intv = wide["interval"].to_numpy(dtype=np.float64)
    choices = [
        _tiebreak_choice(p, i, settings.primary_endpoint, settings.tiebreak_pp)
        for p, i in zip(prim, intv, strict=True)
    ]
    decided = pd.DataFrame(
        {
            "divergence_pp": np.abs(prim - intv),
            "chosen": [c[0] for c in choices],
            "published_reason": [c[1] for c in choices],
        },
        index=wide.index,
    ).reset_index()
    out = contrasts.drop(
        columns=["divergence_pp", "published", "published_reason"], errors="ignore"
    ).merge(decided, on=["treatment", "subset"], how="left")
    out["published"] = out["endpoint"] == out["chosen"]
    return out.drop(columns="chosen")


def per_cycle_table(pairs: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """The contrast within each (run, cycle): the mean log ratio over its prompts, in percent."""
    grouped = pairs.groupby(
        [*SERIES_KEYS, "subset", "run_id", "cycle"], as_index=False, sort=True
    ).agg(n_pairs=("log_ratio", "size"), mean_log=("log_ratio", "mean"))
    pct = 100.0 * np.expm1(grouped["mean_log"].to_numpy(dtype=np.float64))
    return grouped.assign(baseline=baseline, pct_change=pct)[list(PER_CYCLE_COLUMNS)]


def drift_table(pairs: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Half the odd-minus-even cycle contrast per series and subset.

    With ABC CBA order a linear drift adds +d to odd cycles and -d to even ones, so half their
    difference estimates d; with two cycles this is (cycle 1 - cycle 2) / 2.
    """
    parity = np.where(pairs["cycle"].to_numpy() % 2 == 1, "odd", "even")
    means = (
        pairs.assign(parity=parity)
        .groupby([*SERIES_KEYS, "subset", "parity"], sort=True)["log_ratio"]
        .mean()
        .unstack("parity")
    )
    if "odd" not in means or "even" not in means:
        return pd.DataFrame(columns=list(DRIFT_COLUMNS))
    means = means.dropna(subset=["odd", "even"]).reset_index()
    odd = 100.0 * np.expm1(means["odd"].to_numpy(dtype=np.float64))
    even = 100.0 * np.expm1(means["even"].to_numpy(dtype=np.float64))
    return means.assign(
        baseline=baseline, pct_odd_cycles=odd, pct_even_cycles=even, drift_pp=(odd - even) / 2
    )[list(DRIFT_COLUMNS)]


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
    clusters = cluster_values(pairs)
    keys = [(e, t) for e in ENDPOINTS for t in treatments]
    layouts: dict[str, _Layout] = {}
    boot: dict[str, FloatArray] = {}
    for s in subsets:
        universe = sorted(str(p) for p in records.loc[records["subset"] == s, "prompt_id"].unique())
        layouts[s] = _layout(
            clusters[clusters["subset"] == s], pairs[pairs["subset"] == s], keys, universe
        )
        idx = index_matrix(len(universe), settings.boot, settings.seed, s)
        boot[s] = resample_means(layouts[s].log, idx)

    rows: list[dict[str, Any]] = []
    for k, (endpoint, treatment) in enumerate(keys):
        head = {"endpoint": endpoint, "treatment": treatment, "baseline": baseline}
        for s in subsets:
            parts = [layouts[s].series(k)]
            rows.append({**head, "subset": s, **_summarise(parts, boot[s][k], settings)})
        if len(subsets) >= 2:
            parts = [layouts[s].series(k) for s in subsets]
            # Equal weight inside each resample; a resample missing any subset is not kept.
            pooled = np.mean(np.stack([boot[s][k] for s in subsets]), axis=0)
            rows.append({**head, "subset": POOLED, **_summarise(parts, pooled, settings)})
    body = [
        c for c in CONTRAST_COLUMNS if c not in ("divergence_pp", "published", "published_reason")
    ]
    contrasts = pd.DataFrame(rows, columns=body)
    contrasts = apply_tiebreak(contrasts, settings)[list(CONTRAST_COLUMNS)]
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
        per_cycle=per_cycle_table(pairs, baseline),
        drift=drift_table(pairs, baseline),
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
    per_subset = contrasts[contrasts["subset"] != POOLED][keys].merge(counts, on=keys, how="left")
    pooled = (
        per_subset.groupby(["endpoint", "treatment"], as_index=False, sort=False)[
            ["gaps_baseline_only", "gaps_treatment_only"]
        ]
        .sum(min_count=0)
        .assign(subset=POOLED)
    )
    counts = pd.concat([per_subset, pooled], ignore_index=True)
    census = contrasts.merge(counts, on=keys, how="left")
    for column in ("gaps_baseline_only", "gaps_treatment_only"):
        census[column] = census[column].fillna(0).astype("int64")
    return census[list(CENSUS_COLUMNS)].reset_index(drop=True)
