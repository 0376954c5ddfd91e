"""Session-scoped checks that run once, before any server starts.

Every item records what was expected, what was observed and a verdict (pass, fail, skip or
waived). A failing item stops the run unless the user waives it by name.
"""

from __future__ import annotations

from .checklist import PreflightInputs, item_names, run_preflight
from .endpoints import AttachedTarget
from .items import (
    FAIL,
    PASS,
    SKIP,
    WAIVED,
    PreflightItem,
    failures,
    render_fixes,
    render_table,
    write_preflight_json,
)
from .quiet import ITEM as HOST_QUIET
from .quiet import QuietCheck
from .serverrun import ITEM as SERVER_RUNS

__all__ = [
    "FAIL",
    "HOST_QUIET",
    "PASS",
    "SERVER_RUNS",
    "SKIP",
    "WAIVED",
    "AttachedTarget",
    "PreflightInputs",
    "PreflightItem",
    "QuietCheck",
    "failures",
    "item_names",
    "render_fixes",
    "render_table",
    "run_preflight",
    "write_preflight_json",
]
