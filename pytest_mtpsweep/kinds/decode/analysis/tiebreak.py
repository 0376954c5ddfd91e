"""The endpoint tie-break: one published endpoint for the whole headline."""

from __future__ import annotations

import math
from collections.abc import Collection

import numpy as np
import pandas as pd

from .runvalues import ENDPOINTS, AnalysisSettings

# The server's clock (the interval endpoint) may be published only where it agrees with the
# client's within this many percentage points in every headline cell. Past it one of the two
# clocks is wrong, and only the client's is the harness's own: a server that claimed
# predicted_ms 1e-9 once published +1.46e12 % for a treatment the client measured at -13.5 %.
SERVER_CLOCK_AGREE_PP = 10.0


def _tiebreak_cell(
    prim: float, intv: float, registered: str, trigger: str | None, distrust: str | None
) -> tuple[str, str]:
    has_p, has_i = math.isfinite(prim), math.isfinite(intv)
    if not (has_p or has_i):
        return registered, f"neither endpoint has pairs; the registered {registered} row stands"
    if not has_i:
        return "primary", "interval basis has no pairs here, so the primary figure is published"
    if not has_p:
        return (
            "interval",
            "primary endpoint has no pairs here, so the interval-basis figure is published",
        )
    if distrust is not None:
        return "primary", f"{distrust}, so the client's primary figure is published headline-wide"
    if registered == "interval":
        return "interval", "interval basis is the pre-registered endpoint"
    if trigger is not None:
        return "interval", f"{trigger}, so the interval-basis figure is published headline-wide"
    return "primary", "endpoints agree within the tie-break in every cell, so the primary stands"


def apply_tiebreak(
    contrasts: pd.DataFrame,
    settings: AnalysisSettings,
    server_clocked: Collection[str] | None = None,
) -> pd.DataFrame:
    """Mark which endpoint is published per treatment × subset, with the reason.

    One endpoint for the whole headline: the pre-registered endpoint stands unless, in ANY
    treatment × subset cell, the two endpoints differ by more than the tie-break (percentage
    points); then every cell publishes the interval-basis figure. A cell where one endpoint
    lacks pairs still yields to the other there. Where they differ by more than
    SERVER_CLOCK_AGREE_PP in any cell, the server's clock is not trusted for the headline: the
    primary (client) figure is published in every cell that has one, whatever was registered.
    That distrust counts only cells whose interval figure rests on the server's clock: a cell
    whose treatment and baseline are both outside `server_clocked` (every interval rate from
    inter-chunk timing, the client's own clock) has two client clocks, and its divergence goes
    to the ordinary tie-break. `None`: every cell rests on the server's clock.
    """
    if contrasts.empty:
        return contrasts.assign(divergence_pp=[], published=[], published_reason=[])
    wide = contrasts.pivot(index=["treatment", "subset"], columns="endpoint", values="pct_change")
    wide = wide.reindex(columns=list(ENDPOINTS))
    prim = wide["primary"].to_numpy(dtype=np.float64)
    intv = wide["interval"].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        divergence = np.abs(prim - intv)
    over = np.isfinite(divergence) & (divergence > settings.tiebreak_pp)
    trigger = distrust = None

    def worst(mask: np.ndarray) -> str:  # the cell that differs most among `mask`'s
        at = int(np.nanargmax(np.where(mask, divergence, -1.0)))
        t, s = wide.index[at]
        return f"{t}/{s} endpoints differ by {divergence[at]:.2f} pp"

    if server_clocked is None:
        on_server = np.ones(len(wide.index), dtype=bool)
    else:
        clocked = set(server_clocked)
        on_server = np.array(
            [t in clocked or settings.baseline in clocked for t, _ in wide.index], dtype=bool
        )
    beyond = np.isfinite(divergence) & (divergence > SERVER_CLOCK_AGREE_PP) & on_server
    if beyond.any():
        distrust = (
            f"{worst(beyond)}, beyond the {SERVER_CLOCK_AGREE_PP:g} pp within which the "
            "server's clock may be preferred"
        )
    if over.any():
        trigger = f"{worst(over)} > {settings.tiebreak_pp:g} pp tie-break"
    choices = [
        _tiebreak_cell(p, i, settings.primary_endpoint, trigger, distrust)
        for p, i in zip(prim, intv, strict=True)
    ]
    decided = pd.DataFrame(
        {
            "divergence_pp": divergence,
            "chosen": [c[0] for c in choices],
            "published_reason": [c[1] for c in choices],
        },
        index=wide.index,
    ).reset_index()
    out = contrasts.drop(
        columns=["divergence_pp", "published", "published_reason"], errors="ignore"
    ).merge(decided, on=["treatment", "subset"], how="left")
    out["published"] = out["endpoint"] == out["chosen"]
    return out.drop(columns="chosen")
