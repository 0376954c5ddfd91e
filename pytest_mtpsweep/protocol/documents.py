"""The run directory's founding documents: written once before the first measurement
(preflight.json, preregistration.md, plan.json), or reopened as they are on --resume."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._version import __version__
from ..base import schema
from ..ladder import Ladder, SessionSlot
from ..ladder.values import Preregistration
from ..preflight.items import PreflightItem, write_preflight_json
from ..state.plandoc import HostRulePlan, PlanDoc, StopDesign
from ..state.rundir import RunDir
from . import planfile, resume
from . import preregistration as prereg


@dataclass(frozen=True)
class Founded:
    """What the protocol needs of a created or reopened run directory."""

    run_dir: RunDir
    run_id: str
    prereg_sha256: str
    done: set[str]  # sessions finished before a resume


@dataclass(frozen=True)
class Plan:
    """What plan.json says of a run: the ladder, the plan, the selection, the rig."""

    ladder: Ladder
    plan: list[SessionSlot]
    planned: Mapping[str, int]  # session name -> selected measurements
    invocation: Sequence[str]
    run_id: str
    server: Mapping[str, Any]
    keyed: Mapping[str, Any]
    kind_fields: Mapping[str, Any]
    reg: Preregistration  # the effective pre-registration, the kind's defaults filled in
    endpoints: Sequence[str] = ()  # the kind's pre-registered endpoints and contrasts
    resume_fields: Sequence[str] = ()  # the kind's plan fields that make it the same run
    stop: StopDesign | None = None  # the sequential design ([stop]), plan.json's `stop`
    stop_lines: Sequence[str] = ()  # its section of preregistration.md
    host_rule: HostRulePlan | None = None  # the host rule (hostrule.py), plan.json's `host_rule`
    host_lines: Sequence[str] = ()  # its section of preregistration.md

    def document(self, prereg_sha256: str) -> PlanDoc:
        return planfile.plan_document(
            run_id=self.run_id,
            ladder=self.ladder,
            created_at=schema.utc_now_iso(),
            invocation=self.invocation,
            version=__version__,
            server=self.server,
            keyed=self.keyed,
            prereg_sha256=prereg_sha256,
            reg=self.reg,
            kind_fields=self.kind_fields,
            plan=self.plan,
            planned=self.planned,
            stop=self.stop,
            host_rule=self.host_rule,
        )


def found(path: Path, p: Plan, checks: Sequence[PreflightItem]) -> Founded:
    """A new run: the directory, preflight.json, the pre-registration (hashed), plan.json."""
    run_dir = RunDir.create(path)
    write_preflight_json(checks, path / schema.PREFLIGHT_FILE)
    selected = [s for s in p.plan if s.name in p.planned]
    text = prereg.render(
        p.ladder,
        p.plan,
        selected,
        list(p.invocation),
        p.run_id,
        schema.utc_now_iso(),
        p.endpoints,
        p.stop_lines,
        p.host_lines,
    )
    run_dir.write_text_new(schema.PREREGISTRATION_FILE, text)
    sha = prereg.digest(text)
    run_dir.write_plan(p.document(sha))
    return Founded(run_dir, p.run_id, sha, set())


def reopen(
    path: Path,
    p: Plan,
    checks: Sequence[PreflightItem],
) -> Founded:
    """A resumed run, if this invocation is the same run; resume.log says when and how."""
    state = resume.reopen(path, p.document(""), checks, p.resume_fields)
    state.run_dir.append_text(
        schema.RESUME_LOG, f"{schema.utc_now_iso()} resumed: {' '.join(p.invocation)}"
    )
    return Founded(state.run_dir, state.run_id, state.prereg_sha256, state.done)
