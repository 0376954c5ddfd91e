"""Pairing: repeats averaged per cell, each treatment cell matched with the baseline's."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .runvalues import ENDPOINTS

BASELINE_ONLY = "baseline without treatment"


TREATMENT_ONLY = "treatment without baseline"


GAP_COLUMNS: tuple[str, ...] = (
    "endpoint",
    "treatment",
    "baseline",
    "subset",
    "run_id",
    "prompt_id",
    "cycle",
    "device",
    "direction",
)


SERIES_KEYS: list[str] = ["endpoint", "treatment"]


# `device` ("" without -n): a treatment on one device is never paired with a baseline measured
# on another (a distributed run keeps each cycle pair on one device, so none is lost).
CELL_KEYS: list[str] = ["endpoint", "run_id", "subset", "prompt_id", "cycle", "device"]


def cell_means(records: pd.DataFrame) -> pd.DataFrame:
    """Mean rate per (endpoint, run, treatment, subset, prompt, cycle, device): repeats
    averaged first."""
    if "device" not in records:  # a frame from before the device column: one device
        records = records.assign(device="")
    elif records["device"].isna().any():  # groupby would drop the rows whose key is missing
        records = records.assign(device=records["device"].fillna(""))
    ids = records[["run_id", "treatment", "subset", "prompt_id", "cycle", "device"]]
    long = pd.concat(
        [ids.assign(endpoint=e, rate=records[f"rate_{e}"]) for e in ENDPOINTS],
        ignore_index=True,
    )
    long = long[np.isfinite(long["rate"].to_numpy(dtype=np.float64))]
    return long.groupby([*CELL_KEYS, "treatment"], as_index=False, sort=True)["rate"].mean()


def pair_cells(
    cells: pd.DataFrame, treatments: Sequence[str], baseline: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pairs, gaps): treatment cells matched with baseline cells within (run, prompt, cycle,
    device).

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
