"""The decode kind's session-end analysis: the same function `mtpsweep analyse` runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ... import schema
from ...errors import AnalysisError, ExpectationError, OptionError
from ...ladder import Ladder
from ...options import AnalysisRequest
from .. import EndAnalysis
from .ladder import parse_contrast


def validate_request(ladder: Ladder, request: AnalysisRequest) -> None:
    """--baseline and --expect, checked against the ladder before the first server starts."""
    from ...analysis.gates import parse_expectation

    keys = ladder.treatment_keys
    baseline = request.baseline or ladder.baseline
    if baseline not in keys:
        raise OptionError(
            f"--baseline {baseline}: not a treatment of ladder {ladder.name}; use one of "
            f"{', '.join(keys)}."
        )
    for text in request.expect:
        try:
            gate = parse_expectation(text, treatments=keys)
        except ExpectationError as exc:
            raise OptionError(f"--expect {text}: {exc}") from None
        if gate.treatment == baseline:
            raise OptionError(
                f"--expect {text}: {gate.treatment} is the baseline itself; name a treatment "
                "to compare with it."
            )


def analyse_at_end(run_dir: Path, request: AnalysisRequest, ladder: Ladder) -> EndAnalysis:
    """Analyse what the run directory holds now; gates judged on the published decisions.

    Beside the pre-registered analysis, as the users kept them: each registered secondary
    contrast's baseline into analysis_vs_<baseline>/, and the interval basis into
    analysis_interval_basis/ (the tie-break's other endpoint, published whole).
    """
    from ...analysis import analyse_run, evaluate_expectations, headline_table

    if not any((run_dir / schema.RECORDS_DIR).glob("*.jsonl")):
        held = sorted(p.name for p in (run_dir / schema.QUARANTINE_DIR).glob("*") if p.is_dir())
        if held:
            return EndAnalysis(
                error=f"every session with records was quarantined ({', '.join(held)}), so "
                "there is nothing to analyse"
            )
        return EndAnalysis(error="no records were written, so there is nothing to analyse")
    try:
        result = analyse_run(
            [run_dir], baseline=request.baseline, boot=request.boot, seed=request.seed
        )
        failures = tuple(evaluate_expectations(result, list(request.expect)))
    except (AnalysisError, ExpectationError) as exc:
        return EndAnalysis(error=str(exc))
    out = Path(result.out_dir) if result.out_dir else None
    also = beside_the_primary(run_dir, request, ladder, result.settings.baseline)
    return EndAnalysis(
        table="\n".join([headline_table(result), *also]),
        report=out / "report.md" if out else None,
        gate_failures=failures,
    )


def beside_the_primary(
    run_dir: Path, request: AnalysisRequest, ladder: Ladder, baseline: str
) -> list[str]:
    """Run the registered secondary contrasts and the interval-basis analysis; one line each."""
    from ...analysis import analyse_run

    keys = ladder.treatment_keys
    secondary: dict[str, list[str]] = {}
    for text in ladder.prereg.secondary_contrasts:
        _, base = parse_contrast(text, keys, ladder.path)
        if base != baseline:
            secondary.setdefault(base, []).append(text)
    jobs: list[tuple[str, dict[str, Any]]] = [
        (f"secondary ({'; '.join(texts)})", {"baseline": base}) for base, texts in secondary.items()
    ]
    if ladder.analysis.primary_endpoint != "interval":
        jobs.append(("interval basis", {"baseline": baseline, "endpoint": "interval"}))
    lines = []
    for what, kwargs in jobs:
        try:
            done = analyse_run([run_dir], boot=request.boot, seed=request.seed, **kwargs)
            lines.append(f"{what}: {done.out_dir}")
        except AnalysisError as exc:
            lines.append(f"{what}: not analysed ({exc})")
    return lines
