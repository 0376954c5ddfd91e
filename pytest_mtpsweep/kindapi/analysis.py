"""The door's statistics: what a kind's analysis may call. The published interval and its
pieces (`analysis/stats.py`), decisions, a not-slower gate and a `[stop]` design's looks, a
gate's A/A calibration, planning from a pilot and its table. Imports numpy (and scipy where the
stats need it)."""

from __future__ import annotations

from ..analysis.calibration import Noise
from ..analysis.calibration_file import Calibration
from ..analysis.cellplan import CellPlan
from ..analysis.decision import Decision
from ..analysis.noninferiority import NonInferiority, decide
from ..analysis.sequential import CellState, Design, LookState, look_state
from ..analysis.stats import (
    BootSummary,
    FloatArray,
    IntArray,
    Resamples,
    Spread,
    check_resampling,
    index_matrix,
    prompt_spread,
    published_interval,
    resample,
    row_quantiles,
    session_spread,
    summarise_resamples,
    t_quantile,
    to_pct,
)
from ..base.constants import INTERVAL
from ..wishes.gate import check_margin

__all__ = [  # noqa: RUF022 -- grouped as docs/architecture/10-front-door.md lists them
    # the published interval and its pieces
    "FloatArray",
    "IntArray",
    "Spread",
    "INTERVAL",
    "check_resampling",
    "index_matrix",
    "Resamples",
    "BootSummary",
    "resample",
    "summarise_resamples",
    "row_quantiles",
    "prompt_spread",
    "session_spread",
    "published_interval",
    "t_quantile",
    "to_pct",
    # decisions, gates and looks
    "Decision",
    "NonInferiority",
    "decide",
    "check_margin",
    "Design",
    "CellState",
    "LookState",
    "look_state",
    # a not-slower gate's A/A calibration
    "Calibration",
    "Noise",
    # planning from a pilot
    "CellPlan",
]
