"""The decode report's pictures beyond the forest plot, drawn from the run's records.

- the paired dot plot: per treatment, each prompt's change against the baseline in each cycle
  (one mark per cycle) and over its cycles (the bar), all panels on one x axis;
- the session timeline: every valid measurement's rate against wall time, coloured by
  treatment, so drift and host noise show;
- draft acceptance: accepted / drafted tokens per treatment and subset.

`sections` turns them into the report model's Pictures sections (the page's alone). The records
come in as the DataFrame `frame` makes of the lines the analysis read (`io.picture_records`);
figures are built with matplotlib's Figure directly (no pyplot state), imported only here,
only when a picture is drawn.
"""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ....kindapi.report import Figure, Markup, Page, Section
from ..analysis.runvalues import ENDPOINT_COLUMNS, DecodeAnalysis
from .textfmt import dict_rows
from .whysection import mechanism_figure

MARKS = ("o", "s", "^", "D", "v", "P", "X", "*")
COLUMNS = (
    "run_id",
    "session",
    "treatment",
    "subset",
    "prompt_id",
    "cycle",
    "repeat",
    "valid",
    "started_at",
    *ENDPOINT_COLUMNS.values(),
)


def frame(rows: Sequence[Mapping[str, Any]]) -> Any:
    """The records' COLUMNS as a DataFrame: wall time parsed, each endpoint's rate (None unless
    above 0), valid as a bool."""
    import pandas as pd

    out = pd.DataFrame(list(rows), columns=list(COLUMNS))
    out["started"] = pd.to_datetime(out["started_at"], errors="coerce", utc=True)
    for endpoint, column in ENDPOINT_COLUMNS.items():
        rate = pd.to_numeric(out[column], errors="coerce")
        out[endpoint] = rate.where(rate > 0)
    out["valid"] = out["valid"].eq(True)
    return out


def _drawn(draw: Callable[[], Any], alt: str, caption: str) -> Figure | Page:
    """A matplotlib Figure as the model's PNG (nothing when there is nothing to draw); a picture
    that fails to draw is a note, never the report's end."""
    try:
        fig = draw()
        if fig is None:
            return Page()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=100)
    except Exception as exc:  # a picture must never cost the report
        return Page(
            Markup.el("p", f"{alt}: not drawn ({type(exc).__name__}: {exc}).", class_="note")
        )
    return Figure(alt, caption, png=buffer.getvalue())


def _endpoint(result: DecodeAnalysis) -> str:
    """The endpoint most published cells use (the tie-break can publish the interval one)."""
    published = [str(e) for e in result.published["endpoint"]] if len(result.contrasts) else []
    if published:
        return Counter(published).most_common(1)[0][0]
    return result.settings.primary_endpoint or "primary"


def _chosen(frame: Any, result: DecodeAnalysis) -> Any:
    """The records of the analysed comparability group (all of them if names do not match)."""
    group = next((g for g in result.groups if g.chosen), None)
    sessions = set(group.sessions) if group else set()
    mine = frame["session"].isin(sessions)
    return frame[mine] if mine.any() else frame


