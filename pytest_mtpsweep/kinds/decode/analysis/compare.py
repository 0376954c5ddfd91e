"""`mtpsweep compare`: each run's own contrasts side by side, never pooled."""

from __future__ import annotations

from collections.abc import Sequence

from ....kindapi import SUBSETS
from ..report.textfmt import (
    ci,
    dict_rows,
    pct,
    plain_table,
)
from .runvalues import DecodeAnalysis

COMPARE_LABEL = "secondary, descriptive: different runs"


def compare_table(results: Sequence[DecodeAnalysis]) -> str:
    """A descriptive side-by-side of each run's own published contrasts; nothing is pooled."""
    head = (
        f"{COMPARE_LABEL.capitalize()}. Each run was analysed separately against its own "
        "baseline; no interval here compares the runs, and evening, restart and cohort effects "
        "between them are uncontrolled."
    )
    keys: list[tuple[str, str]] = []
    for r in results:
        for row in dict_rows(r.published):
            if (row["treatment"], row["subset"]) not in keys:
                keys.append((str(row["treatment"]), str(row["subset"])))
    order = {
        **{s: float(i) for i, s in enumerate(SUBSETS.names)},
        SUBSETS.pooled: len(SUBSETS.names),
    }
    keys.sort(key=lambda k: (k[0], order.get(k[1], 1.5), k[1]))
    headers = ["treatment", "subset"] + [
        f"{r.run_ids[0]} (vs {r.settings.baseline})" for r in results
    ]
    rows = []
    for key in keys:
        cells = []
        for r in results:
            pub = r.published.set_index(["treatment", "subset"])
            if key in pub.index:
                row = pub.loc[key]
                cells.append(
                    f"{pct(row['pct_change'])} {ci(row['ci_low'], row['ci_high'])} "
                    f"{row['decision']} ({row['endpoint']}, n={int(row['n_prompts'])})"
                )
            else:
                cells.append("-")
        rows.append([key[0], key[1], *cells])
    if not rows:
        return f"{head}\nNeither run has contrasts to show."
    return f"{head}\n{plain_table(headers, rows)}"
