"""A decode sweep: per subset, where the gain (or a loss) starts along the setting and which
settings may be best, from the records paired by prompt and cycle; the arms a `[stop]` sweep
dropped and at which look; the report's section and its picture.

The statistics are `kinds/decode/analysis/sweepstats.py`'s (kind-neutral); this module builds its `SweepData` from
the decode records (`pairing.cell_means`: repeats averaged per prompt and cycle, the published
endpoint's rate) and words the answers for the report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ....kindapi import AnalysisError
from ....kindapi.records import DroppedArm, PlanDoc
from ....kindapi.report import Figure, FigureData, Md, Section, Table, Text
from .pairing import cell_means
from .sweepstats import BestSet, StepDown, SweepData, best_set, where_gain_starts

TITLE = "Along the setting"
OTHER_END = {"first": "last", "last": "first"}


@dataclass(frozen=True)
class ArmFacts:
    """One arm's draft acceptance and, if a look dropped it, when and why."""

    arm: str
    value: str
    drafted: int
    accepted: int
    dropped_look: int | None = None
    dropped_after_cycle: int | None = None
    dropped_why: str = ""
    speculative: bool = False  # the sweep's server settings ask for drafting

    @property
    def drafted_nothing(self) -> bool:
        """A drafting arm whose server drafted no token: the baseline under another name, so
        its row says nothing of the setting (it neither wins nor loses by it)."""
        return self.speculative and self.drafted == 0

    @property
    def acceptance_pct(self) -> float:
        return 100.0 * self.accepted / self.drafted if self.drafted > 0 else math.nan


@dataclass(frozen=True)
class SubsetSweep:
    """One subset's answers: the step-downs both ways, the best set, each arm's facts."""

    subset: str
    faster: StepDown | None
    slower: StepDown | None
    best: BestSet | None
    arms: tuple[ArmFacts, ...]
    error: str = ""  # why the statistics could not be computed on this subset


@dataclass(frozen=True)
class SweepResult:
    """The sweep's analysis: the setting, the arms along it, and each subset's answers."""

    setting: str
    start: str  # "high" or "low"
    baseline: str
    arms: tuple[str, ...]
    values: tuple[str, ...]
    subsets: tuple[SubsetSweep, ...]
    dropped: tuple[DroppedArm, ...] = ()
    sessions_run: int = 0
    sessions_grid: int = 0
    confidence: float = 0.95  # the intervals' level: a sequential run's last look's repeated one


def sweep_data(
    analysed: pd.DataFrame,
    subset: str,
    arms: Sequence[str],
    baseline: str,
    endpoint: str,
    *,
    setting: str = "",
    labels: Sequence[str] = (),
    start: str = "high",
) -> SweepData:
    """One subset's (prompt, cycle) blocks x arms of log rates (NaN where an arm has none)."""
    cells = cell_means(analysed[analysed["subset"] == subset])
    cells = cells[(cells["endpoint"] == endpoint) & cells["treatment"].isin([baseline, *arms])]
    order = [baseline, *arms]
    if cells.empty:
        raise AnalysisError(f"no valid {subset} records of the sweep's arms to analyse")
    wide = cells.pivot_table(
        index=["run_id", "prompt_id", "cycle"], columns="treatment", values="rate", aggfunc="mean"
    ).reindex(columns=order)
    rates = wide.to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(rates > 0, np.log(rates), np.nan)
    index = wide.index.to_frame(index=False)
    return SweepData(
        arms=tuple(order),
        baseline=baseline,
        log_rates=logs,
        clusters=index["cycle"].to_numpy(),
        prompts=index["prompt_id"].astype(str).to_numpy(),
        subset=subset,
        setting=setting,
        labels=tuple([baseline, *labels]) if labels else (),
        start="last" if start == "high" else "first",
    )


def _acceptance(analysed: pd.DataFrame, subset: str, arm: str) -> tuple[int, int]:
    mine = analysed[(analysed["subset"] == subset) & (analysed["treatment"] == arm)]
    if "draft_n" not in mine or mine.empty:
        return 0, 0
    drafted = mine[mine["draft_n"].notna()]
    return int(drafted["draft_n"].sum()), int(drafted["draft_n_accepted"].fillna(0).sum())


