"""The forest plot, built in memory; io.py saves it. matplotlib stays optional
(`Figure.can_draw()` says whether it can draw)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ....kindapi import SUBSETS
from ..analysis.runvalues import DecodeAnalysis


def forest_figure(result: DecodeAnalysis) -> Any | None:
    """A matplotlib Figure of the published intervals, one panel per subset; None if empty.

    Uses Figure directly rather than pyplot so no global backend state is touched.
    """
    from matplotlib.figure import Figure

    published = result.published
    if published.empty or not result.has_pairs:
        return None
    subsets = [s for s in result.subsets if s in set(published["subset"])]
    if SUBSETS.pooled in set(published["subset"]):
        subsets.append(SUBSETS.pooled)
    treatments = list(result.treatments)
    # at least wide enough for the title on one panel
    width = max(4.2 * len(subsets), 7.0)
    fig = Figure(figsize=(width, 0.6 * len(treatments) + 1.8), layout="constrained")
    # One x axis for every panel: a subset's change reads against the others' at a glance.
    axes = fig.subplots(1, len(subsets), sharex=True, sharey=True, squeeze=False)[0]
    y = np.arange(len(treatments))[::-1]
    margin = result.settings.margin_pct
    for ax, subset in zip(axes, subsets, strict=True):
        rows = published[published["subset"] == subset].set_index("treatment")
        ax.axvspan(-margin, margin, color="0.9", zorder=0)
        ax.axvline(0.0, color="0.4", linewidth=0.8)
        for yi, treatment in zip(y, treatments, strict=True):
            if treatment not in rows.index:
                continue
            r = rows.loc[treatment]
            if not np.isfinite(r["pct_change"]):
                continue
            ax.plot([r["ci_low"], r["ci_high"]], [yi, yi], color="C0", linewidth=1.2)
            ax.plot([r["ci90_low"], r["ci90_high"]], [yi, yi], color="C0", linewidth=3.0)
            marker = "o" if r["endpoint"] == "primary" else "s"
            ax.plot([r["pct_change"]], [yi], marker=marker, color="C3")
        ax.set_ylim(-0.6, len(treatments) - 0.4)
        ax.set_title(subset)
        ax.set_xlabel("% change vs " + result.settings.baseline)
    axes[0].set_yticks(y, treatments)
    fig.suptitle(
        "published endpoint: 95% (thin) and 90% (thick) intervals; ○ primary, □ interval",
        fontsize="medium",
    )
    return fig
