"""The authoring report's opening: the pre-registered question, the design, the headline and
every limitation, before any table: the report model's opening and its Limitations section
(report.md and report.html are rendered from the same blocks).

The limitations, one bullet each where they hold: forgeable verdicts, unreadable records, cells
without an informative outcome, tokens unknown, identical repeats (a deterministic subject),
feedback that never rescued a cell, few tasks (the intervals' width), one subject (no claim
across subjects), concurrency lowered by HTTP 429s, a run that did not finish.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ....kindapi.records import PlanDoc, schema
from ....kindapi.report import Md, Section, Text
from .. import records
from ..analysis.contrast import POOLED, Contrast
from ..analysis.repeats import repeats_lines
from .sections import LABELS

TITLE = "Limitations"
LIMITATIONS = f"## {TITLE}"  # its heading in report.md
# Below this many tasks a pass-rate interval over tasks is wider than ±17 pp at a 50 % rate
# (Wilson, 95 %): too wide to tell most cohort differences apart.
FEW_TASKS = 30


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _pp(x: float) -> str:
    return f"{100 * x:+.1f} pp" if math.isfinite(x) else "-"


def _named(items: Sequence[str]) -> str:
    shown = ", ".join(items[: Md.LONG_LIST_ROWS])
    return shown + (
        f" and {len(items) - Md.LONG_LIST_ROWS} more" if len(items) > Md.LONG_LIST_ROWS else ""
    )


def _design(plan: PlanDoc, cells: pd.DataFrame, baseline: str) -> str:
    subjects = list(dict.fromkeys(cells["subject"].astype(str)))
    cohorts = list(dict.fromkeys(cells["cohort"].astype(str)))
    tasks = cells["task"].nunique()
    repeats = int(cells["repeat"].max()) if cells["repeat"].notna().any() else 1
    text = (
        f"**Design:** {len(subjects)} subject(s) ({Md.text(', '.join(subjects))}) × "
        f"{len(cohorts)} cohort(s) ({Md.text(', '.join(cohorts))}; baseline {Md.text(baseline)})"
        f" × {tasks} task(s) × {repeats} "
        f"repeat(s) = {len(cells)} cells"
    )
    keyed, max_turns = plan.keyed, plan.kind_fields.get("max_turns")
    if max_turns is not None:
        text += f"; at most {Md.text(max_turns)} turn(s) per cell"
    if keyed.get("temperature") is not None:
        text += f"; temperature {keyed['temperature']:g}"
    return text + "."


def _headline(rows: Sequence[Contrast]) -> str:
    green = [r for r in rows if r.endpoint == "green" and r.subject != POOLED]
    if not green:
        return "**Headline:** no contrast could be formed (see the census)."
    said = []
    for r in green:
        if r.low > 0:
            verdict = "higher"
        elif r.high < 0:
            verdict = "lower"
        else:
            verdict = "the interval includes 0"
        said.append(
            f"{Md.text(f'{r.subject}: {r.cohort} vs {r.baseline}')} reached green {_pp(r.estimate)} "
            f"[{_pp(r.low)[:-3]}, {_pp(r.high)[:-3]}] over {r.tasks} tasks ({verdict})"
        )
    return f"**Headline:** {'; '.join(said)}."


def opening(
    plan: PlanDoc, cells: pd.DataFrame, rows: Sequence[Contrast], baseline: str
) -> tuple[Text, ...]:
    """Question (pre-registered), scope, design and headline: what precedes Limitations."""
    question = Md.text(plan.question) or "not recorded (plan.json has no `question`)"
    out = [f"**Question (pre-registered):** {question}"]
    if Md.text(plan.scope):
        out.append(f"**Scope:** {Md.text(plan.scope)}")
    return tuple(Text(p) for p in [*out, _design(plan, cells, baseline), _headline(rows)])


def _outcomes(cells: pd.DataFrame) -> str:
    other = cells[~cells["informative"]]
    if other.empty:
        return f"**Outcomes:** every one of the {len(cells)} cells has an informative outcome."
    counts = other[records.OUTCOME].fillna("no outcome").value_counts()
    named = Md.text(", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return (
        f"**Cells without an informative outcome:** {len(other)} of {len(cells)} ({named}): "
        "counted, left out of the rates and token means; each is named in the census "
        "(`census.csv`)."
    )


def _repeats(same: pd.DataFrame, cells: pd.DataFrame) -> list[str]:
    """repeats.repeats_lines as bullets: 'repeats identical: ...' -> '**Repeats identical:** ...'."""
    if same.empty and cells["repeat"].max() == 1:
        return [
            "**One repeat per cell:** pass@k beyond k = 1 and the spread between repeats "
            "cannot be estimated."
        ]
    out = []
    for line in repeats_lines(same):
        label, _, rest = line.partition(": ")
        out.append(f"**{Md.text(label.capitalize())}:** {Md.text(rest)}")
    return out


def _feedback(rescue: pd.DataFrame) -> list[str]:
    if rescue.empty or int(rescue["missed_first"].sum()) == 0:
        return []
    missed, rescued = int(rescue["missed_first"].sum()), int(rescue["rescued"].sum())
    sent = int(rescue["feedback_sent"].sum())
    if rescued:
        return []
    why = (
        f"{sent} error message(s) went back"
        if sent
        else "no error went back (at most one turn per cell)"
    )
    return [
        f"**Feedback never rescued a cell:** of {missed} cells not green at turn 1, none reached "
        f"green after the checker's error went back ({why}): the feedback loop did not fire "
        "in this run, so nothing here speaks to what feedback adds."
    ]


def _tasks(cells: pd.DataFrame, rows: Sequence[Contrast]) -> str:
    tasks = cells["task"].nunique()
    rates = [r for r in rows if r.scale == "difference" and math.isfinite(r.high - r.low)]
    widest = max(rates, key=lambda r: r.high - r.low, default=None)
    width = (
        f"; the widest pass-rate interval spans {100 * (widest.high - widest.low):.1f} pp "
        f"({Md.text(f'{widest.subject} {widest.cohort} vs {widest.baseline}')}, "
        f"{LABELS[widest.endpoint].removesuffix(' (pp)')})"
        if widest is not None
        else ""
    )
    label = "Few tasks" if tasks < FEW_TASKS else "Tasks"
    return (
        f"**{label}:** {tasks} task(s); every interval is over tasks, so its width is set by "
        f"them{width}."
    )


def _subjects(cells: pd.DataFrame) -> list[str]:
    subjects = list(dict.fromkeys(cells["subject"].astype(str)))
    if len(subjects) != 1:
        return []
    return [
        f"**One subject:** {Md.text(subjects[0])} only: the contrasts describe this subject on these "
        "tasks; nothing is claimed across subjects."
    ]


def limitations(
    cells: pd.DataFrame,
    rows: Sequence[Contrast],
    same: pd.DataFrame,
    rescue: pd.DataFrame,
    run_limits: Sequence[str],
    plan: PlanDoc,
) -> Section:
    """The Limitations section; `run_limits` are what the run directory said (forgeable
    verdicts, unreadable records, tokens unknown, lowered concurrency, a stop), one bullet each."""
    items = [
        *run_limits,
        _outcomes(cells),
        *_repeats(same, cells),
        *_feedback(rescue),
        _tasks(cells, rows),
        *_subjects(cells),
    ]
    if plan.analysis.multiplicity:
        items.append(f"**Multiplicity (pre-registered):** {Md.text(plan.analysis.multiplicity)}")
    return Section(TITLE, (Text.of(*(f"- {item}" for item in items)),), role="limitations")


def census_lines(census: pd.DataFrame, unreadable: Sequence[str]) -> list[str]:
    """## Census: the counts by class, then each cell without an informative outcome (past
    Md.LONG_LIST_ROWS, a count and the file that names them)."""
    out = [f"- {Md.text(k)}: {v}" for k, v in census["class"].value_counts().items()]
    out += [f"- unreadable: {Md.text(u)}" for u in unreadable]
    missing = census[census["class"] != "informative"]
    if len(missing) > Md.LONG_LIST_ROWS:
        out.append(
            f"- {len(missing)} cells without an informative outcome: too many to list here; "
            "one row each in `census.csv` beside this report (and under Conversations in "
            "`report.html`)."
        )
    else:
        said = [f"{r.cell}: {r['class']} ({r.why})" for _, r in missing.iterrows()]
        out += [f"- {Md.text(line)}" for line in said]
    return out


def status_limits(name: str, text: str) -> list[str]:
    """A run that did not finish as planned, from RUN_STATUS or STOPPED."""
    first = text.strip().splitlines()
    if name == schema.RUN_STATUS_FILE and first and first[0] == records.RUN_OK:
        return []
    return [f"**{Md.text(name)}:** {Md.text(' / '.join(first))}"]
