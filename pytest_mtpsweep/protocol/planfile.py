"""plan.json: what a run will do, and whether a later invocation is the same run (--resume)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..ladder import Ladder, SessionSlot
from ..ladder.model import Preregistration


def identity(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a plan document that make two invocations the same run."""
    return {
        "ladder": doc.get("ladder"),
        "kind": doc.get("kind", "decode"),
        "treatments": doc.get("treatments"),
        "prompts": doc.get("prompts"),
        "sessions": [s.get("session") for s in doc.get("sessions") or []],
        **{f"keyed.{k}": v for k, v in (doc.get("keyed") or {}).items()},
    }


def differences(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """Names of the identity fields in which two plan documents differ (empty: the same run)."""
    a, b = identity(before), identity(now)
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def plan_document(
    *,
    run_id: str,
    ladder: Ladder,
    created_at: str,
    invocation: Sequence[str],
    version: str,
    server: Mapping[str, Any],
    keyed: Mapping[str, Any],
    prereg_sha256: str,
    reg: Preregistration,
    kind_fields: Mapping[str, Any],
    plan: Sequence[SessionSlot],
    planned: Mapping[str, int],
) -> dict[str, Any]:
    """plan.json: the ordered sessions, which were selected, the keyed fields, the analysis."""
    return {
        "run_id": run_id,
        "ladder": ladder.name,
        "kind": ladder.kind,
        "ladder_file": str(ladder.path),
        "question": ladder.question,
        "scope": reg.scope,
        "created_at": created_at,
        "invocation": list(invocation),
        "harness_version": version,
        **server,
        "note": ladder.note,
        "keyed": dict(keyed),
        "preregistration_sha256": prereg_sha256,
        "analysis": {
            "baseline": ladder.baseline,
            "margin_pct": ladder.analysis.margin_pct,
            "tiebreak_pp": ladder.analysis.tiebreak_pp,
            "primary_endpoint": ladder.analysis.primary_endpoint,
            "curtailment_sentence": reg.curtailment_sentence,
            "multiplicity": reg.multiplicity,
        },
        "treatments": [{"key": t.key, "args": list(t.args)} for t in ladder.treatments],
        **kind_fields,
        "sessions": [
            {
                "ordinal": s.ordinal,
                "treatment": s.treatment,
                "cycle": s.cycle,
                "session": s.name,
                "selected": s.name in planned,
                "measurements": planned.get(s.name, 0),
            }
            for s in plan
        ],
    }
