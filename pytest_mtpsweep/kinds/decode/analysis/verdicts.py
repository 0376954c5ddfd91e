"""Decode's gates judged: one `--expect` gate on the published decisions, a cited calibration
added to it, and the published contrasts as JUnit's suite properties."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ....kindapi import ExpectationError, Gate, GateVerdict
from ....kindapi.analysis import Calibration
from ..calibrate import check_cited
from ..report.whysection import sentences
from .gates import judge as judged
from .gates import published_line

if TYPE_CHECKING:
    from pathlib import Path

    from ....kindapi.records import RunReader
    from .runvalues import DecodeAnalysis


def judge(result: DecodeAnalysis, gate: Gate) -> GateVerdict:
    """One gate on the published decisions; one that cannot be judged at all (a treatment the
    run never had) fails with the sentence why."""

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

    keyed = run.plan.keyed
    sha, model = keyed.get("model_sha256"), keyed.get("model_id")
    why = check_cited(
        calibration,
        margin_pct=gate.margin,
        model_sha256=str(sha) if sha else None,
        model_id=str(model) if model else None,
    )
    if why:
        return GateVerdict.of(gate, False, f"{gate} not met: {why}", verdict.figures)
    # the typed file (check_cited has read and checked it), not raw keys that may be missing
    cal = Calibration.read(calibration)
    rates = [c.false_alarm for c in cal.cells if c.cell.endswith(f":{gate.cell}")]
    said = f"; calibrated by {calibration}: noise floor {cal.noise_floor_pct:.2f} %"
    if rates:
        r = rates[0]
        said += f", A/A false alarms {100 * r.rate:.1f} % [{100 * r.low:.1f}, {100 * r.high:.1f}]"
    return dataclasses.replace(verdict, sentence=verdict.sentence + said)


def _published(result: DecodeAnalysis) -> dict[tuple[str, str], str]:
    """Each published contrast as one line: `+86.1 % [95% CI +54.0, +111.2] faster (...)`."""

    return {
        (str(r["treatment"]), str(r["subset"])): published_line(r)
        for r in result.published.to_dict(orient="records")
    }


def headline(result: DecodeAnalysis) -> dict[str, str]:
    """The published contrasts for JUnit's suite <properties>: `mtpsweep.<treatment>:<subset>`,
    each with the drafting mechanism's sentence where the treatment drafted (report.md's)."""

    baseline, why = result.settings.baseline, sentences(result)
    return {
        f"mtpsweep.{treatment}:{subset}": f"vs {baseline}: {line}"
        + (f"; {why[(treatment, subset)]}" if (treatment, subset) in why else "")
        for (treatment, subset), line in _published(result).items()
    }
