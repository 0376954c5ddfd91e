"""The report's "Why: the drafting mechanism" section and its picture (issue 49).

Per drafting treatment and subset: tokens per step E[L] and drafted tokens per step k-bar with
intervals, the break-even, the ceiling, the predicted and the measured speedup, and one sentence
that says whether drafting saves more than it costs. An arm that drafted no tokens is named so,
never shown as winning or losing by its mechanism. The picture: measured speedup against E[L],
with the model's line (speedup = E[L] / break-even), the break-even (dotted) and the ceiling
(a cross at E[L] = k-bar + 1) per arm.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..analysis.mechanism import cost_note
from ..analysis.runvalues import DecodeAnalysis
from .textfmt import dict_rows, finite, table_or_count, titled

TITLE = "Why: the drafting mechanism"
HEADERS = [
    "treatment",
    "subset",
    "tokens/step E[L]",
    "drafted/step k̄",
    "acceptance",
    "break-even E[L]",
    "ceiling",
    "predicted",
    "measured",
    "efficiency",
]


def _ci(row: Mapping[str, Any], name: str, digits: int = 2, scale: float = 1.0) -> str:
    v, lo, hi = row.get(name), row.get(f"{name}_low"), row.get(f"{name}_high")
    if v is None or not finite(v):
        return "-"
    text = f"{scale * float(v):.{digits}f}"
    if lo is not None and hi is not None and finite(lo) and finite(hi):
        text += f" [{scale * float(lo):.{digits}f}, {scale * float(hi):.{digits}f}]"
    return text


def sentences(result: DecodeAnalysis) -> dict[tuple[str, str], str]:
    """(treatment, subset) -> the mechanism's sentence, for the JUnit line and the report."""
    t = result.mechanism
    if t is None or t.empty:
        return {}
    return {(str(r["treatment"]), str(r["subset"])): str(r["sentence"]) for r in dict_rows(t)}


def _row(r: Mapping[str, Any]) -> list[str]:
    if r["verdict"] == "drafted no tokens":
        return [str(r["treatment"]), str(r["subset"]), "drafted no tokens", *["-"] * 7]
    return [
        str(r["treatment"]),
        str(r["subset"]),
        _ci(r, "mean_len"),
        _ci(r, "k_bar"),
        _ci(r, "acceptance", 1, 100.0) + " %",
        _ci(r, "step_ratio"),
        _ci(r, "ceiling"),
        _ci(r, "predicted"),
        _ci(r, "measured"),
        _ci(r, "efficiency"),
    ]


@titled(TITLE)
def section_mechanism(result: DecodeAnalysis) -> list[str]:
    t = result.mechanism
    if t is None or t.empty:
        return [
            "No treatment drafted: no valid analysed measurement carries the drafter's "
            "counts (the server's `draft_n`).",
            "",
        ]
    rows = [_row(r) for r in dict_rows(t)]
    lead = (
        "A speculative step verifies k drafted tokens and yields E[L] tokens; it costs the "
        "break-even's worth of plain steps, so drafting saves where E[L] is above its "
        "break-even. Ratios of summed counts (the server's `timings`), intervals from a "
        "paired bootstrap over prompts and cycles; speedups on the server's clock, in plain "
        "steps of the baseline (docs/analysis.md, 'The drafting mechanism'). " + cost_note(t)
    )
    said = [f"- {r['treatment']}, {r['sentence']}" for r in dict_rows(t)]
    invalid = [
        f"- {r['treatment']} / {r['subset']}: {int(r['invalid'])} measurement(s) with counts "
        f"that cannot be, left out of the mechanism (rate kept): {r['invalid_reason']}"
        for r in dict_rows(t)
        if finite(r.get("invalid")) and int(r["invalid"]) > 0
    ]
    table = table_or_count(HEADERS, rows, "mechanism.csv", "treatment × subset rows")
    return [lead, "", *said, "", table, "", *invalid, *([""] if invalid else [])]


def mechanism_figure(rows: Sequence[Mapping[str, Any]]) -> Any | None:
    """Measured speedup against E[L] per drafting arm and subset, with the model's line through
    each arm's break-even (speedup = E[L] / break-even) and speedup 1; None with nothing drafted."""
    from matplotlib.figure import Figure

    drawn = [
        r
        for r in rows
        if r.get("verdict") != "drafted no tokens"
        and finite(r.get("mean_len"))
        and finite(r.get("measured"))
    ]
    if not drawn:
        return None
    fig = Figure(figsize=(6.5, 4.2), layout="constrained")
    ax = fig.add_subplot()
    top = max(float(r.get("ceiling") or 0.0) if finite(r.get("ceiling")) else 0.0 for r in drawn)
    tops = [float(r["k_bar"]) + 1.0 for r in drawn if finite(r.get("k_bar"))]
    hi_l = max(2.0, max(float(r["mean_len"]) for r in drawn) * 1.2, *(t * 1.05 for t in tops))
    for i, r in enumerate(drawn):
        colour, be = f"C{i % 10}", float(r["step_ratio"])
        label = f"{r['treatment']} / {r['subset']}"
        x, y = float(r["mean_len"]), float(r["measured"])
        xerr = [[x - float(r["mean_len_low"])], [float(r["mean_len_high"]) - x]]
        yerr = [[y - float(r["measured_low"])], [float(r["measured_high"]) - y]]
        if all(finite(v[0]) for v in (*xerr, *yerr)):
            ax.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt="o", color=colour, label=label)
        else:
            ax.plot([x], [y], "o", color=colour, label=label)
        if finite(be) and be > 0:
            ax.plot([1.0, hi_l], [1.0 / be, hi_l / be], "-", color=colour, alpha=0.4, lw=1)
            ax.axvline(be, color=colour, ls=":", lw=1)
        if finite(r.get("k_bar")) and finite(r.get("ceiling")):  # every draft accepted
            ax.plot([float(r["k_bar"]) + 1.0], [float(r["ceiling"])], "x", color=colour)
    ax.axhline(1.0, color="grey", lw=1)
    ax.set_xlim(1.0, hi_l)
    if top > 0 and math.isfinite(top):
        ax.set_ylim(0.0, max(top, 1.2) * 1.05)
    ax.set_xlabel("tokens per step E[L]")
    ax.set_ylabel("speedup (server clock)")
    ax.legend(fontsize=7, loc="upper left")
    return fig


def figure_png(rows: Sequence[Mapping[str, Any]]) -> bytes | None:
    """The picture as PNG bytes, or None when nothing drafted."""
    fig = mechanism_figure(rows)
    if fig is None:
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()
