"""Treatment-vs-baseline contrasts: pairing, intervals, decisions, the tie-break and the
within-session position trend."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from pytest_mtpsweep.analysis.model import (
    ENDPOINTS,
    MIN_CYCLES_FOR_SESSION,
    MIN_PROMPTS_FOR_DECISION,
    POOLED,
    STATEFUL_MIN_PCT_PER_POSITION,
    AnalysisSettings,
)
from pytest_mtpsweep.analysis.stats import (
    WITH_SESSION,
    BootSummary,
    FloatArray,
    IntArray,
    Resamples,
    Spread,
    fixed_effects_slope,
    index_matrix,
    mde_pct,
    nan_mean,
    prompt_spread,
    published_interval,
    resample,
    session_spread,
    sign_flip_pvalue,
    summarise_resamples,
    t_quantile,
    to_pct,
)

BASELINE_ONLY = "baseline without treatment"
TREATMENT_ONLY = "treatment without baseline"

CONTRAST_COLUMNS: tuple[str, ...] = (
    "endpoint", "treatment", "baseline", "subset", "n_prompts", "n_pairs", "cycles",
    "pct_change", "ci_low", "ci_high", "ci90_low", "ci90_high", "interval_method", "se_pct",
    "df", "session_se_pct", "arith_pct_change", "boot_ci_low", "boot_ci_high", "perm_p",
    "perm_method", "sign_disagreement", "significance_disagreement", "boot_requested",
    "boot_kept", "mde_pct", "underpowered", "decision", "counterbalanced", "divergence_pp",
    "published", "published_reason", "note",
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
POSITION_COLUMNS: tuple[str, ...] = (
    "endpoint", "treatment", "n_obs", "n_sessions", "slope_pct", "ci_low", "ci_high", "df",
    "stateful", "note",
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
    position_trend: pd.DataFrame


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


@dataclass(frozen=True)
class _Series:
    """One (endpoint, treatment) series on one subset's clusters; NaN where a prompt lacks pairs.

    `matrix` holds every pair's log ratio, prompts × the run's (run, cycle) sessions.
    """

    subset: str
    log: FloatArray
    arith: FloatArray
    n_pairs: FloatArray
    balanced: FloatArray
    matrix: FloatArray
    cycles: frozenset[int]


@dataclass(frozen=True)
class _Layout:
    """Every series of one subset as arrays, rows in `keys` order.

    `matrix` is (series, prompts, sessions) of pair log ratios; `log`, `arith`, `n_pairs` and
    `balanced` are (series, prompts): a prompt's cluster value is the mean over its pairs.
    """

    subset: str
    sessions: tuple[tuple[str, int], ...]
    matrix: FloatArray
    log: FloatArray
    arith: FloatArray
    n_pairs: FloatArray
    balanced: FloatArray
    cycles: tuple[frozenset[int], ...]

    @property
    def log_mean(self) -> FloatArray:
        """Each series' estimate: the mean over its prompts with pairs (NaN without any)."""
        return nan_mean(self.log)

    def series(self, k: int) -> _Series:
        return _Series(
            self.subset,
            self.log[k],
            self.arith[k],
            self.n_pairs[k],
            self.balanced[k],
            self.matrix[k],
            self.cycles[k],
        )


