"""The load plots, built in memory (matplotlib optional; the analysis saves them): latency
percentiles and throughput against the level per treatment, and the gain against the level
with its interval."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .contrast import Row
from .frame import LATENCIES
from .report import NAMES

if TYPE_CHECKING:
    import pandas as pd

STYLES = {50: "-", 90: "--", 99: ":"}
LABELS = {"ttft": "TTFT", "itl": "ITL (every chunk gap)", "e2e": "e2e"}


def latency_figure(table: pd.DataFrame, order: Sequence[str]) -> Any:
    """TTFT, ITL and e2e (p50 solid, p90 dashed, p99 dotted) against the level, per treatment."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 3.6), layout="constrained")
    axes = fig.subplots(1, len(LATENCIES), squeeze=False)[0]
    x = {label: i for i, label in enumerate(order)}
    for k, (treatment, rows) in enumerate(table.groupby("treatment", sort=False)):
        xs = [x[lv] for lv in rows["level"]]
        for ax, name in zip(axes, LATENCIES, strict=True):
            for q, style in STYLES.items():
                ax.plot(xs, rows[f"{name}_p{q}_ms"], style, marker="o", color=f"C{k}",
                        label=f"{treatment} p{q}")  # fmt: skip
    for ax, name in zip(axes, LATENCIES, strict=True):
        ax.set_xticks(range(len(order)), list(order))
        ax.set_title(f"{LABELS[name]} (ms)")
        ax.set_yscale("log")
    axes[0].legend(fontsize="small")
    return fig


def throughput_figure(table: pd.DataFrame, levels: pd.DataFrame, order: Sequence[str]) -> Any:
    """Output tok/s and req/s against the level: the mean over cycles, each cycle a dot."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    axes = fig.subplots(1, 2, squeeze=False)[0]
    x = {label: i for i, label in enumerate(order)}
    for k, (treatment, rows) in enumerate(table.groupby("treatment", sort=False)):
        mine = levels[(levels["treatment"] == treatment) & levels["valid"].astype(bool)]
        for ax, col in zip(axes, ("output_tok_s", "req_s"), strict=True):
            ax.plot([x[lv] for lv in rows["level"]], rows[col], "-o", color=f"C{k}",
                    label=treatment)  # fmt: skip
            ax.plot([x[lv] for lv in mine["level"]], mine[col], ".", color=f"C{k}", alpha=0.5)
    for ax, col in zip(axes, ("output_tok_s", "req_s"), strict=True):
        ax.set_xticks(range(len(order)), list(order))
        ax.set_title(NAMES[col])
    axes[0].legend(fontsize="small")
    return fig


def gain_figure(rows: Sequence[Row], order: Sequence[str], baseline: str) -> Any | None:
    """Each endpoint's gain against the level with its 95 % interval, one panel per endpoint."""
    from matplotlib.figure import Figure

    endpoints = list(dict.fromkeys(r.endpoint for r in rows))
    if not endpoints:
        return None
    fig = Figure(figsize=(3.2 * len(endpoints), 3.4), layout="constrained")
    axes = fig.subplots(1, len(endpoints), squeeze=False, sharey=False)[0]
    x = {label: i for i, label in enumerate(order)}
    pairs = list(dict.fromkeys((r.treatment, r.baseline) for r in rows))
    for ax, ep in zip(axes, endpoints, strict=True):
        ax.axhline(0.0, color="0.4", linewidth=0.8)
        for k, pair in enumerate(pairs):
            mine = [r for r in rows if (r.treatment, r.baseline) == pair and r.endpoint == ep]
            xs = [x[r.level] + 0.08 * k for r in mine]
            ys = [r.gain_pct for r in mine]
            err = [[r.gain_pct - r.ci_low for r in mine], [r.ci_high - r.gain_pct for r in mine]]
            ax.errorbar(xs, ys, yerr=err, fmt="-o", color=f"C{k}", capsize=3, label=pair[0])
        ax.set_xticks(range(len(order)), list(order))
        ax.set_title(f"{NAMES[ep]} gain (%)")
    axes[0].set_ylabel(f"gain vs {baseline}, 95 % CI")
    axes[0].legend(fontsize="small")
    return fig