def analyse_sweep(
    analysed: pd.DataFrame,
    plan: PlanDoc,
    *,
    subsets: Sequence[str],
    baseline: str,
    endpoint: str,
    boot: int,
    seed: int,
    dropped: Sequence[DroppedArm] = (),
    alpha: float = 0.05,
) -> SweepResult | None:
    """The sweep's answers per subset (None: plan.json has no sweep), at two-sided `alpha`: 5 %
    for a fixed design, the level a sequential run's last look spent (its repeated level) for
    one with `[stop]`. A gain is looked for from the ladder's `from` end, a loss from the other
    end, each a fixed-sequence step-down at alpha/2 one-sided."""
    doc = plan.sweep
    if doc is None:
        return None
    arms = doc.arms
    if baseline in arms or not arms:  # another baseline's analysis (a secondary contrast)
        return None
    values = doc.arm_values
    setting, start = doc.setting, doc.start
    speculative = _drafts(doc.shared_args, tuple(a.flag for a in doc.axes))
    dropped = tuple(dropped)
    by_arm = {d.arm: d for d in dropped}
    out = []
    for subset in subsets:
        facts = []
        for arm, value in zip(arms, values, strict=True):
            d = by_arm.get(arm)
            n, acc = _acceptance(analysed, subset, arm)
            facts.append(
                ArmFacts(
                    arm,
                    value,
                    n,
                    acc,
                    d.look if d else None,
                    d.after_cycle if d else None,
                    d.why if d else "",
                    speculative,
                )
            )
        try:
            data = sweep_data(
                analysed,
                subset,
                arms,
                baseline,
                endpoint,
                setting=setting,
                labels=list(values),
                start=start,
            )
            faster = where_gain_starts(data, direction="faster", alpha=alpha, boot=boot, seed=seed)
            slower = where_gain_starts(
                data,
                direction="slower",
                alpha=alpha,
                boot=boot,
                seed=seed,
                start=OTHER_END[data.start],
            )
            best = best_set(data, alpha=alpha, boot=boot, seed=seed)
        except AnalysisError as exc:
            out.append(SubsetSweep(subset, None, None, None, tuple(facts), str(exc)))
            continue
        out.append(SubsetSweep(subset, faster, slower, best, tuple(facts)))
    run = analysed[["run_id", "session"]].drop_duplicates() if "session" in analysed else ()
    grid = len(plan.sessions)
    return SweepResult(
        setting, start, baseline, arms, values, tuple(out), dropped, len(run), grid, 1.0 - alpha
    )


def _drafts(args: Sequence[str], flags: Sequence[str]) -> bool:
    """Whether the sweep's arms ask the server to draft (a speculative type, a draft model)."""
    said = list(args)
    for i, a in enumerate(said):
        if a in ("-md", "--model-draft") or a.startswith("--spec-draft"):
            return True
        if a == "--spec-type" and i + 1 < len(said) and said[i + 1] != "none":
            return True
    return any(f.startswith("--spec-") or f in ("-md", "--model-draft") for f in flags)


def silent_arms(result: SweepResult) -> list[str]:
    """One sentence per subset naming the drafting arms that drafted no token there."""
    out = []
    for s in result.subsets:
        none = [f"{result.setting} {f.value}".strip() for f in s.arms if f.drafted_nothing]
        if none:
            out.append(
                f"{s.subset}: {', '.join(none)} drafted no tokens, so "
                f"{'it' if len(none) == 1 else 'each'} ran as the baseline under another name "
                "and says nothing of the setting"
            )
    return out


def _pct(v: float) -> str:
    return f"{v:+.1f} %" if math.isfinite(v) else "n/a"


