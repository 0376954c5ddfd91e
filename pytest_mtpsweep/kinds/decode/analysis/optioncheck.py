"""Decode's options checked against the ladder before the first server starts: --baseline,
--expect and --gate-calibration (the calibration's model is checked again at the end)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....kindapi import AnalysisRequest, OptionError
from ..calibrate import check_cited

if TYPE_CHECKING:
    from pathlib import Path

    from ....kindapi.ladder import Ladder


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

    margins = [g.margin for g in request.gates if g.margin is not None]
    if not margins:
        raise OptionError(
            f"--gate-calibration {calibration}: no --expect TREATMENT:SUBSET:not-slower:M gate "
            "cites it; add one or drop --gate-calibration."
        )
    model = getattr(ladder, "model_id", None)  # the run's model, checked again at the end
    why = check_cited(
        calibration,
        margin_pct=min(margins),
        model_sha256=None,
        model_id=model if isinstance(model, str) and model else None,
    )
    if why:
        raise OptionError(f"--gate-calibration: {why}.")
