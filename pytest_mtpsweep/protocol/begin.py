"""The start of a run: its directory founded (or reopened), its schedule and its sessions."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.redact import redact_urls
from ..interface import registry
from ..ladder import Ladder, SessionSlot
from ..state.context import RunContext
from ..state.rundir import RunDir
from ..wishes.request import RunRequest
from . import documents, hostrule, looks, resume
from . import preregistration as prereg
from .schedule import Schedule, deadline_from
from .session import Sessions
from .setup import Resolved
from .sweeplooks import SweepLooks

if TYPE_CHECKING:
    from ..interface.kind import Case, Kind, KindRun, SweepLookFn
    from ..preflight import PreflightItem


def begin(
    request: RunRequest,
    ladder: Ladder,
    declared: Kind,
    kind: KindRun,
    plan: list[SessionSlot],
    res: Resolved,
    cases: Sequence[Case],
    checks: Sequence[PreflightItem],
) -> Sessions:
    """Found the run directory (or reopen the resumed one) and make the run's sessions."""
    by_session, planned = _by_session(cases)
    reg = kind.registration(prereg.effective(ladder, plan))
    design = looks.design_of(ladder)
    host_off = hostrule.off_reason(ladder.host_rule, os.environ)
    p = documents.Plan(
        ladder=ladder,
        plan=plan,
        planned=planned,
        invocation=redact_urls(request.invocation),  # a --base-url's password stays out
        run_id=res.run_id,
        server=_server_facts(ladder, res),
        keyed=res.keyed,
        kind_fields=kind.plan_fields(),
        reg=reg,
        endpoints=kind.prereg_lines(reg),
        resume_fields=declared.resume_fields,
        stop=design.document() if design else None,
        stop_lines=looks.prereg_lines(design),
        host_rule=hostrule.plan_entry(ladder.host_rule, host_off),
        host_lines=hostrule.prereg_lines(ladder.host_rule, host_off),
    )
    if request.resume is not None:
        f = documents.reopen(res.run_path, p, checks)
    else:
        f = documents.found(res.run_path, p, checks)
    now_mono, now_wall = time.monotonic(), dt.datetime.now()
    deadline = deadline_from(request.deadline, request.time_budget, now_mono, now_wall)
    schedule = Schedule.for_run(ladder, plan, planned, deadline=deadline, done=f.done)
    if design is not None and declared.interim is not None:
        interim, path, analysis = looks.interim_of(declared), f.run_dir.path, request.analysis
        schedule.looks = looks.Looks(
            design, lambda: interim(path, analysis), f.run_dir.write_stop, looks.saver(path)
        )
        if ladder.sweep is not None and declared.sweep is not None:
            ask: SweepLookFn = registry.part(declared, "sweep")
            sweep = SweepLooks.for_ladder(ladder, lambda at: ask(path, analysis, at))
            if request.resume is not None:  # the arms that left stay gone, re-judged
                reached = max((s.cycle for s in plan if s.name in f.done), default=0)
                sweep.replay(design.looks, design.confidence, reached)
            schedule.looks.sweep = sweep
    if deadline is not None:
        at = now_wall + dt.timedelta(seconds=deadline - now_mono)
        schedule.deadline_label = at.strftime("%Y-%m-%d %H:%M:%S local")
    ctx = _context(request, ladder, res, f.run_dir, f.run_id, f.prereg_sha256, planned)
    return Sessions(ctx, kind, schedule, by_session)


@dataclass(frozen=True)
class Placement:
    """Where a pytest-xdist worker measures (what its controller hands it)."""

    run_path: Path
    worker: str  # xdist's worker id, e.g. gw0
    index: int  # its place among the workers: the device it takes, its port offset
    device: str  # CUDA_VISIBLE_DEVICES of its servers ("" = not pinned)
    cpus: frozenset[int] = frozenset()  # its share of the host's CPUs (empty: not split)
    run_root: int = 0  # the controller's pid when it runs on this host (0: another host)


def join(
    request: RunRequest,
    ladder: Ladder,
    kind: KindRun,
    plan: list[SessionSlot],
    res: Resolved,
    cases: Sequence[Case],
    where: Placement,
) -> Sessions:
    """A worker's sessions in the run directory its controller founded: same run id and
    pre-registration (read from plan.json); sessions already filed there are done."""
    by_session, planned = _by_session(cases)
    old = resume.read_plan(where.run_path)
    done = resume.finished_sessions(where.run_path, old)
    schedule = Schedule.for_run(ladder, plan, planned, deadline=None, done=done)
    run_dir = RunDir.reopen(where.run_path)
    ctx = replace(
        _context(request, ladder, res, run_dir, old.run_id, old.preregistration_sha256, planned),
        device=where.device,
        worker=where.worker,
        worker_index=where.index,
        worker_cpus=where.cpus,
        run_root_pid=where.run_root,
    )
    return Sessions(ctx, kind, schedule, by_session)


def _by_session(cases: Sequence[Case]) -> tuple[dict[str, list[Case]], dict[str, int]]:
    """The run's cases by session, in their order, and how many each session plans."""
    by_session: dict[str, list[Case]] = {}
    for c in cases:
        by_session.setdefault(c.slot.name, []).append(c)
    return by_session, {name: len(cs) for name, cs in by_session.items()}


def _context(
    request: RunRequest,
    ladder: Ladder,
    res: Resolved,
    run_dir: RunDir,
    run_id: str,
    prereg_sha256: str,
    planned: dict[str, int],
) -> RunContext:
    """What every session of the run shares: the rig `resolve` found, in this run directory."""
    return RunContext(
        ladder=ladder,
        run_dir=run_dir,
        run_id=run_id,
        server_bin=res.server_bin,
        server_version=res.server_version,
        model_path=res.model_path,
        models=res.models,
        servers=res.servers,
        builds=res.builds,
        keyed=res.keyed,
        prereg_sha256=prereg_sha256,
        planned=planned,
        warmup=request.warmup,
        calibration=request.calibration,
    )


def _server_facts(ladder: Ladder, res: Resolved) -> dict[str, Any]:
    """What plan.json says of the server binary and the models."""
    facts: dict[str, Any] = {
        "server_bin": str(res.server_bin.path) if res.server_bin else None,
        "server_bin_source": res.server_bin.source if res.server_bin else None,
        "server_version": res.server_version,
        "model_path": str(res.model_path) if res.model_path else None,
    }
    if res.servers:  # builds as treatments: each treatment's build as resolved
        # with where each came from (a server_commit's repository and commit, a requirement)
        facts["servers"] = {key: b.document() for key, b in res.builds.items()}
        for key, own in res.servers.items():
            if key in facts["servers"]:
                facts["servers"][key]["source"] = own.source
    if any(t.model for t in ladder.treatments):
        facts["models"] = {key: str(path) for key, path in res.models.items()}
    return facts
