"""`[host_rule]`: the pre-registered thresholds above which the host spoiled a session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base.errors import LadderError
from .fields import Spec
from .values import HostRule

HOST_RULE: Spec = {
    "enabled": (bool, False),
    "cpu_noise_pct": ((int, float), False),
    "memory_stall_pct": ((int, float), False),
    "cpu_stall_pct": ((int, float), False),
    "major_faults": (int, False),
    "calibration_drift_pct": ((int, float), False),
}
MAX_MAJOR_FAULTS = 10**9
MAX_DRIFT_PCT = 100.0  # a fall: the rate cannot fall by more than all of it
# field -> (highest allowed value, what the number is: the fix names it)
BOUNDS: dict[str, tuple[float, str]] = {
    "cpu_noise_pct": (100.0, "% of all cores other processes used"),
    "memory_stall_pct": (100.0, "% of the session's wall time some task stalled on memory"),
    "cpu_stall_pct": (100.0, "% of the session's wall time some task waited for a CPU"),
    "major_faults": (MAX_MAJOR_FAULTS, "the server's major page faults in the session"),
    "calibration_drift_pct": (MAX_DRIFT_PCT, "% the calibration rate fell, start to end"),
}


def parse(raw: dict[str, Any], path: Path | str, cpu_noise_pct: float) -> HostRule:
    """The table (types already checked by `check_table`), each threshold within its bounds;
    `cpu_noise_pct` defaults to the ladder's `[preflight] host_noise_pct`."""
    values: dict[str, Any] = {"cpu_noise_pct": cpu_noise_pct, **raw}
    for name, (top, what) in BOUNDS.items():
        value = raw.get(name)
        if value is not None and not (0 <= value <= top):
            raise LadderError(
                f"{path}: field host_rule.{name} is {value!r}; use {what}, from 0 to {top:g}."
            )
    defaults = HostRule()
    return HostRule(
        enabled=values.get("enabled", True),
        cpu_noise_pct=float(values["cpu_noise_pct"]),
        memory_stall_pct=float(values.get("memory_stall_pct", defaults.memory_stall_pct)),
        cpu_stall_pct=float(values.get("cpu_stall_pct", defaults.cpu_stall_pct)),
        major_faults=int(values.get("major_faults", defaults.major_faults)),
        calibration_drift_pct=float(
            values.get("calibration_drift_pct", defaults.calibration_drift_pct)
        ),
    )


def busy_host_warning(rule: HostRule) -> str | None:
    """Lint's line when the ladder's rule lets a busy host through: preflight's host_quiet, the
    in-session stop and the re-run's check read these same thresholds."""
    if not rule.enabled:
        return (
            "[host_rule] enabled = false: a busy host is not refused before the run (preflight "
            "host_quiet is skipped), a session gone slow on one is not stopped, and none is set "
            "aside after; every session is averaged in whatever the host did."
        )
    if rule.cpu_noise_pct >= BOUNDS["cpu_noise_pct"][0] and rule.cpu_stall_pct >= 100.0:
        return (
            "[host_rule] cpu_noise_pct and cpu_stall_pct are both 100: no CPU load can refuse a "
            "busy host before the run or stop a session on one; lower either to have it refused."
        )
    return None