def headline_lines(result: SweepResult) -> list[str]:
    """The headline sentences: where the gain starts and which settings may be best, per
    subset; the arms the looks dropped; the sessions against the full grid."""
    lines = []
    for s in result.subsets:
        if s.error:
            lines.append(f"- **{Md.text(s.subset)}**: no sweep answer ({Md.text(s.error)}).")
            continue
        assert s.faster is not None and s.slower is not None and s.best is not None
        where = s.faster.sentence
        if s.slower.effective:
            where += " " + s.slower.sentence
        lines.append(f"- **{Md.text(s.subset)}**, where the gain starts: {Md.text(where)}")
        lines.append(
            f"- **{Md.text(s.subset)}**, which settings may be best: {Md.text(s.best.sentence)}"
        )
    lines += [f"- {Md.text(line)}." for line in silent_arms(result)]
    for d in result.dropped:
        lines.append(
            f"- {Md.text(d.arm)} left the run at look {d.look} (after cycle "
            f"{d.after_cycle}): {Md.text(d.why)}."
        )
    if result.sessions_grid:
        saved = result.sessions_grid - result.sessions_run
        lines.append(
            f"- Sessions: {result.sessions_run} of the full grid's {result.sessions_grid} "
            f"({saved} saved by the stop rule and the dropped arms)."
        )
    return lines


def terminal_lines(result: SweepResult) -> list[str]:
    """The sweep's answers as plain lines for the end of a run."""
    out = [f"sweep along {result.setting}:"]
    for s in result.subsets:
        if s.faster is None or s.best is None or s.slower is None:
            out.append(f"  {s.subset}: no sweep answer ({s.error})")
            continue
        loss = f" {s.slower.sentence}" if s.slower.effective else ""
        out.append(f"  {s.subset}: where the gain starts: {s.faster.sentence}{loss}")
        out.append(f"  {s.subset}: which may be best: {s.best.sentence}")
    out += [f"  {line}" for line in silent_arms(result)]
    for d in result.dropped:
        out.append(f"  {d.arm} left at look {d.look} (after cycle {d.after_cycle}): {d.why}")
    if result.sessions_grid:
        out.append(
            f"  sessions: {result.sessions_run} of the full grid's {result.sessions_grid} "
            f"({result.sessions_grid - result.sessions_run} saved)"
        )
    return out


def section(
    result: SweepResult | None, mechanism: Mapping[tuple[str, str], str] | None = None
) -> Section | None:
    """The report's sweep section: the sentences, then each arm's intervals per subset, and
    with `mechanism` ((subset, arm) -> words, `mechanism.sweep_cells`) why: each drafting
    arm's tokens per step against its break-even, its ceiling and the model's prediction."""
    if result is None:
        return None
    why = mechanism or {}
    rows: list[tuple[object, ...]] = []
    for s in result.subsets:
        faster = {iv.arm: iv for iv in (s.faster.intervals if s.faster else ())}
        mcb = {iv.arm: iv for iv in (s.best.intervals if s.best else ())}
        best = set(s.best.best) if s.best else set()
        for f in s.arms:
            iv, m = faster.get(f.arm), mcb.get(f.arm)
            rows.append(
                (
                    s.subset,
                    f.arm,
                    f.value,
                    _pct(iv.estimate_pct) if iv else "",
                    f"[{_pct(iv.low_pct)}, {_pct(iv.high_pct)}]" if iv else "",
                    f"[{_pct(m.low_pct)}, {_pct(m.high_pct)}]" if m else "",
                    "n/a" if f.drafted_nothing else "yes" if f.arm in best else "no",
                    "drafted nothing"
                    if f.drafted_nothing
                    else f"{f.acceptance_pct:.0f} %"
                    if f.drafted
                    else "n/a",
                    f"look {f.dropped_look}" if f.dropped_look else "",
                    why.get((s.subset, f.arm), ""),
                )
            )
        if s.best and result.baseline in best:
            rows.append((s.subset, result.baseline, "baseline", "", "", "", "yes", "n/a", "", ""))
    level = _level(result)
    lead = (
        f"{Md.code(result.setting)} from {Md.text(result.start)}: each arm against "
        f"{Md.text(result.baseline)} (the step-down's {level} intervals; a gain looked for from "
        f"the {Md.text(result.start)} end, a loss from the other), and against the best of the "
        f"others (simultaneous {level}, multiple comparisons with the best)."
    )
    if result.confidence > 0.95 + 1e-9:
        lead += (
            f" The run stopped at a look of its sequential design: {level} is that look's "
            "repeated level, which keeps the 5 % family-wise error over every look it took."
        )
    table = Table(
        (
            "subset",
            "arm",
            "value",
            "vs baseline",
            f"{level} interval",
            "vs best of others",
            "may be best",
            "draft acceptance",
            "dropped",
            "why: tokens per step (mechanism)",
        ),
        tuple(rows),
        lead=lead,
    )
    return Section(TITLE, (Text.of(*headline_lines(result)), table), role="headline")


