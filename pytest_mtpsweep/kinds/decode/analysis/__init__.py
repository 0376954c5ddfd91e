"""The decode kind's analysis: at session end, `mtpsweep analyse` and `mtpsweep compare` of its
run directories (`io.analyse_run`: the outputs, and report.md and report.html from one report
model, `report.report_model`, with the pictures drawn from the records).

The package's modules: `io.py` is the only edge (reads a run through `state.runread`, writes the
outputs); `pipeline.py` is the whole analysis as one pure function over the rest."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....kindapi import (
    EXIT_GATE_FAILED,
    EXIT_OK,
    AnalysisError,
    AnalysisRequest,
    EndAnalysis,
    ExpectationError,
    GateFigures,
    GateVerdict,
    OptionError,
)
from ....kindapi.ladder import Ladder, parse_contrast
from ....kindapi.records import RunReader, terminal

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from ....kindapi.analysis import CellState
    from ....kindapi.records import PlanDoc
    from .model import DecodeAnalysis


def validate_request(
    ladder: Ladder, request: AnalysisRequest, calibration: Path | None = None
) -> None:
    """--baseline, --expect and --gate-calibration, checked against the ladder before the
    first server starts (the calibration's model is checked again at the end, on the run's)."""
    from .gates import parse_expectation

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
    _check_calibration(request, calibration)


def _check_calibration(request: AnalysisRequest, calibration: Path | None) -> None:
    """A cited calibration speaks for this host, is fresh, and its floor is within each
    not-slower gate's margin: refused in one sentence before anything starts."""
    if calibration is None:
        return
    from ..calibrate import check_cited
    from .gates import parse_expectation

    margins = [g.margin_pct for g in map(parse_expectation, request.expect) if g.margin_pct]
    if not margins:
        raise OptionError(
            f"--gate-calibration {calibration}: no --expect TREATMENT:SUBSET:not-slower:M gate "
            "cites it; add one or drop --gate-calibration."
        )
    why = check_cited(calibration, margin_pct=min(margins), model_sha256=None)
    if why:
        raise OptionError(f"--gate-calibration: {why}.")


def analyse_run(run_dirs: Sequence[Path], **settings: Any) -> DecodeAnalysis:
    """The analysis package's analyse_run, its page with the pictures drawn from the records."""
    from .io import analyse_run as analysed

    return analysed(run_dirs, draw=True, **settings)


def analyse_at_end(
    run_dir: Path, request: AnalysisRequest, ladder: Ladder, calibration: Path | None = None
) -> EndAnalysis:
    """Analyse what the run directory holds now; gates judged on the published decisions.

    Beside the pre-registered analysis, as the users kept them: each registered secondary
    contrast's baseline into analysis_vs_<baseline>/, and the interval basis into
    analysis_interval_basis/ (the tie-break's other endpoint, published whole).
    """
    from ..report.sections import headline_table
    from .devices import terminal_lines

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
        result = analyse_run(
            [run_dir], baseline=request.baseline, boot=request.boot, seed=request.seed
        )
    except AnalysisError as exc:
        return EndAnalysis(error=str(exc))
    gates = tuple(cite(judge(result, e), calibration, run) for e in request.expect)
    out = Path(result.out_dir) if result.out_dir else None
    also = beside_the_primary(run_dir, request, ladder, result.settings.baseline)
    also = [*terminal_lines(result.per_device, result.settings.primary_endpoint), *also]
    if result.sweep is not None:
        from .sweep import terminal_lines as sweep_lines

        also = [*sweep_lines(result.sweep), *also]
    if result.unreadable:
        also.insert(0, terminal(result.unreadable))
    return EndAnalysis(
        table="\n".join([headline_table(result), *also]),
        report=out / "report.md" if out else None,
        gate_failures=tuple(g.detail for g in gates if not g.met),
        headline=headline(result),
        gates=gates,
    )


