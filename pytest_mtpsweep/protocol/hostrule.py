"""The host rule: a session the host spoiled is set aside and re-run once, not averaged in.

Pre-registered in `[host_rule]` (ladder/hostrule.py); the verdict is a pure function of the
session's host witnesses and calibration drift. A witness the host cannot give (no Linux PSI,
no server process of ours) is "not available" and its criterion is not applied.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base import schema
from ..ladder.values import HostRule
from ..state.plandoc import HostRulePlan

ENV = "MTPSWEEP_HOST_RULE"  # "off": the rule is not applied (the test suite's default)
# criterion -> (what it measures, its unit in the reason)
CRITERIA: dict[str, tuple[str, str]] = {
    "cpu_noise_pct": ("other processes used", "% of the CPU"),
    "memory_stall_pct": ("some task stalled on memory", "% of the session"),
    "cpu_stall_pct": ("some task waited for a CPU", "% of the session"),
    "major_faults": ("the server took", " major page faults"),
    "calibration_drift_pct": ("the calibration rate fell", "% from start to end"),
}


@dataclass(frozen=True)
class Verdict:
    """The rule's verdict on one session: why it was spoiled (None: it was not), what was
    checked, and what could not be (criterion -> why)."""

    spoiled: str | None
    checked: tuple[str, ...] = ()
    not_available: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "applied": True,
            "spoiled": self.spoiled,
            "checked": list(self.checked),
            "not_available": dict(self.not_available),
        }


def limit_text(value: float | int) -> str:
    """A threshold as the pre-registration and the reasons write it (1000000000, 12.5)."""
    return str(value) if isinstance(value, int) else f"{value:g}"


def off_reason(rule: HostRule, environ: Mapping[str, str]) -> str | None:
    """Why the rule is not applied in this run, or None when it is."""
    value = environ.get(ENV, "").strip()
    if value.lower() in ("off", "0", "false", "no"):
        return f"not applied: {ENV}={value} in the environment"
    if not rule.enabled:
        return "not applied: [host_rule] enabled = false in the ladder"
    return None


def witnesses(info: Mapping[str, Any]) -> dict[str, float | int | None]:
    """The rule's witnesses from a session file: host noise, PSI stalls, faults, drift."""
    host = info.get("host") or {}
    cal = info.get("calibration") or {}
    drift: Any = cal.get("drift_pct")
    return {
        "cpu_noise_pct": host.get("other_cpu_pct"),
        "memory_stall_pct": host.get("memory_stall_pct"),
        "cpu_stall_pct": host.get("cpu_stall_pct"),
        "major_faults": host.get("major_faults"),
        # Only a fall: a host slows a session down, while a drafter that learns from the first
        # calibration (n-gram drafters do) makes the second one faster, by +113 % in a demo run.
        "calibration_drift_pct": max(-float(drift), 0.0) if _number(drift) else None,
    }


def _number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def verdict(
    seen: Mapping[str, float | int | None],
    rule: HostRule,
    why_missing: Mapping[str, str] | None = None,
) -> Verdict:
    """Spoiled when a witness is strictly over its threshold; a missing witness is not
    available (`why_missing` may say why) and its criterion is not applied."""
    why_missing = why_missing or {}
    over, checked, missing = [], [], {}
    for name, limit in rule.thresholds().items():
        value = seen.get(name)
        if not _number(value):
            missing[name] = why_missing.get(name) or "not available: not recorded this session"
            continue
        assert value is not None
        checked.append(name)
        if value > limit:
            what, unit = CRITERIA[name]
            shown = f"{value:.0f}" if name == "major_faults" else f"{value:.1f}"
            over.append(f"{what} {shown}{unit} (over {name} {limit_text(limit)})")
    spoiled = f"{schema.HOST_SPOILED}: {'; '.join(over)}" if over else None
    return Verdict(spoiled, tuple(checked), missing)


def judge(info: Mapping[str, Any], rule: HostRule, off: str | None) -> dict[str, Any]:
    """The session file's `host_rule` entry: the verdict, or why the rule was not applied."""
    if off is not None:
        return {"applied": False, "why": off, "spoiled": None}
    host = info.get("host") or {}
    missing = dict(host.get("not_available") or {})
    if (info.get("calibration") or {}).get("drift_pct") is None:
        missing["calibration_drift_pct"] = "not available: no start and end calibration"
    if not host:
        missing = {
            name: "not available: the session recorded no host witnesses" for name in CRITERIA
        }
    return verdict(witnesses(info), rule, missing).to_json()


def plan_entry(rule: HostRule, off: str | None) -> HostRulePlan:
    """plan.json's `host_rule`: the thresholds, and whether the run applies them."""
    return HostRulePlan(rule.enabled, off is None, off or "", dict(rule.thresholds()))


def prereg_lines(rule: HostRule, off: str | None) -> list[str]:
    """preregistration.md's section on the rule."""
    head = ["## Host rule", ""]
    if off is not None:
        return [*head, f"The host rule is {off}; no session is set aside for the host.", ""]
    items = [f"- {name} > {limit_text(limit)}" for name, limit in rule.thresholds().items()]
    return [
        *head,
        "A session is spoiled by the host, set aside (quarantined with its reason) and re-run "
        "once from a fresh server if the schedule has time, when any of these is over its "
        "threshold: other processes' share of all cores (cpu_noise_pct), the % of the session "
        "some task stalled on memory or waited for a CPU (Linux PSI, memory_stall_pct, "
        "cpu_stall_pct), the server's major page faults (major_faults), the calibration's "
        "fall from start to end (calibration_drift_pct; a rise is a drafter learning, not the host):",
        "",
        *items,
        "",
        "A witness the host cannot give is not available and its criterion is not applied "
        "(the session file says so). A re-run spoiled too, or a spoiled session without time "
        "for a re-run, is kept and flagged host_spoiled; the report says so.",
        "",
    ]
