"""The door's statistics: what a kind's analysis may call. The published interval and its
pieces (`analysis/stats.py`), decisions, a not-slower gate and a `[stop]` design's looks, a
gate's A/A calibration, planning from a pilot and its table. Imports numpy (and scipy where the
stats need it)."""

from __future__ import annotations

from ..analysis.calibration import Noise
from ..analysis.calibration_file import Calibration
from ..analysis.cellplan import CellPlan
from ..analysis.decision import Decision
from ..analysis.noninferiority import NonInferiority
from ..analysis.sequential import CellState, Design, LookState
from ..analysis.stats import (
    Resamples,
    Spread,
    row_quantiles,
    t_quantile,
    to_pct,
)
from ..base.constants import INTERVAL

__all__ = [  # noqa: RUF022 -- grouped as docs/architecture/10-front-door.md lists them
    # the published interval and its pieces
    "Spread",
    "INTERVAL",
    "Resamples",
    "row_quantiles",
    "t_quantile",
    "to_pct",
    # decisions, gates and looks
    "Decision",
    "NonInferiority",
    "Design",
    "CellState",
    "LookState",
    # a not-slower gate's A/A calibration
    "Calibration",
    "Noise",
    # planning from a pilot
    "CellPlan",
]
