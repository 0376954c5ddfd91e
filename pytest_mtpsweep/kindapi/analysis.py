"""The door's statistics: what a kind's analysis may call. The published interval and its
pieces (`analysis/stats.py`), a `[stop]` design's looks, a sweep's step-down and best set,
planning from a pilot and its table, the drafting mechanism's cost model. Imports numpy (and
scipy where the stats need it)."""

from __future__ import annotations

from ..analysis.calibration import (
    DEFAULT_AGE_DAYS,
    DEFAULT_REPS,
    MAX_REPS,
    MIN_REPS,
    Calibration,
    CellCalibration,
    Noise,
    cycles_to_resolve,
    false_alarms,
    noise_floor_pct,
    read_calibration,
    staleness,
)
from ..analysis.decision import Decision, interval_decision
from ..analysis.noninferiority import NonInferiority, decide
from ..analysis.planning import (
    CellPlan,
    cell_matrix,
    components,
    pilot_ratio,
    plan_by_cycle,
    plan_cell,
    plan_cells,
)
from ..analysis.planning_text import render
from ..analysis.sequential import CellState, Design, LookState, look_state
from ..analysis.stats import (
    BOOT_T_MAX_FACTOR,
    MIN_CYCLES_FOR_SESSION,
    MIN_PROMPTS_FOR_DECISION,
    PROMPTS_ONLY,
    WITH_SESSION,
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
from ..constants import MIN_BORROWED_DF
from ..gate import check_margin

__all__ = [  # noqa: RUF022 -- grouped by what a kind does, not sorted
    # the published interval and its pieces
    "MIN_BORROWED_DF",     "BOOT_T_MAX_FACTOR", "MIN_CYCLES_FOR_SESSION", "MIN_PROMPTS_FOR_DECISION",
    "PROMPTS_ONLY", "WITH_SESSION", "BootSummary", "FloatArray", "IntArray", "Resamples",
    "Spread", "check_resampling", "index_matrix",     "prompt_spread", "published_interval", "resample", "row_quantiles", "session_spread",     "summarise_resamples", "t_quantile", "to_pct",
    # a [stop] design's looks, and what a headline cell decides
    "Decision", "interval_decision", "CellState",
    # a not-slower gate and its A/A calibration
    "NonInferiority", "check_margin", "decide", "Design", "DEFAULT_AGE_DAYS",
    "DEFAULT_REPS", "MAX_REPS", "MIN_REPS", "Calibration", "CellCalibration", "Noise",
    "cycles_to_resolve", "false_alarms", "noise_floor_pct", "read_calibration", "staleness", "LookState", "look_state",
    # a sweep
            # speculative decoding as a mechanism (its cost model, per arm and subset)
        # planning from a pilot
    "CellPlan", "cell_matrix", "components", "pilot_ratio", "plan_by_cycle", "plan_cell", "plan_cells", "render",
]  # fmt: skip
