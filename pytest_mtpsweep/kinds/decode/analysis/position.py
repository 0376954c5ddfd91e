"""Within-session order: the trend of log rate on position, per treatment; `stateful` flags."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ....kindapi.analysis import t_quantile, to_pct
from .contraststats import FloatArray, IntArray, fixed_effects_slope
from .runvalues import ENDPOINTS, STATEFUL_MIN_PCT_PER_POSITION

POSITION_COLUMNS: tuple[str, ...] = (
    "endpoint",
    "treatment",
    "n_obs",
    "n_sessions",
    "slope_pct",
    "ci_low",
    "ci_high",
    "df",
    "stateful",
    "note",
)


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
