"""The analysis' only edge: read run directories, write the outputs. Everything else is pure."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ....kindapi import BOOT, AnalysisError
from ....kindapi.records import RunReader, recordlines, schema
from ....kindapi.report import AnalysisResult, Figure, FigureData, Section
from ..planfields import check_plan
from ..report import pictures
from ..report.page import PageParts
from ..report.pictures import COLUMNS
from ..report.plot import forest_figure
from ..report.sections import FOREST_PNG, report_model
from . import sweep
from .census import SESSION_TYPES
from .equivalence import PAIR_COLUMNS
from .pipeline import analyse, headline_cells
from .runvalues import ENDPOINTS, DecodeAnalysis, QuarantinedSession, RecordFile, RunData

OUTPUT_FILES: tuple[str, ...] = (
    "contrasts.csv",
    "contrasts.json",
    "census.csv",
    "gaps.csv",
    "exclusions.csv",
    "position_trend.csv",
    "equivalence.csv",
    "acceptance.csv",
    "mechanism.csv",
    "truncated.csv",
    "per_cycle.csv",
    "report.md",
    "report.html",
    "forest.png",
)


def _protocol_stops(run: RunReader) -> list[str]:
    """What cut the run short, as the protocol left it: stop marker, deadline, curtailment."""
    notes: list[str] = []
    if run.has(schema.STOPPED_FILE):
        notes.append(f"the run was STOPPED by a protocol rule: {run.stopped}")
    if run.has(schema.CURTAILMENT_FILE):
        notes += curtailment_notes(run.curtailment, run.path / schema.CURTAILMENT_FILE)
    return notes


def curtailment_notes(facts: Any, path: Path) -> list[str]:
    """The report's notes from curtailment.json; anything but the protocol's shape is refused."""
    shape = {"dropped": list, "affected_treatments": list, "sentence": str, "deadline_stop": dict}
    bad = not isinstance(facts, Mapping) or any(
        key in facts and not isinstance(facts[key], kind) for key, kind in shape.items()
    )
    if bad or not all(isinstance(d, Mapping) for d in facts.get("dropped", [])):
        raise AnalysisError(
            f"curtailment file {path} does not hold the object the protocol writes (dropped, "
            "affected_treatments, sentence); restore it from the run"
        )
    notes: list[str] = []
    dropped = ", ".join(str(d.get("session")) for d in facts.get("dropped", []))
    stop = facts.get("deadline_stop")
    if stop:
        # The deadline is a hard cap: it ended the run, whatever the drop order said.
        notes.append(
            f"the run was stopped by its deadline ({stop.get('deadline')}): it stopped after "
            f"session {stop.get('after')} and did not run {', '.join(map(str, stop.get('not_run') or []))}"
        )
    if dropped:
        notes.append(f"curtailed: sessions dropped to meet the deadline: {dropped}")
    sentence = str(facts.get("sentence", ""))
    for treatment in facts.get("affected_treatments", []):
        # the treatment as plain text: the report escapes every note as free text (mdtext)
        notes.append(sentence.replace("[treatment]", str(treatment)))
    return notes


def load_run(run_dir: Path) -> RunData:
    """Read one run directory (through the run reader) without interpreting it."""
    if not run_dir.is_dir():
        raise AnalysisError(
            f"run directory {run_dir} does not exist; pass a path like runs/<ladder>/<run-id>"
        )
    run = RunReader(run_dir)
    notes: list[str] = []
    if not run.has(schema.PLAN_FILE):
        notes.append(
            f"{run_dir / schema.PLAN_FILE} is missing: default analysis settings were used"
        )
    plan, run_id = run.plan, run.run_id
    check_plan(plan, f"plan file {run_dir / schema.PLAN_FILE}")
    sha = plan.preregistration_sha256
    if sha:
        notes.append(f"pre-registration (preregistration.md) sha256 {sha}")
    stops = _protocol_stops(run)  # stop.json is not read: the looks come from the records
    files = tuple(RecordFile(run_id, f.name, f.lines, f.identity) for f in run.record_files())
    sessions = run.sessions(SESSION_TYPES)  # a fact out of its bounds: the file set aside
    notes += [f"session file ignored: {where}" for where in sessions.unreadable]
    quarantined = []
    for held in run.quarantined():
        lines = held.records.lines if held.records is not None else ()
        n = sum(1 for line in lines if line.strip())
        spoiled = held.why.startswith(schema.HOST_SPOILED)
        quarantined.append(
            QuarantinedSession(
                run_id,
                held.session,
                n,
                held.why,
                lines if spoiled else (),
                (held.facts or {}) if spoiled else {},
            )
        )
    return RunData(
        run_dir=str(run_dir),
        run_id=run_id,
        plan=plan,
        record_files=files,
        sessions=sessions.facts,
        quarantined=tuple(quarantined),
        notes=tuple(notes),
        stops=tuple(stops),
    )


def picture_records(files: Sequence[RecordFile]) -> list[dict[str, Any]]:
    """The pictures' columns of every record line the analysis read (lines that do not parse
    are skipped: the analysis names them)."""
    rows: list[dict[str, Any]] = []
    for file in files:
        read, _ = recordlines.read_lines(
            file.lines, f"records/{file.session}.jsonl", identity=file.identity
        )
        rows += [
            {c: line.record.get(c) for c in COLUMNS} | {"session": file.session} for line in read
        ]
    return rows


def default_out_dir(result: DecodeAnalysis) -> Path:
    """<run>/analysis; a non-registered baseline or a pooled analysis gets its own folder.

    This keeps an exploratory or pooled analysis from overwriting the pre-registered one.
    """
    first = Path(result.run_dirs[0])
    if len(result.run_dirs) > 1:
        return first / "analysis_pooled"
    if result.settings.exploratory:
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", result.settings.baseline)
        return first / f"analysis_vs_{safe}"
    return first / "analysis"


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def _frame(frame: pd.DataFrame) -> list[Any]:
    return [_jsonable(row) for row in frame.astype(object).to_dict(orient="records")]


def _equivalence_json(result: DecodeAnalysis) -> dict[str, Any]:
    eq = result.equivalence
    if eq is None:
        return {"checked": False, "why": result.equivalence_skipped}
    return {
        "checked": True,
        "baseline": eq.baseline,
        "summary": _frame(eq.summary),
        "pairs": _frame(eq.pairs),
        "self_identity": _frame(eq.self_identity),
    }


def _host_rule_json(result: DecodeAnalysis) -> dict[str, Any]:
    e = result.host_rule
    return {
        "recorded": e.recorded,
        "applied": e.recorded and not e.why_not,
        "why_not": e.why_not,
        "thresholds": _jsonable(e.thresholds),
        "rerun": [list(pair) for pair in e.rerun],
        "kept": [list(pair) for pair in e.kept],
        "not_available": dict(e.not_available),
        "with_originals": None if e.with_originals is None else _frame(e.with_originals),
    }


def result_json(result: DecodeAnalysis) -> dict[str, Any]:
    """Everything in a result as plain JSON (NaN becomes null)."""
    n_cells = len(result.treatments) * (len(result.subsets) + (len(result.subsets) >= 2))
    return {
        "run_ids": list(result.run_ids),
        "run_dirs": list(result.run_dirs),
        "ladder": result.ladder,
        "settings": _jsonable(dataclasses.asdict(result.settings)),
        "treatments": list(result.treatments),
        "subsets": list(result.subsets),
        "multiplicity": {
            "treatments": len(result.treatments),
            "subset_cells": n_cells // max(len(result.treatments), 1),
            "endpoints": len(ENDPOINTS),
            "intervals": n_cells * len(ENDPOINTS),
            "correction": "none",
        },
        "contrasts": _frame(result.contrasts),
        "census": _frame(result.census),
        "gaps": _frame(result.gaps),
        "exclusions": _frame(result.exclusions),
        "per_cycle": _frame(result.per_cycle),
        "drift": _frame(result.drift),
        "calibration": _frame(result.calibration),
        "truncated": _frame(result.truncated),
        "degenerate": _frame(result.degenerate),
        "host": _frame(result.host),
        "interval_basis": _frame(result.interval_basis),
        "quarantined": _frame(result.quarantined),
        "host_rule": _host_rule_json(result),
        "question": result.question,
        "scope": result.scope,
        "limits": {
            "stops": list(result.stops),
            "unselected": list(result.unselected),
            "not_run": list(result.not_run),
            "unreadable": list(result.unreadable),
        },
        "equivalence": _equivalence_json(result),
        "acceptance": _frame(result.acceptance),
        "mechanism": _frame(result.mechanism),
        "groups": [_jsonable(dataclasses.asdict(g)) for g in result.groups],
        "notes": list(result.notes),
    }


def _forest_drawn(result: DecodeAnalysis) -> bool:
    """Whether the forest plot is drawn: matplotlib there and a published contrast with pairs
    (what `forest_figure` needs to give a figure)."""
    return result.plot_available and result.has_pairs and not result.published.empty


def saved_result(result: DecodeAnalysis, draw: bool = False) -> AnalysisResult:
    """The decode analysis as the kind-neutral result the one writer saves: its tables, its
    contrasts.json, forest.png (and a sweep's picture) as data, and the report model. With
    `draw` the page also has the pictures drawn from the records (beside the forest plot)."""
    forest = _forest_drawn(result)
    figures: tuple[FigureData, ...] = ()
    drawn: tuple[Section, ...] = ()
    if forest:
        figures = (FigureData(FOREST_PNG, result, forest_figure, dpi=120),)
    if draw and forest:
        drawn = pictures.sections(result, pictures.frame(picture_records(result.record_files)))
    if forest and result.sweep is not None:
        shown, sections = sweep.picture(result.sweep)
        figures, drawn = (*figures, *shown), (*sections, *drawn)
    # One row per (treatment, prompt, cycle) compared with the baseline; header only when the
    # comparison did not run (temperature above 0), the report says why.
    pairs = result.equivalence.pairs if result.equivalence is not None else None
    tables = {
        "contrasts.csv": result.contrasts,
        "census.csv": result.census,
        # census.csv is one row per cell; these two are its itemised companions.
        "gaps.csv": result.gaps,
        "exclusions.csv": result.exclusions,
        "position_trend.csv": result.position_trend,
        "equivalence.csv": pairs if pairs is not None else pd.DataFrame(columns=[*PAIR_COLUMNS]),
        "acceptance.csv": result.acceptance,
        "mechanism.csv": result.mechanism,
        # report.md names how many rows these hold rather than listing them one by one.
        "truncated.csv": result.truncated,
        "per_cycle.csv": result.per_cycle,
    }
    return AnalysisResult(
        report=report_model(result, PageParts(forest=forest, pictures=drawn)),
        cells=headline_cells(result),
        tables=tables,
        documents={"contrasts.json": result_json(result)},
        figures=figures,
        # A plot left by an earlier analysis would contradict this report.
        stale=() if forest else (FOREST_PNG,),
    )


def write_outputs(result: DecodeAnalysis, out: Path, draw: bool = False) -> DecodeAnalysis:
    """Save every output into `out` through the one writer; returns the result with out_dir,
    files and the report model set."""
    saved = saved_result(result, draw)
    saved.save(out, Path(result.run_dirs[0]))
    written = [name for name in OUTPUT_FILES if name != FOREST_PNG or saved.figures]
    return dataclasses.replace(
        result, out_dir=str(out), written=tuple(str(out / n) for n in written), report=saved.report
    )


@dataclass(frozen=True)
class AnalyseOptions:
    """What one analysis of decode runs is asked for: `baseline` None uses plan.json's; an
    `endpoint` named explicitly writes beside the pre-registered analysis (e.g. into
    analysis_interval_basis/), never over it; `out` None is the run's own folder; with `draw`
    report.html has the pictures drawn from the records."""

    baseline: str | None = None
    boot: int = BOOT.default
    seed: int = BOOT.seed
    out: Path | None = None
    pool: bool = False
    endpoint: str | None = None
    draw: bool = False


def analyse_run(
    run_dirs: Sequence[Path],
    options: AnalyseOptions,
    check: Callable[[DecodeAnalysis], None] | None = None,
) -> DecodeAnalysis:
    """The decode analysis, the one entry: load the runs, analyse them and write the outputs;
    `check` may refuse the result before anything is written."""
    result = load_and_analyse(run_dirs, options)
    if check is not None:
        check(result)
    out = options.out
    if out is None:
        out = default_out_dir(result)
        if options.endpoint is not None:
            out = out.with_name(f"{out.name}_{options.endpoint}_basis")
    return write_outputs(result, out, options.draw)


def load_and_analyse(run_dirs: Sequence[Path], options: AnalyseOptions) -> DecodeAnalysis:
    """Load and analyse without writing anything (`compare`'s; `out` and `draw` unused)."""
    runs = [load_run(Path(d)) for d in run_dirs]
    return analyse(
        runs,
        baseline=options.baseline,
        boot=options.boot,
        seed=options.seed,
        pool=options.pool,
        plot_available=Figure.can_draw(),
        endpoint=options.endpoint,
    )