def _acceptance_rows(result: DecodeAnalysis) -> list[dict[str, Any]]:
    # NaN is "no rate" here, as null is in contrasts.json
    return [
        {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
        for r in dict_rows(result.acceptance)
    ]


def _mechanism_rows(result: DecodeAnalysis) -> list[dict[str, Any]]:
    return [] if result.mechanism is None else dict_rows(result.mechanism)


def sections(result: DecodeAnalysis, frame: Any) -> tuple[Section, ...]:
    """The Pictures sections drawn from the records (`frame`), in the page's order."""
    s = result.settings
    baseline, treatments = s.baseline, list(result.treatments)
    endpoint, margin = _endpoint(result), float(s.margin_pct or 0.0)
    chosen = _chosen(frame, result)
    acceptance = _drawn(
        lambda: acceptance_figure(_acceptance_rows(result)),
        "draft acceptance",
        "Drafted tokens the target model accepted, summed over the analysed measurements.",
    )
    if isinstance(acceptance, Page) and not acceptance.markup.html:
        acceptance = Page(Markup.el("p", "No treatment drafted tokens.", class_="note"))
    paired = _drawn(
        lambda: paired_figure(chosen, baseline, treatments, endpoint, margin),
        "paired dot plot",
        f"Each prompt's change against {baseline} ({endpoint} endpoint), one mark per cycle "
        "and a bar for the prompt's mean over its cycles; every panel shares the x axis. "
        "Marks far from their bar are the session-to-session spread the intervals carry.",
    )
    timeline = _drawn(
        lambda: timeline_figure(frame, [baseline, *treatments], endpoint),
        "session timeline",
        "Every valid measurement's rate against wall time, coloured by treatment: a drift "
        "or a burst of host load shows as a slope or a dip shared across treatments.",
    )
    why = _drawn(
        lambda: mechanism_figure(_mechanism_rows(result)),
        "speedup against tokens per step",
        "Each drafting arm's measured speedup (server clock) against its tokens per step "
        "E[L], with 95 % intervals; the faint line is the cost model's speedup E[L] / "
        "break-even for that arm's step cost, the dotted line its break-even E[L], the cross "
        "its ceiling (every draft accepted).",
    )
    if isinstance(why, Page) and not why.markup.html:
        why = Page(Markup.el("p", "No treatment drafted tokens.", class_="note"))
    drawn = (
        ("Each prompt, each cycle", paired),
        ("Session timeline", timeline),
        ("Draft acceptance", acceptance),
        ("Speedup against tokens per step", why),
    )
    return tuple(Section(t, (b,), role="pictures", markdown=False) for t, b in drawn)


def colours(treatments: Sequence[str]) -> dict[str, str]:
    """One colour per treatment, the same in every picture."""
    return {t: f"C{i % 10}" for i, t in enumerate(treatments)}


def paired_figure(
    frame: Any,
    baseline: str,
    treatments: Sequence[str],
    endpoint: str,
    margin_pct: float,
) -> Any | None:
    """Each prompt's % change per cycle (marks) and over its cycles (bar), one panel per
    treatment, one shared x axis; None when no prompt has a pair."""
    from matplotlib.figure import Figure

    ok = frame[frame["valid"] & frame[endpoint].notna()]
    keys = ["run_id", "subset", "prompt_id", "cycle"]
    means = ok.groupby([*keys, "treatment"])[endpoint].mean().unstack("treatment")
    if baseline not in means.columns:
        return None
    shown = [t for t in treatments if t in means.columns]
    ratios = {t: (means[t] / means[baseline]).dropna() for t in shown}
    ratios = {t: r for t, r in ratios.items() if len(r)}
    if not ratios:
        return None
    prompts = sorted({(s, p) for r in ratios.values() for (_, s, p, _) in r.index})
    where = {key: i for i, key in enumerate(prompts)}
    cycles = sorted({int(c) for r in ratios.values() for c in r.index.get_level_values("cycle")})
    fig = Figure(figsize=(3.6 * len(ratios) + 1.6, 0.24 * len(prompts) + 1.5), layout="constrained")
    axes = fig.subplots(1, len(ratios), sharex=True, sharey=True, squeeze=False)[0]
    for ax, (treatment, ratio) in zip(axes, ratios.items(), strict=True):
        ax.axvspan(-margin_pct, margin_pct, color="0.92", zorder=0)
        ax.axvline(0.0, color="0.4", linewidth=0.8, zorder=1)
        for k, cycle in enumerate(cycles):
            at = ratio[ratio.index.get_level_values("cycle") == cycle]
            y = [where[(s, p)] for (_, s, p, _) in at.index]
            ax.scatter(
                100 * (at.to_numpy() - 1),
                y,
                marker=MARKS[k % len(MARKS)],
                s=16,
                alpha=0.75,
                label=f"c{cycle}",
                zorder=2,
            )
        by_prompt = ratio.groupby(level=["subset", "prompt_id"]).apply(
            lambda r: 100 * math.expm1(float(sum(math.log(x) for x in r) / len(r)))
        )
        y = [where[key] for key in by_prompt.index]
        ax.scatter(by_prompt.to_numpy(), y, marker="|", s=160, color="k", label="mean", zorder=3)
        ax.set_title(f"{treatment} vs {baseline}", fontsize=10)
        ax.set_xlabel(f"% change, {endpoint} endpoint")
        ax.grid(axis="x", color="0.9", linewidth=0.6)
    axes[0].set_yticks(range(len(prompts)), [p for _, p in prompts], fontsize=8)
    axes[0].set_ylim(len(prompts) - 0.5, -0.5)
    handles, labels = axes[-1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize=8)
    return fig


def timeline_figure(frame: Any, treatments: Sequence[str], endpoint: str) -> Any | None:
    """Every valid measurement's rate against wall time, coloured by treatment."""
    from matplotlib.figure import Figure

    ok = frame[frame["valid"] & frame[endpoint].notna() & frame["started"].notna()]
    if ok.empty:
        return None
    start = ok["started"].min()
    seconds = (ok["started"] - start).dt.total_seconds()
    # A short run reads in seconds; anything longer in minutes.
    unit, scale = ("seconds", 1.0) if seconds.max() < 120 else ("minutes", 60.0)
    since = seconds / scale
    fig = Figure(figsize=(11, 3.4), layout="constrained")
    ax = fig.subplots()
    for session_start in ok.groupby("session")["started"].min():
        x = (session_start - start).total_seconds() / scale
        ax.axvline(x, color="0.88", linewidth=0.7, zorder=0)
    palette = colours([*treatments, *sorted(set(ok["treatment"]) - set(treatments))])
    for treatment, colour in palette.items():
        mine = ok["treatment"] == treatment
        if mine.any():
            ax.scatter(since[mine], ok[endpoint][mine], s=9, color=colour, label=treatment)
    ax.set_xlabel(f"{unit} since the first measurement (grey lines: a session starts)")
    ax.set_ylabel(f"tokens/s, {endpoint}")
    ax.grid(axis="y", color="0.92", linewidth=0.6)
    fig.legend(loc="outside right upper", fontsize=8, markerscale=1.5)
    return fig


def acceptance_figure(rows: Sequence[Mapping[str, Any]]) -> Any | None:
    """Accepted / drafted tokens per treatment and subset; None when nothing was drafted."""
    from matplotlib.figure import Figure

    drafted = [
        r for r in rows if r.get("with_draft") and isinstance(r.get("acceptance_pct"), float)
    ]
    if not drafted:
        return None
    labels = [f"{r['treatment']} / {r['subset']}" for r in drafted]
    values = [float(r["acceptance_pct"]) for r in drafted]
    fig = Figure(figsize=(7, 0.32 * len(drafted) + 1.1), layout="constrained")
    ax = fig.subplots()
    ax.barh(range(len(drafted)), values, color="C0")
    ax.set_yticks(range(len(drafted)), labels, fontsize=8)
    ax.set_ylim(len(drafted) - 0.5, -0.5)
    ax.set_xlim(0, 100)
    ax.set_xlabel("drafted tokens the target accepted, %")
    for y, (v, r) in enumerate(zip(values, drafted, strict=True)):
        counts = f"{v:.1f}% ({r.get('draft_n_accepted')} of {r.get('draft_n')})"
        ax.text(min(v + 1, 80), y, counts, va="center", fontsize=8)
    return fig