def _layout(
    subset: str,
    pairs: pd.DataFrame,
    keys: Sequence[tuple[str, str]],
    universe: Sequence[str],
    sessions: Sequence[tuple[str, int]],
) -> _Layout:
    # numpy fancy indexing instead of groupbys: this was most of the analysis' pandas time.
    shape = (len(keys), len(universe), len(sessions))
    matrix, arith = np.full(shape, np.nan), np.full(shape, np.nan)
    if keys and sessions and not pairs.empty:
        index = pd.MultiIndex.from_tuples(list(keys), names=SERIES_KEYS)
        rows = index.get_indexer(pd.MultiIndex.from_frame(pairs[SERIES_KEYS]))
        cols = pd.Categorical(pairs["prompt_id"], categories=list(universe)).codes
        where = pd.MultiIndex.from_tuples(list(sessions), names=["run_id", "cycle"])
        depth = where.get_indexer(pd.MultiIndex.from_frame(pairs[["run_id", "cycle"]]))
        matrix[rows, cols, depth] = pairs["log_ratio"].to_numpy(dtype=np.float64)
        arith[rows, cols, depth] = pairs["ratio_minus_1"].to_numpy(dtype=np.float64)
    has = np.isfinite(matrix)
    count = has.sum(axis=-1)
    odd = np.array([c % 2 == 1 for _, c in sessions], dtype=bool)
    balanced = has[..., odd].any(axis=-1) & has[..., ~odd].any(axis=-1)
    cycle_of = np.array([c for _, c in sessions], dtype=np.int64)
    return _Layout(
        subset=subset,
        sessions=tuple(sessions),
        matrix=matrix,
        log=nan_mean(matrix),
        arith=nan_mean(arith),
        n_pairs=np.where(count > 0, count, np.nan),
        balanced=np.where(count > 0, balanced.astype(np.float64), np.nan),
        cycles=tuple(frozenset(int(c) for c in cycle_of[seen]) for seen in has.any(axis=1)),
    )


DECIDED: tuple[str, ...] = ("faster", "slower", "equivalent")


