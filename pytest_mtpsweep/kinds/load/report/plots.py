"""The load plots, built in memory (matplotlib optional; the analysis saves them): latency
percentiles and throughput against the level per treatment, and the gain against the level
with its interval."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..analysis.contrast import Row
from ..analysis.frame import LATENCIES
from ..records import OUTPUT_TOK_S, REQ_S
from .sections import NAMES

if TYPE_CHECKING:
    import pandas as pd

    from ..analysis.capacity_stats import CapacityResult
    from ..analysis.crossover import Crossover

STYLES = {50: "-", 90: "--", 99: ":"}
LABELS = {"ttft": "TTFT", "itl": "ITL (every chunk gap)", "e2e": "e2e"}
CLIP = 4.0  # the gain plot shows factors 1/4..4 (-75 % .. +300 %)


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
                ax.plot(
                    xs,
                    rows[f"{name}_p{q}_ms"],
                    style,
                    marker="o",
                    color=f"C{k}",
                    label=f"{treatment} p{q}",
                )
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
        for ax, col in zip(axes, (OUTPUT_TOK_S, REQ_S), strict=True):
            ax.plot(
                [x[lv] for lv in rows["level"]], rows[col], "-o", color=f"C{k}", label=treatment
            )
            ax.plot([x[lv] for lv in mine["level"]], mine[col], ".", color=f"C{k}", alpha=0.5)
    for ax, col in zip(axes, (OUTPUT_TOK_S, REQ_S), strict=True):
        ax.set_xticks(range(len(order)), list(order))
        ax.set_title(NAMES[col])
    axes[0].legend(fontsize="small")
    return fig


def gain_figure(
    rows: Sequence[Row], order: Sequence[str], baseline: str, crossings: Sequence[Crossover] = ()
) -> Any | None:
    """Each endpoint's gain against the level with its 95 % interval, one panel per endpoint, on
    a log axis of the gain factor (labelled in percent) clipped to 1/CLIP..CLIP: an interval
    past the clip (throughput with few cycles) ends in an arrow at the edge. Where a gain
    crosses zero, a dashed line at the crossing and its interval shaded (to the panel's edge
    where the interval is open)."""
    import math

    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, NullFormatter

    endpoints = list(dict.fromkeys(r.endpoint for r in rows))
    if not endpoints:
        return None
    fig = Figure(figsize=(3.2 * len(endpoints), 3.4), layout="constrained")
    axes = fig.subplots(1, len(endpoints), squeeze=False, sharey=True)[0]
    x = {label: i for i, label in enumerate(order)}
    pairs = list(dict.fromkeys((r.treatment, r.baseline) for r in rows))
    lo, hi = 1 / CLIP, CLIP

    def factor(pct: float) -> float:
        f = 1.0 + pct / 100.0 if math.isfinite(pct) else math.nan
        return min(max(f, lo), hi) if math.isfinite(f) else math.nan

    for ax, ep in zip(axes, endpoints, strict=True):
        ax.axhline(1.0, color="0.4", linewidth=0.8)
        for k, pair in enumerate(pairs):
            mine = [r for r in rows if (r.treatment, r.baseline) == pair and r.endpoint == ep]
            xs = [x[r.level] + 0.08 * k for r in mine]
            ax.plot(xs, [factor(r.gain_pct) for r in mine], "-o", color=f"C{k}", label=pair[0])
            for xi, r in zip(xs, mine, strict=True):
                a, b = factor(r.ci_low), factor(r.ci_high)
                ax.plot([xi, xi], [a, b], color=f"C{k}", linewidth=1.2)
                for end, edge, mark in ((a, lo, "v"), (b, hi, "^")):
                    if end == edge:
                        ax.plot([xi], [edge], mark, color=f"C{k}")
        for k, pair in enumerate(pairs):
            for c in crossings:
                if (c.treatment, c.baseline) == pair and c.endpoint == ep and c.crosses:
                    at, lo_x, hi_x = (_position(c, v, order) for v in (c.at, c.low, c.high))
                    ax.axvspan(lo_x, hi_x, color=f"C{k}", alpha=0.12, linewidth=0)
                    ax.axvline(at, color=f"C{k}", linestyle="--", linewidth=1.0)
        ax.set_yscale("log")
        ax.set_ylim(lo * 0.9, hi * 1.1)
        ax.set_yticks([0.25, 0.5, 1.0, 2.0, 4.0])
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{(y - 1) * 100:+.0f} %"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(range(len(order)), list(order))
        ax.set_title(f"{NAMES[ep]} gain")
    axes[0].set_ylabel(f"gain vs {baseline}, 95 % CI")
    axes[0].legend(fontsize="small")
    return fig


def _position(c: Crossover, value: float, order: Sequence[str]) -> float:
    """A level value's place on the categorical axis: between two levels' ticks on log2; an
    open end (infinite) half a tick past the outermost level of its mode."""
    import math

    start, xs = order.index(c.labels[0]), [math.log2(v) for v in c.levels]
    if value == -math.inf or value == math.inf:
        return start - 0.5 if value < 0 else start + len(xs) - 0.5
    v = math.log2(value)
    for i in range(len(xs) - 1):
        if xs[i] <= v <= xs[i + 1]:
            return start + i + (v - xs[i]) / (xs[i + 1] - xs[i])
    return start + (0.0 if v < xs[0] else len(xs) - 1.0)


def capacity_figure(r: CapacityResult) -> Any:
    """Attainment against the level per treatment (Wilson 95 % bars), the target as a line,
    each treatment's capacity estimate dashed: the curve a capacity search walks."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.2, 3.4), layout="constrained")
    ax = fig.subplots()
    for k, t in enumerate(dict.fromkeys(a.treatment for a in r.attained)):
        mine = [a for a in r.attained if a.treatment == t]
        xs = [a.level for a in mine]
        ax.errorbar(
            xs,
            [a.share for a in mine],
            color=f"C{k}",
            marker="o",
            label=t,
            yerr=[
                [max(0.0, a.share - a.low) for a in mine],
                [max(0.0, a.high - a.share) for a in mine],
            ],
            capsize=2,
            linewidth=1.2,
        )
        cap = next((c for c in r.capacities if c.treatment == t), None)
        if cap is not None and cap.censored == 0:
            ax.axvline(cap.estimate, color=f"C{k}", linestyle="--", linewidth=0.9)
    ax.axhline(r.settings.attainment, color="0.3", linewidth=0.9, linestyle=":")
    ax.set_xscale("log", base=2)
    probed = sorted({a.level for a in r.attained})
    ax.set_xticks(probed, [f"{v:g}" for v in probed])
    ax.minorticks_off()
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("concurrency" if r.settings.mode == "closed" else "rate (requests/s)")
    ax.set_ylabel("share of requests within the SLOs")
    ax.legend(fontsize="small")
    return fig
