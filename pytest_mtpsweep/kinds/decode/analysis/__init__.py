"""The decode kind's analysis: at session end, `mtpsweep analyse` and `mtpsweep compare` of its
run directories (`io.analyse_run`: the outputs, and report.md and report.html from one report
model, `report.report_model`, with the pictures drawn from the records).

The package's modules: `io.py` is the only edge (reads a run through `state.runread`, writes the
outputs); `pipeline.py` is the whole analysis as one pure function over the rest."""

from __future__ import annotations

import dataclasses
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
    Gate,
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
    keys = ladder.treatment_keys
    baseline = request.baseline or ladder.baseline
    if baseline not in keys:
        raise OptionError(
            f"--baseline {baseline}: not a treatment of ladder {ladder.name}; use one of "
            f"{', '.join(keys)}."
        )
    for gate in request.gates:
        if gate.treatment not in keys:
            raise OptionError(
                f"--expect {gate}: expectation {gate.text!r} names unknown treatment "
                f"{gate.treatment!r}; use one of {', '.join(sorted(keys))}."
            )
        if gate.treatment == baseline:
            raise OptionError(
                f"--expect {gate}: {gate.treatment} is the baseline itself; name a treatment "
                "to compare with it."
            )
    _check_calibration(request, calibration, ladder)


def _check_calibration(request: AnalysisRequest, calibration: Path | None, ladder: Ladder) -> None:
    """A cited calibration speaks for this host, is fresh, and its floor is within each
    not-slower gate's margin: refused in one sentence before anything starts."""
    if calibration is None:
        return
    from ..calibrate import check_cited

    margins = [g.margin for g in request.gates if g.margin is not None]
    if not margins:
        raise OptionError(
            f"--gate-calibration {calibration}: no --expect TREATMENT:SUBSET:not-slower:M gate "
            "cites it; add one or drop --gate-calibration."
        )
    model = getattr(ladder, "model_id", None)  # the run's model, checked again at the end
    why = check_cited(calibration, margin_pct=min(margins), model_sha256=None,
                      model_id=model if isinstance(model, str) and model else None)  # fmt: skip
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
    gates = tuple(cite(judge(result, g), calibration, run) for g in request.gates)
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
        headline=headline(result),
        gates=gates,
    )


def interim(run_dir: Path, request: AnalysisRequest) -> tuple[CellState, ...]:
    """The headline cells a [stop] rule looks at: each treatment × prompt subset's published
    decision and 95 % half-width (percent) from the records so far, at this look's levels.

    The pooled row is not a headline cell: a gain on one subset and none on the other is an
    answer, and their average would keep the rule from ever being met.
    """
    from .gates import stop_cells
    from .io import load_run
    from .pipeline import analyse, headline_cells

    result = analyse([load_run(run_dir)], baseline=request.baseline, boot=request.boot,
                     seed=request.seed)  # fmt: skip
    # A not-slower gate decides its cell for the rule: stop once it passes or fails.
    level = result.settings.equivalence_confidence
    return stop_cells(headline_cells(result), result.published, request.gates, level)


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


def judge(result: DecodeAnalysis, gate: Gate) -> GateVerdict:
    """One gate on the published decisions; one that cannot be judged at all (a treatment the
    run never had) fails with the sentence why."""
    from .gates import judge as judged

    try:
        return judged(result, gate)
    except ExpectationError as exc:
        return GateVerdict.of(gate, False, f"{gate} not met: {exc}")


def cite(verdict: GateVerdict, calibration: Path | None, run: RunReader) -> GateVerdict:
    """A not-slower gate with the calibration it cites: failed when the calibration no longer
    speaks for this run (host, model, age, margin), else its noise floor and false alarms
    added to the message."""
    gate = verdict.gate
    if calibration is None or gate.margin is None:
        return verdict
    from ....kindapi.analysis import read_calibration
    from ..calibrate import check_cited

    keyed = run.plan.keyed
    sha, model = keyed.get("model_sha256"), keyed.get("model_id")
    why = check_cited(calibration, margin_pct=gate.margin,
                      model_sha256=str(sha) if sha else None,
                      model_id=str(model) if model else None)  # fmt: skip
    if why:
        return GateVerdict.of(gate, False, f"{gate} not met: {why}", verdict.figures)
    # the typed file (check_cited has read and checked it), not raw keys that may be missing
    cal = read_calibration(calibration)
    rates = [c.false_alarm for c in cal.cells if c.cell.endswith(f":{gate.cell}")]
    said = f"; calibrated by {calibration}: noise floor {cal.noise_floor_pct:.2f} %"
    if rates:
        r = rates[0]
        said += (f", A/A false alarms {100 * r.rate:.1f} % "
                 f"[{100 * r.low:.1f}, {100 * r.high:.1f}]")  # fmt: skip
    return dataclasses.replace(verdict, sentence=verdict.sentence + said)


def _published(result: DecodeAnalysis) -> dict[tuple[str, str], str]:
    """Each published contrast as one line: `+86.1 % [95% CI +54.0, +111.2] faster (...)`."""
    from .gates import published_line

    return {
        (str(r["treatment"]), str(r["subset"])): published_line(r)
        for r in result.published.to_dict(orient="records")
    }


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
    from .gates import check_treatment
    from .gates import judge as judged

    gates: tuple[Gate, ...] = getattr(args, "gates", ())

    def judgeable(result: DecodeAnalysis) -> None:  # refused before anything is written
        for gate in gates:
            check_treatment(gate, result.known_treatments, result.settings.baseline)

    result = analyse_run(
        list(runs),
        baseline=args.baseline,
        boot=args.boot,
        seed=args.boot_seed,
        out=Path(args.out) if args.out else None,
        pool=args.pool,
        endpoint=args.endpoint,
        check=judgeable,
    )
    print(headline_table(result))
    if result.unreadable:
        print(terminal(result.unreadable))
    print(f"outputs: {result.out_dir}")
    verdicts = [judged(result, gate) for gate in gates]
    for v in verdicts:
        if v.passed:
            print(f"gate met: {v.gate}")
    for v in verdicts:
        if not v.passed:
            print(f"gate FAILED: {v.sentence}", file=sys.stderr)
    return EXIT_OK if all(v.passed for v in verdicts) else EXIT_GATE_FAILED


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
