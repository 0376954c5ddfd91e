"""The authoring report's model: its opening and Limitations (findings.py), the subject x cohort
table, the paired contrasts, the conversations (the page's), pass@k, feedback, the census and the
notes; report.md and report.html are both rendered from it."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from ....kindapi.report import Md, Report, Section, Table, Text
from ..analysis.contrast import LEVEL, Contrast
from ..records import COMPLETION_TOKENS, PROMPT_TOKENS

LABELS = {
    "green": "reached green (pp)",
    "first_attempt": "first-attempt green (pp)",
    PROMPT_TOKENS: "prompt tokens (ratio)",
    COMPLETION_TOKENS: "completion tokens (ratio)",
}


def _num(x: float, fmt: str) -> str:
    return format(x, fmt) if isinstance(x, int | float) and math.isfinite(x) else "-"


COHORT_HEADERS = (
    "subject",
    "cohort",
    "cells",
    "green 1st",
    "green k>1",
    "never",
    "api fail",
    "chk err",
    "budget",
    "no outcome",
    "green %",
    "prompt tok",
    "compl tok",
)
COHORT_LEAD = (
    "Rates and mean tokens are over informative cells (first_attempt_green, green_after_k, "
    "exhausted); the other outcomes are counted and named below."
)


def cohort_rows(table: pd.DataFrame) -> list[tuple[str, ...]]:
    """The subject x cohort table's rows as they read (the terminal's, report.md's, the page's)."""
    return [
        (
            str(r.subject),
            str(r.cohort),
            str(r.cells),
            str(r.first_attempt_green),
            str(r.green_after_k),
            str(r.never_green),
            str(r.api_failure),
            str(r.checker_error),
            str(r.budget_stopped),
            str(r.no_outcome),
            _num(100 * r.green_rate, ".0f"),
            _num(r.mean_prompt_tokens, ".0f"),
            _num(r.mean_completion_tokens, ".0f"),
        )
        for r in table.itertuples()
    ]


def cohort_table(table: pd.DataFrame) -> Table:
    """The headline table: one row per subject x cohort (element id `cohorts` on the page)."""
    return Table(COHORT_HEADERS, tuple(cohort_rows(table)), id="cohorts", lead=COHORT_LEAD)


def table_text(table: pd.DataFrame) -> str:
    """The subject x cohort table as aligned text (the terminal's)."""
    rows = [list(COHORT_HEADERS), *(list(r) for r in cohort_rows(table))]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COHORT_HEADERS))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def contrast_text(c: Contrast) -> str:
    if c.scale == "difference":
        est = f"{_num(100 * c.estimate, '+.1f')} pp [{_num(100 * c.low, '+.1f')}, {_num(100 * c.high, '+.1f')}]"
    else:
        est = f"x{_num(c.estimate, '.3f')} [{_num(c.low, '.3f')}, {_num(c.high, '.3f')}]"
    return f"{c.subject}: {c.cohort} vs {c.baseline}, {LABELS[c.endpoint]}: {est}, {c.tasks} tasks"


def contrasts_frame(rows: Sequence[Contrast]) -> pd.DataFrame:
    return pd.DataFrame([r.__dict__ for r in rows])


def method_text(settings: str) -> str:
    """Which interval each endpoint has, in one sentence (report.md)."""
    where = f" ({settings})" if settings else ""
    return (
        f"{int(LEVEL * 100)} % intervals; pass rates: Newcombe's paired score interval "
        "(method 10: Wilson intervals with the phi correction; task means over repeats enter "
        "with their effective number of trials), which keeps its width when every task ties; "
        "token ratios: mean ± q·SE of the per-task log ratios, q the larger of Student's t and "
        f"the bootstrap-t over task resamples{where}, at most twice t."
    )


def headline(table: pd.DataFrame, rows: Sequence[Contrast], agree: Sequence[str]) -> str:
    """What the terminal shows at the end of the run."""
    lines = [table_text(table), ""]
    lines += [contrast_text(r) for r in rows]
    if rows:
        lines.append(
            f"{int(LEVEL * 100)} % intervals: pass rates by Newcombe's paired score interval, "
            "token ratios by t/bootstrap-t over tasks."
        )
    return "\n".join([*lines, *agree])


def _bullets(lines: Sequence[str]) -> Text:
    return Text.of(*(f"- {Md.text(line)}" for line in lines))


def model(
    title: str,
    opening: Sequence[Text],
    limitations: Section,
    table: pd.DataFrame,
    rows: Sequence[Contrast],
    agree: Sequence[str],
    page_only: Sequence[Section],
    extra: Sequence[Section],
    census: Sequence[str],
    notes: Sequence[str],
    settings: str,
) -> Report:
    """The report: question, design, headline and Limitations first, then the tables; the
    `page_only` sections (the conversations) open the page's detail, report.md skips them."""
    contrasts = [contrast_text(r) for r in rows] or ["no contrast could be formed"]
    lead = (
        "Paired by task (repeats averaged within a task first). Differences are in percentage "
        "points of the rate; token ratios are cohort / baseline. "
        f"{method_text(settings)}"
    )
    sections = [
        limitations,
        Section("Subjects x cohorts", (cohort_table(table),), role="headline"),
        Section(
            "Cohort contrasts, within subject",
            (Text(lead), _bullets(contrasts)),
            role="headline",
        ),
        Section("Across subjects", (_bullets(agree),), role="headline"),
        *page_only,
        *extra,
        Section("Census", (Text.of(*census),)),
    ]
    if notes:
        sections.append(Section("Notes", (_bullets(notes),)))
    return Report(Md.text(title), tuple(opening), tuple(sections))


def repeats_sections(passes: pd.DataFrame, rescue: Sequence[str]) -> tuple[Section, ...]:
    """pass@k and Feedback: what repeats and the checker's feedback added."""
    if passes.empty:
        shown: tuple[Text, ...] = (
            Text.of("- no subject x cohort had a task with every repeat informative"),
        )
    else:
        lead = Text(
            "Of reaching green, from n repeats per task (the unbiased estimator); 95 % Wilson "
            "intervals over tasks (effective trials)."
        )
        lines = []
        for r in passes.itertuples():
            name = f"pass@{r.k}" if r.measure == "pass@k" else f"pass^{r.k}"
            lines.append(
                f"- {Md.text(f'{r.subject}/{r.cohort}')}: {name} {100 * r.estimate:.1f} % "
                f"[{100 * r.low:.1f}, {100 * r.high:.1f}] ({r.tasks} tasks, n = {r.n})"
            )
        shown = (lead, Text.of(*lines))
    return (
        Section("pass@k", shown),
        Section("Feedback", (_bullets(rescue or ["no informative cell"]),)),
    )
