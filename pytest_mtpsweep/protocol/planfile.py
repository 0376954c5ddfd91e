"""plan.json: what a run will do, and whether a later invocation is the same run (--resume)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base.errors import KindError
from ..ladder import Ladder, SessionSlot
from ..ladder.values import Preregistration, Sweep
from ..state.plandoc import (
    PLAN_FIELDS,
    AnalysisPlan,
    HostRulePlan,
    PlanDoc,
    PlannedSession,
    StopDesign,
    SweepAxis,
    SweepPlan,
    Treatment,
)


def identity(doc: PlanDoc, kind_fields: Sequence[str] = ()) -> dict[str, Any]:
    """The parts of a plan document that make two invocations the same run: the protocol's,
    the keyed fields, and the fields the kind names (`Kind.resume_fields`)."""
    return {
        "ladder": doc.ladder,
        "kind": doc.kind,
        "treatments": doc.treatments,
        "stop": doc.stop,
        "host_rule": doc.host_rule,
        **{name: doc.kind_fields.get(name) for name in kind_fields},
        "sessions": list(doc.session_names),
        **{f"keyed.{k}": v for k, v in doc.keyed.items()},
    }


def differences(
    before: PlanDoc,
    now: PlanDoc,
    kind_fields: Sequence[str] = (),
    default_kind: str | None = None,
) -> list[str]:
    """Names of the identity fields in which two plan documents differ (empty: the same run).

    `default_kind` is the kind of a plan written before plan.json named its kind."""
    a, b = identity(before, kind_fields), identity(now, kind_fields)
    a["kind"] = a["kind"] or default_kind or ""
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
    stop: StopDesign | None = None,
    host_rule: HostRulePlan | None = None,
) -> PlanDoc:
    """plan.json: the ordered sessions, which were selected, the keyed fields, the analysis.

    The kind's fields follow the protocol's; an `analysis` entry among them is merged into the
    analysis block (the kind's own settings, between the baseline and the pre-registration)."""
    own = dict(kind_fields)
    kind_analysis = own.pop("analysis", {})
    clash = sorted(set(own) & set(PLAN_FIELDS))
    if clash:  # a kind's field would shadow the protocol's: a bug in the kind, said plainly
        raise KindError(
            f"kind {ladder.kind}'s plan_fields() names {', '.join(clash)}, which plan.json "
            "holds for the protocol; rename the kind's field."
        )
    return PlanDoc(
        run_id=run_id,
        ladder=ladder.name,
        kind=ladder.kind,
        ladder_file=str(ladder.path),
        question=ladder.question,
        scope=reg.scope,
        created_at=created_at,
        invocation=tuple(invocation),
        harness_version=version,
        server_bin=server.get("server_bin"),
        server_bin_source=server.get("server_bin_source"),
        server_version=server.get("server_version"),
        model_path=server.get("model_path"),
        models=server.get("models"),
        servers=server.get("servers"),
        note=ladder.note,
        keyed=dict(keyed),
        preregistration_sha256=prereg_sha256,
        analysis=AnalysisPlan(
            ladder.baseline, reg.curtailment_sentence, reg.multiplicity, dict(kind_analysis)
        ),
        treatments=tuple(Treatment(t.key, tuple(t.args), t.own_server) for t in ladder.treatments),
        sweep=sweep_plan(ladder.sweep) if ladder.sweep else None,
        stop=stop,
        host_rule=host_rule,
        sessions=tuple(
            PlannedSession(
                s.ordinal, s.treatment, s.cycle, s.name, s.name in planned, planned.get(s.name, 0)
            )
            for s in plan
        ),
        kind_fields=own,
    )


def sweep_plan(s: Sweep) -> SweepPlan:
    """plan.json's `sweep`: what the pre-registration records of the ladder's `[sweep]`."""
    axes = tuple(SweepAxis(a.flag, a.values) for a in s.axes)
    return SweepPlan(s.setting, axes, s.shared_args, s.start, s.arms)
