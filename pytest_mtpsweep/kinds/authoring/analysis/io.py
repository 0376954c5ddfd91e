"""The authoring analysis' only edge: read a run directory (records, plan, sessions, each cell's
conversation), write analysis/'s tables, and report.md and report.html from one report model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ....kindapi import AnalysisError, RunReadError
from ....kindapi.records import PlanDoc, RunReader, schema
from ....kindapi.records import recordlines as rl
from ....kindapi.report import AnalysisResult, Md, Report
from ..planfields import check_plan
from ..records import CELLS_DIR, CENSUS_CSV, COHORT_TABLE_CSV, CONTRASTS_CSV, TURNS_DIR
from ..report import conversations, findings
from ..report import sections as report
from . import contrast, repeats, tables
from .frame import CELL_TYPES, REQUIRED, TURN_TYPES, cell_frame, turn_frame

PASS_AT_K_CSV = "pass_at_k.csv"  # pass@k and pass^k per subject x cohort, intervals over tasks
RESCUE_CSV = "feedback_rescue.csv"  # cells not green at turn 1, and how many feedback rescued
REPEATS_CSV = "repeats.csv"  # per cohort x task: repeats and distinct artefact sequences


@dataclass(frozen=True)
class AuthoringResult:
    """What the analysis found and where it wrote it."""

    table: pd.DataFrame
    contrasts: list[contrast.Contrast]
    agreement: list[str]
    census: pd.DataFrame
    headline: str
    out_dir: Path
    report: Report  # what report.md and report.html were both rendered from
    # cell record lines that could not be read (`file:line: why`): such a cell is missing
    unreadable_cells: tuple[str, ...] = ()
    cells: pd.DataFrame | None = None  # one row per cell: what --expect gates judge


def _read(run_dir: Path, folder: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Every readable record of `folder`, and each line that is not (`file:line: why`)."""
    types = CELL_TYPES if folder == CELLS_DIR else TURN_TYPES
    read = RunReader(run_dir).records(folder, lambda _: types, REQUIRED)
    return read.records, [str(u) for u in read.unreadable]


def _messages(run_dir: Path, cell: Mapping[str, Any]) -> conversations.Messages | None:
    """The messages of the cell's conversation file (None when there is none to show)."""
    name = cell.get("conversation")
    if not isinstance(name, str) or not name:
        return None
    if not (run_dir / name).resolve().is_relative_to(run_dir.resolve()):
        return None  # a record names a file of this run only
    try:
        messages = RunReader(run_dir).document(name, "conversation").get("messages")
    except (RunReadError, OSError):
        return None
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else None


def _forgeable(records: list[dict[str, Any]]) -> list[str]:
    """Tasks checked in-process: the artefact ran inside the checker and could forge a verdict."""
    tasks = sorted({str(r.get("task")) for r in records if r.get("verdict_forgeable") is True})
    if not tasks:
        return []
    return [
        f"**FORGEABLE verdicts:** {Md.text(', '.join(tasks))} checked in-process (task.toml checking = "
        '"in-process"): the artefact ran inside the checker\'s process and could have written '
        "its own verdict; read those tasks' results as unverified."
    ]


def _title(run_dir: Path, plan: PlanDoc) -> str:
    """`ladder/run id` as plan.json names them (the directory's name without a plan)."""
    run = plan.run_id or run_dir.name
    return f"{plan.ladder}/{run}" if plan.ladder else run


def _notes(run_dir: Path, plan: PlanDoc) -> tuple[list[str], list[str]]:
    """The run's facts for the Notes, and those that limit the answer (for Limitations)."""
    notes, limits = [], []
    if plan != PlanDoc():  # the run has a plan.json
        notes.append(f"pre-registration sha256 {plan.preregistration_sha256 or 'not recorded'}")
    read = RunReader(run_dir).sessions(SESSION_TYPES)
    limits += [f"**Session file set aside:** {where}" for where in read.unreadable]
    for facts in read.facts:  # the session census names a bad one
        flight = _flight(facts)
        if flight.startswith("**"):
            limits.append(flight)
        elif flight:
            notes.append(flight)
    for name in (schema.RUN_STATUS_FILE, schema.STOPPED_FILE):
        path = run_dir / name
        if path.is_file():
            text = RunReader(run_dir).text(name)  # bounded: a huge file there is named
            notes.append(f"{name}: {' / '.join(text.strip().splitlines())}")
            limits += findings.status_limits(name, text)
    return notes, limits


# The session facts read here, bounded: a file holding a value no run writes is set aside, named.
SESSION_TYPES: rl.Types = {
    "ordinal": rl.COUNT,
    "cycle": rl.COUNT,
    "concurrency_lowest": rl.COUNT,
    "throttled_requests": rl.COUNT,
    "duration_s": rl.SECONDS,
    "load_s": rl.SECONDS,
}