def _level(result: SweepResult) -> str:
    return f"{100 * result.confidence:.4g} %"


def figure(result: SweepResult) -> Any | None:
    """The gain along the setting per subset (intervals, dropped arms marked at their look),
    beside draft acceptance along the setting; None when there is nothing to draw."""
    from matplotlib.figure import Figure

    subsets = [s for s in result.subsets if s.faster is not None]
    if not subsets:
        return None
    fig = Figure(figsize=(4.2 * len(subsets) + 3.5, 3.6), layout="constrained")
    axes = fig.subplots(1, len(subsets) + 1, squeeze=False)[0]
    x = np.arange(len(result.arms))
    for ax, s in zip(axes, subsets, strict=False):
        assert s.faster is not None
        ivs = {iv.arm: iv for iv in s.faster.intervals}
        best = set(s.best.best) if s.best else set()
        ax.axhline(0.0, color="0.4", linewidth=0.8)
        for xi, f in zip(x, s.arms, strict=True):
            iv = ivs.get(f.arm)
            if iv is None or not math.isfinite(iv.estimate_pct):
                continue
            colour = "0.6" if f.drafted_nothing else "C2" if f.arm in best else "C0"
            ax.plot([xi, xi], [iv.low_pct, iv.high_pct], color=colour, linewidth=1.4)
            ax.plot([xi], [iv.estimate_pct], marker="o", color=colour)
            if f.dropped_look:
                ax.plot([xi], [iv.estimate_pct], marker="x", color="C3", markersize=11)
                ax.annotate(
                    f"dropped, look {f.dropped_look}",
                    (xi, iv.high_pct),
                    fontsize="x-small",
                    ha="center",
                    va="bottom",
                    color="C3",
                )
        if s.faster.first_effective is not None:
            ax.axvline(
                result.arms.index(s.faster.first_effective) - 0.5,
                color="C2",
                linestyle="--",
                linewidth=0.8,
            )
        ax.set_xticks(x, list(result.values))
        ax.set_title(s.subset)
        ax.set_xlabel(result.setting)
        ax.set_ylabel(f"% change vs {result.baseline}")
    acc = axes[-1]
    for i, s in enumerate(result.subsets):
        ys = [f.acceptance_pct for f in s.arms]
        acc.plot(x, ys, marker="o", label=s.subset, color=f"C{i + 4}")
    acc.set_xticks(x, list(result.values))
    acc.set_ylim(0, 100)
    acc.set_xlabel(result.setting)
    acc.set_ylabel("draft acceptance %")
    acc.set_title("draft acceptance")
    acc.legend(fontsize="small")
    fig.suptitle(
        f"gain along the setting: {_level(result)} intervals; green may be best, "
        "grey drafted nothing, x dropped at a look",
        fontsize="medium",
    )
    return fig


PICTURE = "sweep.png"


def _drawn_or_none(result: SweepResult) -> Any | None:
    """The sweep's figure; None when it cannot be drawn (a picture must never cost the report:
    the writer then leaves no file, and the section's table carries the same numbers)."""
    try:
        return figure(result)
    except Exception:
        return None


def picture(result: SweepResult) -> tuple[tuple[FigureData, ...], tuple[Section, ...]]:
    """The sweep's picture as data, saved beside the report by the writer (report.md links it,
    the page inlines it), and its section; nothing when there is nothing to draw."""
    if not any(s.faster is not None for s in result.subsets):
        return (), ()
    caption = (
        f"The gain along {result.setting} per subset against {result.baseline} "
        f"({_level(result)} intervals; green: may be best; grey: drafted nothing; a red x: the arm "
        "a look dropped, at its look), and draft acceptance along the setting."
    )
    section = Section(
        "Gain along the setting",
        (Figure("gain along the setting", caption, file=PICTURE),),
        role="pictures",
    )
    return (FigureData(PICTURE, result, _drawn_or_none, dpi=100),), (section,)