def interim(run_dir: Path, request: AnalysisRequest) -> tuple[CellState, ...]:
    """The headline cells a [stop] rule looks at: each treatment × prompt subset's published
    decision and 95 % half-width (percent) from the records so far, at this look's levels.

    The pooled row is not a headline cell: a gain on one subset and none on the other is an
    answer, and their average would keep the rule from ever being met.
    """
    from .gates import parse_expectation, stop_cells
    from .io import load_run
    from .pipeline import analyse, headline_cells

    result = analyse([load_run(run_dir)], baseline=request.baseline, boot=request.boot,
                     seed=request.seed)  # fmt: skip
    # A not-slower gate decides its cell for the rule: stop once it passes or fails.
    gates = [parse_expectation(e) for e in request.expect]
    level = result.settings.equivalence_confidence
    return stop_cells(headline_cells(result), result.published, gates, level)


def beside_the_primary(
    run_dir: Path, request: AnalysisRequest, ladder: Ladder, baseline: str
) -> list[str]:
    """Run the registered secondary contrasts and the interval-basis analysis; one line each."""
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


def judge(result: DecodeAnalysis, expectation: str) -> GateVerdict:
    """One gate on the published decisions: met, or the line saying why not; with its
    estimate and interval where the run has its row."""
    import dataclasses

    from .gates import evaluate_expectations

    try:
        failures = evaluate_expectations(result, [expectation])
    except ExpectationError as exc:
        return GateVerdict(expectation, False, f"{expectation} not met: {exc}")
    figures = _figures(result, expectation)
    if failures:
        return GateVerdict(expectation, False, failures[0], figures)
    from .gates import judge_margin, parse_expectation

    gate = parse_expectation(expectation)
    if gate.margin_pct is not None:  # its sentence holds the interval and the margin
        row = result.published.set_index(["treatment", "subset"]).loc[(gate.treatment, gate.subset)]
        level = result.settings.equivalence_confidence
        said = judge_margin(row, gate.margin_pct, final=True, level=level).sentence
        return GateVerdict(expectation, True, f"{expectation} met: {said}", figures)
    line = _published(result).get((gate.treatment, gate.subset), "")
    verdict = GateVerdict(expectation, True, f"{expectation} met: {line}".rstrip(": "))
    return dataclasses.replace(verdict, figures=figures)


def _figures(result: DecodeAnalysis, expectation: str) -> GateFigures | None:
    """The published row's estimate and interval for a gate's cell: the 90 % one a not-slower
    gate is judged on, the 95 % one for the others; None where the run has no such row."""
    from .gates import parse_expectation

    gate = parse_expectation(expectation)
    rows = result.published.set_index(["treatment", "subset"])
    if (gate.treatment, gate.subset) not in rows.index:
        return None
    row = rows.loc[(gate.treatment, gate.subset)]
    s = result.settings
    low, high, level = (
        ("ci90_low", "ci90_high", s.equivalence_confidence)
        if gate.margin_pct is not None
        else ("ci_low", "ci_high", s.confidence)
    )
    return GateFigures(
        metric=str(row["endpoint"]), estimate_pct=float(row["pct_change"]),
        lower_pct=float(row[low]), upper_pct=float(row[high]), confidence=level,
        margin_pct=gate.margin_pct,
    )  # fmt: skip


def cite(verdict: GateVerdict, calibration: Path | None, run: RunReader) -> GateVerdict:
    """A not-slower gate with the calibration it cites: failed when the calibration no longer
    speaks for this run (host, model, age, margin), else its noise floor and false alarms
    added to the message."""
    from .gates import parse_expectation

    if calibration is None:
        return verdict
    gate = parse_expectation(verdict.expectation)
    if gate.margin_pct is None:
        return verdict
    import json

    from ....kindapi.analysis import Calibration
    from ..calibrate import check_cited

    keyed = run.plan.keyed
    sha = keyed.get("model_sha256")
    why = check_cited(calibration, margin_pct=gate.margin_pct,
                      model_sha256=str(sha) if sha else None)  # fmt: skip
    if why:
        return GateVerdict(verdict.expectation, False, f"{verdict.expectation} not met: {why}",
                           verdict.figures)  # fmt: skip
    # the typed file (check_cited has read and checked it), not raw keys that may be missing
    cal = Calibration.from_json(
        json.loads(calibration.read_text(encoding="utf-8")), str(calibration)
    )
    rates = [c.false_alarm for c in cal.cells if c.cell.endswith(f":{gate.subset}")]
    said = f"; calibrated by {calibration}: noise floor {cal.noise_floor_pct:.2f} %"
    if rates:
        r = rates[0]
        said += (f", A/A false alarms {100 * r.rate:.1f} % "
                 f"[{100 * r.low:.1f}, {100 * r.high:.1f}]")  # fmt: skip
    return GateVerdict(verdict.expectation, verdict.met, verdict.detail + said, verdict.figures)


