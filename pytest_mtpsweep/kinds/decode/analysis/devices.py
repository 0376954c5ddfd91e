"""The contrast per device of a distributed run: a heterogeneity check beside the headline.

Each device (the worker's name where no device was pinned) measured whole cycle pairs, so
its pairs give a contrast of their own. This is not a second test: it shows whether one
device carries the headline (a device that is slower for the treatment alone, a host whose
servers shared its cores). Pure: pairs in, a table out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ....kindapi.report import Md, Section
from ..report.textfmt import md_section

PER_DEVICE_COLUMNS: tuple[str, ...] = (
    "endpoint",
    "treatment",
    "device",
    "cycles",
    "prompts",
    "pairs",
    "change_pct",
    "spread_pct",
)


def unit_of(records: pd.DataFrame) -> pd.Series:
    """A record's device, else its worker (one CPU host's workers), else ''."""
    device = records.get("device", pd.Series("", index=records.index)).fillna("").astype(str)
    worker = records.get("worker", pd.Series("", index=records.index)).fillna("").astype(str)
    return device.where(device != "", worker)


def per_device_table(pairs: pd.DataFrame, treatments: Sequence[str]) -> pd.DataFrame:
    """Per endpoint × treatment × device: the change (geometric mean of the pair ratios,
    prompts weighted equally) and the spread of its per-prompt changes (IQR), in percent.
    Empty unless the pairs come from two or more devices."""
    if pairs.empty or "device" not in pairs or pairs["device"].nunique() < 2:
        return pd.DataFrame(columns=list(PER_DEVICE_COLUMNS))
    rows = []
    keys = ["endpoint", "treatment", "device"]
    for (endpoint, treatment, device), g in pairs.groupby(keys, sort=True):
        if treatment not in treatments:
            continue
        per_prompt = g.groupby("prompt_id")["log_ratio"].mean().to_numpy(dtype=np.float64)
        q1, q3 = np.percentile(per_prompt, [25, 75])
        rows.append(
            {
                "endpoint": endpoint,
                "treatment": treatment,
                "device": device,
                "cycles": int(g["cycle"].nunique()),
                "prompts": len(per_prompt),
                "pairs": len(g),
                "change_pct": float(np.expm1(per_prompt.mean()) * 100.0),
                "spread_pct": float((np.expm1(q3) - np.expm1(q1)) * 100.0),
            }
        )
    return pd.DataFrame(rows, columns=list(PER_DEVICE_COLUMNS))


def render(table: pd.DataFrame, endpoint: str) -> Section | None:
    """The report's section (None for a run on one device)."""
    rows = table[table["endpoint"] == endpoint]
    if rows.empty:
        return None
    out = [
        "Each device ran whole cycle pairs; pairs never cross devices. The headline pools "
        "them; a device whose change differs from the others' says the headline depends on "
        "where it was measured.",
        "",
    ]
    headers = ["treatment", "device", "cycles", "prompts", "pairs", "change", "per-prompt IQR"]
    cells = [
        [
            r.treatment,
            r.device,
            r.cycles,
            r.prompts,
            r.pairs,
            f"{r.change_pct:+.2f}%",
            f"{r.spread_pct:.2f} pp",
        ]
        for r in rows.itertuples(index=False)
    ]
    return md_section(
        f"Per device ({endpoint}): a heterogeneity check", [*out, Md.table(headers, cells)]
    )


def terminal_lines(table: pd.DataFrame, endpoint: str) -> list[str]:
    """One line per treatment for the terminal, beside the headline (none on one device)."""
    rows = table[table["endpoint"] == endpoint]
    return [
        f"per device ({endpoint}, a heterogeneity check): {treatment}: "
        + ", ".join(
            f"{r.device} {r.change_pct:+.1f}% ({r.prompts} prompts)" for r in g.itertuples()
        )
        for treatment, g in rows.groupby("treatment", sort=False)
    ]
