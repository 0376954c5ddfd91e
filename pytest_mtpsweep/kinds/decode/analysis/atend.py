"""Decode's analysis inside a run: at session end (the pre-registered analysis, the
registered secondary contrasts and the interval basis beside it, the gates) and at each
[stop] look (the headline cells so far)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ....kindapi import AnalysisError, AnalysisRequest, EndAnalysis
from ....kindapi.ladder import Ladder
from ....kindapi.records import RunReader, recordlines
from ..report.sections import headline_table
from .devices import terminal_lines
from .gates import stop_cells
from .io import AnalyseOptions, analyse_run, load_run
from .pipeline import analyse, headline_cells
from .verdicts import cite, headline, judge

if TYPE_CHECKING:
    from ....kindapi.analysis import CellState


def analyse_at_end(
    run_dir: Path, request: AnalysisRequest, ladder: Ladder, calibration: Path | None = None
) -> EndAnalysis:
    """Analyse what the run directory holds now; gates judged on the published decisions.

    Beside the pre-registered analysis, as the users kept them: each registered secondary
    contrast's baseline into analysis_vs_<baseline>/, and the interval basis into
    analysis_interval_basis/ (the tie-break's other endpoint, published whole).
    """

    run = RunReader(run_dir)
    if not run.record_files():
        held = [h.session for h in run.quarantined()]
        if held:
            return EndAnalysis(
                error=f"every session with records was quarantined ({', '.join(held)}), so "
                "there is nothing to analyse"
            )
        return EndAnalysis(error="no records were written, so there is nothing to analyse")
    try:
        asked = AnalyseOptions(
            baseline=request.baseline, boot=request.boot, seed=request.seed, draw=True
        )
        result = analyse_run([run_dir], asked)
    except AnalysisError as exc:
        return EndAnalysis(error=str(exc))
    gates = tuple(cite(judge(result, g), calibration, run) for g in request.gates)
    out = Path(result.out_dir) if result.out_dir else None
    also = beside_the_primary(run_dir, request, ladder, result.settings.baseline)
    also = [*terminal_lines(result.per_device, result.settings.primary_endpoint), *also]
    if result.sweep is not None:
        from .sweep import terminal_lines as sweep_lines

        also = [*sweep_lines(result.sweep), *also]
    if result.unreadable:
        also.insert(0, recordlines.terminal(result.unreadable))
    return EndAnalysis(
        table="\n".join([headline_table(result), *also]),
        report=out / "report.md" if out else None,
        headline=headline(result),
        gates=gates,
    )


def interim(run_dir: Path, request: AnalysisRequest) -> tuple[CellState, ...]:
    """The headline cells a [stop] rule looks at: each treatment × prompt subset's published
    decision and 95 % half-width (percent) from the records so far, at this look's levels.

    The pooled row is not a headline cell: a gain on one subset and none on the other is an
    answer, and their average would keep the rule from ever being met.
    """

    result = analyse(
        [load_run(run_dir)], baseline=request.baseline, boot=request.boot, seed=request.seed
    )
    # A not-slower gate decides its cell for the rule: stop once it passes or fails.
    level = result.settings.equivalence_confidence
    return stop_cells(headline_cells(result), result.published, request.gates, level)


def beside_the_primary(
    run_dir: Path, request: AnalysisRequest, ladder: Ladder, baseline: str
) -> list[str]:
    """Run the registered secondary contrasts and the interval-basis analysis; one line each."""
    secondary: dict[str, list[str]] = {}
    for text in ladder.prereg.secondary_contrasts:
        _, base = ladder.contrast(text)
        if base != baseline:
            secondary.setdefault(base, []).append(text)
    asked = AnalyseOptions(boot=request.boot, seed=request.seed, draw=True)
    jobs = [
        (f"secondary ({'; '.join(texts)})", replace(asked, baseline=base))
        for base, texts in secondary.items()
    ]
    if ladder.analysis.primary_endpoint != "interval":
        jobs.append(("interval basis", replace(asked, baseline=baseline, endpoint="interval")))
    lines = []
    for what, options in jobs:
        try:
            done = analyse_run([run_dir], options)
            lines.append(f"{what}: {done.out_dir}")
        except AnalysisError as exc:
            lines.append(f"{what}: not analysed ({exc})")
    return lines
