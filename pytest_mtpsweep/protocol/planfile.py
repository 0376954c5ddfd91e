"""plan.json: what a run will do, and whether a later invocation is the same run (--resume)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..ladder import Ladder, SessionSlot
from ..ladder.model import Preregistration


def identity(doc: Mapping[str, Any], kind_fields: Sequence[str] = ()) -> dict[str, Any]:
    """The parts of a plan document that make two invocations the same run: the protocol's,
    the keyed fields, and the fields the kind names (`Kind.resume_fields`)."""
    return {
        "ladder": doc.get("ladder"),
        "kind": doc.get("kind"),
        "treatments": doc.get("treatments"),
        "stop": doc.get("stop"),
        "host_rule": doc.get("host_rule"),
        **{name: doc.get(name) for name in kind_fields},
        "sessions": [s.get("session") for s in doc.get("sessions") or []],
        **{f"keyed.{k}": v for k, v in (doc.get("keyed") or {}).items()},
    }


def differences(
    before: Mapping[str, Any],
    now: Mapping[str, Any],
    kind_fields: Sequence[str] = (),
    default_kind: str | None = None,
) -> list[str]:
    """Names of the identity fields in which two plan documents differ (empty: the same run).

    `default_kind` is the kind of a plan written before plan.json named its kind."""
    a, b = identity(before, kind_fields), identity(now, kind_fields)
    a["kind"] = a["kind"] or default_kind
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
    stop: Mapping[str, Any] | None = None,
    host_rule: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """plan.json: the ordered sessions, which were selected, the keyed fields, the analysis.

    The kind's fields follow the protocol's; an `analysis` entry among them is merged into the
    analysis block (the kind's own settings, between the baseline and the pre-registration)."""
    own = dict(kind_fields)
    kind_analysis = own.pop("analysis", {})
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
            **kind_analysis,
            "curtailment_sentence": reg.curtailment_sentence,
            "multiplicity": reg.multiplicity,
        },
        "treatments": [
            {
                "key": t.key,
                "args": list(t.args),
                **({"server": t.own_server} if t.own_server else {}),
            }
            for t in ladder.treatments
        ],
        **own,
        **({"sweep": ladder.sweep.document()} if ladder.sweep else {}),
        **({"stop": dict(stop)} if stop else {}),
        **({"host_rule": dict(host_rule)} if host_rule else {}),
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
