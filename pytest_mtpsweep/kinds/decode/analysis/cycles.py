"""Per-cycle contrasts and the drift estimate from the odd and even cycles."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from ....kindapi import SUBSETS
from .contraststats import FloatArray, nan_mean
from .layout import Layout

PER_CYCLE_COLUMNS: tuple[str, ...] = (
    "endpoint",
    "treatment",
    "baseline",
    "subset",
    "run_id",
    "cycle",
    "n_pairs",
    "pct_change",
)


DRIFT_COLUMNS: tuple[str, ...] = (
    "endpoint",
    "treatment",
    "baseline",
    "subset",
    "pct_odd_cycles",
    "pct_even_cycles",
    "drift_pp",
)


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
    layouts: Mapping[str, Layout], keys: Sequence[tuple[str, str]], baseline: str
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
        frames.append(
            _cycle_rows(keys, SUBSETS.pooled, sessions, total, np.stack(means).mean(axis=0))
        )
    if not frames:
        return pd.DataFrame(columns=list(PER_CYCLE_COLUMNS))
    table = pd.concat(frames, ignore_index=True).assign(baseline=baseline)
    order = ["endpoint", "treatment", "subset", "run_id", "cycle"]
    return table.sort_values(order, kind="stable").reset_index(drop=True)[list(PER_CYCLE_COLUMNS)]


def drift_table(
    layouts: Mapping[str, Layout], keys: Sequence[tuple[str, str]], baseline: str
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
