"""The door's statistics: what a kind's analysis may call. The published interval and its
pieces (`analysis/stats.py`), decisions, a not-slower gate and a `[stop]` design's looks, a
gate's A/A calibration, planning from a pilot and its table. Imports numpy (and scipy where the
stats need it)."""

from __future__ import annotations

from ..analysis.calibration import (
    Calibration,
    CellCalibration,
    Noise,
    cycles_to_resolve,
    false_alarms,
    noise_floor_pct,
    read_calibration,
    staleness,
)
from ..analysis.decision import Decision
from ..analysis.noninferiority import NonInferiority
from ..analysis.planning import (
    CellPlan,
    components,
    pilot_ratio,
    plan_by_cycle,
    plan_cell,
)
from ..analysis.planning_text import render
from ..analysis.sequential import CellState, Design, LookState
from ..analysis.stats import (
    BootSummary,
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
    "BootSummary",
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
    "CellCalibration",
    "Noise",
    "noise_floor_pct",
    "cycles_to_resolve",
    "false_alarms",
    "read_calibration",
    "staleness",
    # planning from a pilot
    "CellPlan",
    "components",
    "pilot_ratio",
    "plan_cell",
    "plan_by_cycle",
    "render",
]