def _published(result: DecodeAnalysis) -> dict[tuple[str, str], str]:
    """Each published contrast as one line: `+86.1 % [95% CI +54.0, +111.2] faster (...)`."""
    out: dict[tuple[str, str], str] = {}
    for r in result.published.to_dict(orient="records"):
        change = "n/a" if pd_isna(r["pct_change"]) else f"{r['pct_change']:+.1f} %"
        ci = (
            ""
            if pd_isna(r["ci_low"]) or pd_isna(r["ci_high"])
            else f" [95% CI {r['ci_low']:+.1f}, {r['ci_high']:+.1f}]"
        )
        out[(str(r["treatment"]), str(r["subset"]))] = (
            f"{change}{ci} {r['decision']} ({r['endpoint']} endpoint, "
            f"{int(r['n_prompts'])} prompts, {int(r['n_pairs'])} pairs)"
        )
    return out


def headline(result: DecodeAnalysis) -> dict[str, str]:
    """The published contrasts for JUnit's suite <properties>: `mtpsweep.<treatment>:<subset>`,
    each with the drafting mechanism's sentence where the treatment drafted (report.md's)."""
    from ..report.mechanism import sentences

    baseline, why = result.settings.baseline, sentences(result)
    return {
        f"mtpsweep.{treatment}:{subset}": f"vs {baseline}: {line}"
        + (f"; {why[(treatment, subset)]}" if (treatment, subset) in why else "")
        for (treatment, subset), line in _published(result).items()
    }


def pd_isna(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def analyse_command(
    args: argparse.Namespace, runs: Sequence[Path], plans: Sequence[PlanDoc]
) -> int:
    """`mtpsweep analyse RUN...` of decode runs: the published contrasts, then each --expect
    gate (exit 1 when one is not met)."""
    from ..report.sections import headline_table
    from .gates import evaluate_expectations, parse_expectation

    gates = [parse_expectation(text) for text in args.expect]
    result = analyse_run(
        list(runs),
        baseline=args.baseline,
        boot=args.boot,
        seed=args.boot_seed,
        out=Path(args.out) if args.out else None,
        pool=args.pool,
        endpoint=args.endpoint,
    )
    print(headline_table(result))
    if result.unreadable:
        print(terminal(result.unreadable))
    print(f"outputs: {result.out_dir}")
    if not gates:
        return EXIT_OK
    failures = evaluate_expectations(result, gates)
    for gate in gates:
        if not any(f.startswith(f"{gate} ") for f in failures):
            print(f"gate met: {gate}")
    for failure in failures:
        print(f"gate FAILED: {failure}", file=sys.stderr)
    return EXIT_GATE_FAILED if failures else EXIT_OK


def compare_command(args: argparse.Namespace, runs: Sequence[Path]) -> int:
    """`mtpsweep compare RUN_A RUN_B` of decode runs: each run analysed on its own, their
    published contrasts side by side, never pooled; nothing is written."""
    from .compare import compare_table
    from .io import load_and_analyse

    results = [
        load_and_analyse([run], baseline=args.baseline, boot=args.boot, seed=args.boot_seed)
        for run in runs
    ]
    print(compare_table(results))
    for run, result in zip(runs, results, strict=True):
        if result.unreadable:  # left out of that run's contrasts: say so beside the table
            print(f"{run}: {terminal(result.unreadable)}")
    return EXIT_OK


if TYPE_CHECKING:  # the parts the kind's declaration names here, typed by the door
    from ....kindapi import AnalyseFn, CompareFn, InterimFn

    _analyse_command: AnalyseFn = analyse_command
    _interim: InterimFn = interim
    _compare_command: CompareFn = compare_command
