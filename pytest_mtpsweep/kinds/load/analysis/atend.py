"""The load kind's analysis inside a run: the headline cells a [stop] rule looks at, at each
look (`interim`, which the look saves once its record is in stop.json), and the analysis at
session end with its gate."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ....kindapi import (
    AnalysisError,
    AnalysisRequest,
    EndAnalysis,
)
from .gates import stop_cells, verdicts

if TYPE_CHECKING:
    from ....kindapi.analysis import CellState
    from ....kindapi.report import AnalysisResult

from .compute import analyse, compute_parts


def interim(run_dir: Path, request: AnalysisRequest) -> AnalysisResult | tuple[CellState, ...]:
    """What a [stop] rule looks at: the result of the records so far, written by nothing here
    (the look saves it once its record is in stop.json); no cell when there is nothing yet."""
    import dataclasses

    try:
        got = compute_parts(
            run_dir, baseline=request.baseline, boot=request.boot, seed=request.seed
        )
    except AnalysisError:  # nothing to look at yet
        return ()
    # a not-slower gate decides its cell for the rule: stop once it passes or fails
    cells = stop_cells(got.result.cells, got.rows, request.gates, got.endpoint, got.level)
    return dataclasses.replace(got.result, cells=cells)


def analyse_at_end(run_dir: Path, request: AnalysisRequest) -> EndAnalysis:

    try:
        done = analyse(run_dir, baseline=request.baseline, boot=request.boot, seed=request.seed)
    except AnalysisError as exc:
        return EndAnalysis(error=str(exc))
    gates = verdicts(request.gates, done.rows, done.endpoint, done.level, done.ratios)
    return EndAnalysis(
        table="\n".join(done.lines), report=done.report, headline=done.headline, gates=gates
    )