def _flight(info: Mapping[str, Any]) -> str:
    """What a session with cells in flight together says of its concurrency (a limitation,
    in bold, when HTTP 429s lowered it)."""
    n, low = info.get("concurrency"), info.get("concurrency_lowest")
    if not isinstance(n, int) or n <= 1:
        return ""
    subject = info.get("treatment", info.get("session"))
    if isinstance(low, int) and low < n:
        return (
            f"**Concurrency lowered:** {Md.text(subject)} ran {n} cells in flight; HTTP 429s lowered the "
            f"requests in flight to {low} ({info.get('throttled_requests', 0)} request(s) "
            "throttled): cells started in the pre-registered order, but fewer ran together "
            "than planned."
        )
    return f"concurrency: {subject} ran {n} cells in flight; no HTTP 429 lowered it."


def analyse_dir(
    run_dir: Path, baseline: str, boot: int, seed: int, pooled: bool
) -> AuthoringResult:
    """Analyse an authoring run directory; save contrasts, table, census, report.md and
    report.html through the one writer (`AnalysisResult.save`)."""
    plan = RunReader(run_dir).plan
    check_plan(plan, f"plan file {run_dir / schema.PLAN_FILE}")
    records, bad_cells = _read(run_dir, CELLS_DIR)
    turn_records, bad_turns = _read(run_dir, TURNS_DIR)
    if not records:
        raise AnalysisError(f"{run_dir} holds no cell records; run the ladder first")
    cells = cell_frame(records)
    if baseline not in set(cells["cohort"]):
        raise AnalysisError(f"baseline cohort {baseline!r} has no cells in {run_dir}")
    turns = turn_frame(turn_records)
    table = tables.cohort_table(cells)
    census = tables.census(cells)
    subjects = list(dict.fromkeys(cells["subject"]))
    cohorts = [c for c in dict.fromkeys(cells["cohort"]) if c != baseline]
    rows = [
        r
        for s in subjects
        for c in cohorts
        for r in contrast.contrasts(cells, s, c, baseline, boot, seed)
    ]
    agree = contrast.agreement(rows)
    if pooled:
        rows += [
            r for c in cohorts for r in contrast.pooled(cells, subjects, c, baseline, boot, seed)
        ]
    same = repeats.identical_repeats(cells, turns)
    passes = repeats.pass_table(cells)
    rescue = repeats.rescue_table(cells, turns)
    out = run_dir / schema.ANALYSIS_DIR
    csvs = {
        COHORT_TABLE_CSV: table,
        CONTRASTS_CSV: report.contrasts_frame(rows),
        CENSUS_CSV: census,
        PASS_AT_K_CSV: passes,
        RESCUE_CSV: rescue,
        REPEATS_CSV: same,
    }
    settings = f"{boot} resamples, seed {seed}"
    unreadable = [*bad_cells, *bad_turns]  # named in the census too
    notes, run_limits = _notes(run_dir, plan)
    run_limits = [
        *_forgeable(records),
        *_unreadable(bad_cells, bad_turns),
        *_unknown_tokens(cells),
        *run_limits,
    ]
    limits = findings.limitations(cells, rows, same, rescue, run_limits, plan)
    extra = report.repeats_sections(passes, repeats.rescue_lines(rescue))
    final = conversations.final_cells(records)
    held = {str(c.get("cell")): _messages(run_dir, c) for c in final}
    model = report.model(
        f"Authoring report: {_title(run_dir, plan)}",
        findings.opening(plan, cells, rows, baseline),
        limits,
        table,
        rows,
        agree,
        [conversations.section(final, turn_records, held, plan)],
        extra,
        findings.census_lines(census, unreadable),
        notes,
        settings,
    )
    AnalysisResult(report=model, tables=csvs).save(out, run_dir)  # the one writer
    head = "\n".join(
        [
            report.headline(table, rows, agree),
            *repeats.repeats_lines(same),
            *repeats.rescue_lines(rescue)[:1],
            *(u.replace("**", "") for u in _unreadable(bad_cells, bad_turns)),
        ]
    )
    return AuthoringResult(table, rows, agree, census, head, out, model, tuple(bad_cells), cells)


def _unknown_tokens(cells: pd.DataFrame) -> list[str]:
    unknown = cells[~cells["tokens_known"]]
    if unknown.empty:
        return []
    names = Md.text(", ".join(unknown["cell"].astype(str).head(10)))
    more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
    return [
        f"**TOKENS UNKNOWN in {len(unknown)} cell(s)** ({names}{more}): the server answered "
        "without usage; their tokens are left out of token means and ratios, and the budget "
        "charged each such turn its bound."
    ]


def _unreadable(cells: list[str], turns: list[str]) -> list[str]:
    cut = "UNREADABLE records (a cell whose final record is cut is missing from every table)"
    lines = [rl.limitation([Md.text(c) for c in cells], cut)] if cells else []
    if turns:
        lines.append(
            rl.limitation(
                [Md.text(t) for t in turns], "Unreadable turn records (left out of turn counts)"
            )
        )
    return lines
