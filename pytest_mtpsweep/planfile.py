"""plan.json: what a run will do, and whether a later invocation is the same run (--resume)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def identity(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a plan document that make two invocations the same run."""
    return {
        "ladder": doc.get("ladder"),
        "treatments": doc.get("treatments"),
        "prompts": doc.get("prompts"),
        "sessions": [s.get("session") for s in doc.get("sessions") or []],
        **{f"keyed.{k}": v for k, v in (doc.get("keyed") or {}).items()},
    }


def differences(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """Names of the identity fields in which two plan documents differ (empty: the same run)."""
    a, b = identity(before), identity(now)
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