def _decision(row: dict[str, Any], parts: Sequence[_Series], margin: float) -> tuple[str, str]:
    """(decision, why not) for one row; `insufficient` below MIN_PROMPTS_FOR_DECISION."""
    sizes = {p.subset: int(np.isfinite(p.log).sum()) for p in parts}
    if not sizes or min(sizes.values()) == 0:
        return "inconclusive", ""
    small = [f"{s} {n}" for s, n in sizes.items() if n < MIN_PROMPTS_FOR_DECISION]
    if small:
        return "insufficient", (
            f"fewer than {MIN_PROMPTS_FOR_DECISION} prompts ({', '.join(small)}): no decision"
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


def _spread(parts: Sequence[_Series], finite: Sequence[FloatArray]) -> tuple[Spread, str]:
    """The published SE: prompts only, or with the session level given enough shared cycles."""
    shared = np.logical_and.reduce([np.isfinite(p.matrix).any(axis=0) for p in parts])
    if int(shared.sum()) < MIN_CYCLES_FOR_SESSION:
        return prompt_spread(finite), ""
    spread = session_spread(finite, [p.matrix[:, shared] for p in parts])
    if spread.method != WITH_SESSION and math.isfinite(spread.se):
        return spread, "session level not estimable: fewer than 2 prompts hold every cycle"
    return spread, ""


@dataclass(frozen=True)
class _Boot:
    """One row's share of a BootSummary."""

    kept: int
    q95: float
    q90: float
    low: float
    high: float


def _boot_row(summary: BootSummary, k: int) -> _Boot:
    return _Boot(
        int(summary.kept[k]),
        float(summary.q95[k]),
        float(summary.q90[k]),
        float(summary.low[k]),
        float(summary.high[k]),
    )


def _interval_columns(
    point: float, finite: Sequence[FloatArray], parts: Sequence[_Series], boot: _Boot
) -> tuple[dict[str, Any], Spread, str]:
    """The published 95 % / 90 % intervals and their SE, df and method, in percent."""
    spread, note = _spread(parts, finite)
    lo95, hi95 = published_interval(point, spread, boot.q95, 0.95)
    lo90, hi90 = published_interval(point, spread, boot.q90, 0.90)
    session_se = math.sqrt(spread.session_var) if spread.method == WITH_SESSION else math.nan
    columns = {
        "ci_low": to_pct(lo95),
        "ci_high": to_pct(hi95),
        "ci90_low": to_pct(lo90),
        "ci90_high": to_pct(hi90),
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
        "boot_ci_low": to_pct(boot.low),
        "boot_ci_high": to_pct(boot.high),
        "perm_p": perm_p,
        "perm_method": perm_method,
        "boot_requested": settings.boot,
        "boot_kept": boot.kept,
    }


def _summarise(parts: Sequence[_Series], boot: _Boot, settings: AnalysisSettings) -> dict[str, Any]:
    finite = [p.log[np.isfinite(p.log)] for p in parts]
    complete = all(v.size > 0 for v in finite)
    point = float(np.mean([v.mean() for v in finite])) if complete else math.nan
    arith = float(np.mean([np.nanmean(p.arith) for p in parts])) * 100.0 if complete else math.nan
    if complete:
        intervals, _, session_note = _interval_columns(point, finite, parts, boot)
    else:
        intervals, session_note = _interval_columns(math.nan, [], parts, boot)[0], ""
    balanced = np.concatenate([p.balanced[np.isfinite(p.balanced)] for p in parts])
    cycles = sorted(frozenset().union(*(p.cycles for p in parts)))
    row: dict[str, Any] = {
        "n_prompts": int(sum(v.size for v in finite)),
        "n_pairs": int(sum(np.nansum(p.n_pairs) for p in parts)),
        "cycles": ",".join(str(c) for c in cycles),
        "pct_change": to_pct(point),
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


def _tiebreak_cell(
    prim: float, intv: float, registered: str, trigger: str | None
) -> tuple[str, str]:
    has_p, has_i = math.isfinite(prim), math.isfinite(intv)
    if not (has_p or has_i):
        return registered, f"neither endpoint has pairs; the registered {registered} row stands"
    if not has_i:
        return "primary", "interval basis has no pairs here, so the primary figure is published"
    if not has_p:
        return (
            "interval",
            "primary endpoint has no pairs here, so the interval-basis figure is published",
        )
    if registered == "interval":
        return "interval", "interval basis is the pre-registered endpoint"
    if trigger is not None:
        return "interval", f"{trigger}, so the interval-basis figure is published headline-wide"
    return "primary", "endpoints agree within the tie-break in every cell, so the primary stands"


def apply_tiebreak(contrasts: pd.DataFrame, settings: AnalysisSettings) -> pd.DataFrame:
    """Mark which endpoint is published per treatment × subset, with the reason.

    One endpoint for the whole headline: the pre-registered endpoint stands unless, in ANY
    treatment × subset cell, the two endpoints differ by more than the tie-break (percentage
    points); then every cell publishes the interval-basis figure. A cell where one endpoint
    lacks pairs still yields to the other there.
    """
    if contrasts.empty:
        return contrasts.assign(divergence_pp=[], published=[], published_reason=[])
    wide = contrasts.pivot(index=["treatment", "subset"], columns="endpoint", values="pct_change")
    wide = wide.reindex(columns=list(ENDPOINTS))
    prim = wide["primary"].to_numpy(dtype=np.float64)
    intv = wide["interval"].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        divergence = np.abs(prim - intv)
    over = np.isfinite(divergence) & (divergence > settings.tiebreak_pp)
    trigger = None
    if over.any():
        worst = int(np.nanargmax(np.where(over, divergence, -1.0)))
        t, s = wide.index[worst]
        trigger = (
            f"{t}/{s} endpoints differ by {divergence[worst]:.2f} pp > "
            f"{settings.tiebreak_pp:g} pp tie-break"
        )
    choices = [
        _tiebreak_cell(p, i, settings.primary_endpoint, trigger)
        for p, i in zip(prim, intv, strict=True)
    ]
    decided = pd.DataFrame(
        {
            "divergence_pp": divergence,
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


def _cycle_rows(
    keys: Sequence[tuple[str, str]],
    subset: str,
    sessions: Sequence[tuple[str, int]],
    count: npt.NDArray[np.int64],
    mean_log: FloatArray,
) -> pd.DataFrame:
    k, j = np.nonzero(count > 0)
    return pd.DataFrame(
        {
            "endpoint": [keys[i][0] for i in k.tolist()],
            "treatment": [keys[i][1] for i in k.tolist()],
            "subset": subset,
            "run_id": [sessions[i][0] for i in j.tolist()],
            "cycle": np.array([sessions[i][1] for i in j.tolist()], dtype=np.int64),
            "n_pairs": count[k, j].astype(np.int64),
            "pct_change": 100.0 * np.expm1(mean_log[k, j]),
        }
    )


def per_cycle_table(
    layouts: Mapping[str, _Layout], keys: Sequence[tuple[str, str]], baseline: str
) -> pd.DataFrame:
    """The contrast within each (run, cycle): the mean log ratio over its prompts, in percent.

    With two or more subsets a pooled row is the equal-weight mean of the subset contrasts,
    where the cycle holds pairs in every subset.
    """
    frames, counts, means = [], [], []
    for subset, layout in layouts.items():
        count, mean = np.isfinite(layout.matrix).sum(axis=1), nan_mean(layout.matrix, axis=1)
        frames.append(_cycle_rows(keys, subset, layout.sessions, count, mean))
        counts.append(count)
        means.append(mean)
    if len(layouts) >= 2:
        every = (np.stack(counts) > 0).all(axis=0)
        total = np.where(every, np.stack(counts).sum(axis=0), 0)
        sessions = next(iter(layouts.values())).sessions
        frames.append(_cycle_rows(keys, POOLED, sessions, total, np.stack(means).mean(axis=0)))
    if not frames:
        return pd.DataFrame(columns=list(PER_CYCLE_COLUMNS))
    table = pd.concat(frames, ignore_index=True).assign(baseline=baseline)
    order = ["endpoint", "treatment", "subset", "run_id", "cycle"]
    return table.sort_values(order, kind="stable").reset_index(drop=True)[list(PER_CYCLE_COLUMNS)]


def drift_table(
    layouts: Mapping[str, _Layout], keys: Sequence[tuple[str, str]], baseline: str
) -> pd.DataFrame:
    """Half the odd-minus-even cycle contrast per series and subset.

    With ABC CBA order a linear drift adds +d to odd cycles and -d to even ones, so half their
    difference estimates d; with two cycles this is (cycle 1 - cycle 2) / 2. Each side is the
    mean over all its pairs.
    """
    rows = []
    for subset, layout in layouts.items():
        odd = np.array([c % 2 == 1 for _, c in layout.sessions], dtype=bool)
        flat = (len(keys), layout.matrix.shape[1] * int(odd.sum()))
        pct_odd = 100.0 * np.expm1(nan_mean(layout.matrix[..., odd].reshape(flat)))
        flat = (len(keys), layout.matrix.shape[1] * int((~odd).sum()))
        pct_even = 100.0 * np.expm1(nan_mean(layout.matrix[..., ~odd].reshape(flat)))
        for k in np.nonzero(np.isfinite(pct_odd) & np.isfinite(pct_even))[0].tolist():
            rows.append(
                {
                    "endpoint": keys[k][0],
                    "treatment": keys[k][1],
                    "baseline": baseline,
                    "subset": subset,
                    "pct_odd_cycles": pct_odd[k],
                    "pct_even_cycles": pct_even[k],
                    "drift_pp": (pct_odd[k] - pct_even[k]) / 2,
                }
            )
    table = pd.DataFrame(rows, columns=list(DRIFT_COLUMNS))
    order = ["endpoint", "treatment", "subset"]
    return table.sort_values(order, kind="stable").reset_index(drop=True)


def _trend_row(
    log_rate: FloatArray, position: FloatArray, session: IntArray, prompt: IntArray
) -> dict[str, Any]:
    kept = np.isfinite(log_rate)
    row: dict[str, Any] = {
        "n_obs": int(kept.sum()),
        "n_sessions": int(np.unique(session[kept]).size),
    }
    if not kept.any():
        nothing = {"slope_pct": math.nan, "ci_low": math.nan, "ci_high": math.nan}
        return {**row, **nothing, "df": math.nan, "stateful": False, "note": "no measurements"}
    slope = fixed_effects_slope(log_rate[kept], position[kept], [session[kept], prompt[kept]])
    half = t_quantile(0.975, slope.df) * slope.se
    low, high = to_pct(slope.estimate - half), to_pct(slope.estimate + half)
    pct = to_pct(slope.estimate)
    clear = math.isfinite(half) and (low > 0 or high < 0)
    row.update(slope_pct=pct, ci_low=low, ci_high=high, df=slope.df)
    row["stateful"] = bool(clear and abs(pct) >= STATEFUL_MIN_PCT_PER_POSITION)
    row["note"] = (
        ""
        if math.isfinite(pct)
        else "not identifiable: positions must differ between sessions of a prompt"
    )
    return row


def position_trend_table(
    records: pd.DataFrame, treatments: Sequence[str], baseline: str
) -> pd.DataFrame:
    """Per endpoint and treatment (baseline first): log rate's trend on position in session.

    log rate = session effect + prompt effect + slope · position + noise, fitted by OLS; the
    slope in percent per position has a t-interval. `stateful` when that 95 % interval excludes
    0 and the slope is at least STATEFUL_MIN_PCT_PER_POSITION. Records without a position
    (older runs) are left out; with none at all the table is empty.
    """
    placed = records[records["position"] >= 0]
    if placed.empty:
        return pd.DataFrame(columns=list(POSITION_COLUMNS))
    # Codes once for every treatment: per-treatment pandas work dominated this table.
    session = placed.groupby(["run_id", "session"], sort=False).ngroup().to_numpy(np.int64)
    prompt = pd.factorize(placed["prompt_id"])[0].astype(np.int64)
    position = placed["position"].to_numpy(dtype=np.float64)
    owner = placed["treatment"].to_numpy()
    rows: list[dict[str, Any]] = []
    for endpoint in ENDPOINTS:
        with np.errstate(invalid="ignore", divide="ignore"):
            log_rate = np.log(placed[f"rate_{endpoint}"].to_numpy(dtype=np.float64))
        for treatment in [baseline, *treatments]:
            mine = owner == treatment
            trend = _trend_row(log_rate[mine], position[mine], session[mine], prompt[mine])
            rows.append({"endpoint": endpoint, "treatment": treatment, **trend})
    table = pd.DataFrame(rows, columns=list(POSITION_COLUMNS))
    return table.astype({"stateful": "bool", "n_obs": "int64", "n_sessions": "int64"})


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
    layouts: dict[str, _Layout] = {}
    boot: dict[str, Resamples] = {}
    for s in subsets:
        universe = sorted(str(p) for p in records.loc[records["subset"] == s, "prompt_id"].unique())
        layouts[s] = _layout(s, pairs[pairs["subset"] == s], keys, universe, sessions)
        idx = index_matrix(len(universe), settings.boot, settings.seed, s)
        boot[s] = resample(layouts[s].log, idx)

    summaries = {s: summarise_resamples(boot[s], layouts[s].log_mean) for s in subsets}
    if len(subsets) >= 2:
        # Equal weight inside each resample; a resample missing any subset is not kept.
        pooled = Resamples(
            np.mean(np.stack([boot[s].mean for s in subsets]), axis=0),
            np.sum(np.stack([boot[s].var_mean for s in subsets]), axis=0) / len(subsets) ** 2,
        )
        point = np.mean(np.stack([layouts[s].log_mean for s in subsets]), axis=0)
        summaries[POOLED] = summarise_resamples(pooled, point)
    rows: list[dict[str, Any]] = []
    for k, (endpoint, treatment) in enumerate(keys):
        head = {"endpoint": endpoint, "treatment": treatment, "baseline": baseline}
        for s in subsets:
            row = _summarise([layouts[s].series(k)], _boot_row(summaries[s], k), settings)
            rows.append({**head, "subset": s, **row})
        if len(subsets) >= 2:
            parts = [layouts[s].series(k) for s in subsets]
            row = _summarise(parts, _boot_row(summaries[POOLED], k), settings)
            rows.append({**head, "subset": POOLED, **row})
    return _tables(rows, layouts, keys, gaps, records, settings)


def _tables(
    rows: list[dict[str, Any]],
    layouts: Mapping[str, _Layout],
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
