"""The decode kind's session-end analysis: the same function `mtpsweep analyse` runs."""

from __future__ import annotations

from pathlib import Path

from ... import schema
from ...errors import AnalysisError, ExpectationError, OptionError
from ...ladder import Ladder
from ...options import AnalysisRequest
from .. import EndAnalysis


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


def analyse_at_end(run_dir: Path, request: AnalysisRequest) -> EndAnalysis:
    """Analyse what the run directory holds now; gates judged on the published decisions."""
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
    return EndAnalysis(
        table=headline_table(result),
        report=out / "report.md" if out else None,
        gate_failures=failures,
    )
