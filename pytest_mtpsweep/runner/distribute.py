"""A ladder over pytest-xdist workers: who does what, and how the run directory is shared.

The controller (it collects nothing and runs no test) resolves the run, runs preflight for
every worker's port and device, founds the run directory once (plan.json, the
pre-registration) when the first worker's collection says what was selected, and runs the
analysis once at its end. Each worker joins that directory and runs whole blocks (a cycle
pair, ABC CBA; our scheduler keeps a block on one worker, in collection order, which is
plan order): its servers on its own device and port, its own session and record files.

A worker that dies (kill -9) takes its server with it (PR_SET_PDEATHSIG); xdist hands the
rest of its block to another worker, which finds the dead session's records without a
session file and sets them aside as quarantined before going on; the controller does the
same at its end for whatever no worker came back to. pytest's edge, like runloop.py: it is
imported only by a run that uses --ladder with -n (or --tx) or inside a worker.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..interface.kind import Case
    from ..ladder import SessionSlot
    from ..preflight import PreflightItem
    from ..protocol.ladderrun import Run

KEY = "mtpsweep"  # our entry in a worker's workerinput
GROUP = "mtpsweep-block-{}"
WORKER_DIED = (
    "its pytest-xdist worker died mid-session (its server died with it); run the session "
    "again with --resume"
)


@dataclass
class Controller:
    """The controller's share of a distributed run."""

    workers: int
    local: int = 0  # workers on this host (popen): they split its CPUs; a remote host has its own
    index: dict[str, int] = field(default_factory=dict)  # live worker id -> its place
    local_index: dict[str, int] = field(default_factory=dict)  # live local worker -> its share
    error: str | None = None  # the run could not be resolved: said once, at the loop
    checks: list[PreflightItem] | None = None
    founded: bool = False


def host_cpus(ladder: Any) -> list[int]:
    """The CPUs the workers' servers may share: server.cpus, else this process's affinity."""
    return sorted(ladder.cpus) if ladder.cpus else sorted(os.sched_getaffinity(0))


def cpu_share(cpus: Sequence[int], workers: int, index: int) -> list[int]:
    """Worker `index`'s contiguous share of `cpus` (the first shares take the remainder)."""
    size, extra = divmod(len(cpus), workers)
    start = index * size + min(index, extra)
    return list(cpus[start : start + size + (1 if index < extra else 0)])


def role(config: pytest.Config) -> str:
    """'worker', 'controller' (pytest-xdist distributes this run) or ''."""
    if hasattr(config, "workerinput"):
        return "worker"
    tx = config.getoption("tx", None)
    if tx and config.getoption("dist", "no") != "no" and not config.option.collectonly:
        return "controller"
    return ""


def configure(config: pytest.Config, run: Run, as_role: str) -> Controller | None:
    """Check that this run can be distributed; steer xdist to keep each block on one worker."""
    if as_role == "worker":
        return None
    lad, request = run.ladder, run.request
    specs = config.getoption("tx")
    workers = len(specs)
    local = sum(1 for s in specs if str(s).split("//")[0].split("=")[0] == "popen")
    dist = config.getoption("dist")
    problem = None
    if dist not in ("load", "loadgroup"):  # -n alone means xdist's `load`
        problem = f"--dist {dist} would split a counterbalanced block; use --dist loadgroup."
    elif not run.declared.distributable:
        from ..interface import registry

        able = ", ".join(k.name for k in registry.kinds() if k.distributable) or "no kind"
        problem = f"a {lad.kind} ladder runs without -n; distribution is for {able} ladders."
    elif lad.stop is not None:
        problem = "a [stop] rule looks between cycle pairs in order; run it without -n."
    elif any(t.attached for t in lad.treatments):
        problem = "an attached server is one endpoint that two workers would measure at once."
    elif request.deadline or request.time_budget:
        problem = "--deadline and --time-budget are per run, not per worker; drop them with -n."
    elif lad.devices and workers > len(lad.devices):
        problem = (
            f"{workers} workers but placement.devices names {len(lad.devices)} "
            f"({', '.join(lad.devices)}); use -n {len(lad.devices)} or name more devices."
        )
    elif not lad.devices and local > len(host_cpus(lad)):
        problem = (
            f"{local} workers cannot split {len(host_cpus(lad))} CPU(s) between their servers "
            f"(two servers on one CPU slow each other and the data); use -n "
            f"{len(host_cpus(lad))} or fewer, or name placement.devices."
        )
    if problem is not None:
        raise pytest.UsageError(f"ladder {lad.name} with pytest-xdist: {problem}")
    return Controller(workers, local)


def scheduler(config: pytest.Config, log: Any, run: Run) -> Any:
    """xdist's scope scheduling with a block (a cycle pair) as the scope: a block goes to one
    worker whole, its items in collection order (which is plan order); other tests are each
    their own scope. (Not `--dist loadgroup`: with pytest 9 its `@group` suffix on node ids
    is lost, xdist 3.8 setting a node attribute pytest no longer reads, so every item would
    be a group of its own and a session would be split across workers.)"""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    blocks = {c.id: c.slot.block for c in run.cases()}

    class BlockScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            block = blocks.get(case_id(nodeid))
            return nodeid if block is None else GROUP.format(block)

    return BlockScheduling(config, log)


# -- the controller -----------------------------------------------------------------------


def configure_node(state: Controller, run: Run, node: Any) -> None:
    """Hand a starting worker the run directory, its device and its place (port offset).
    A replacement for a crashed worker takes the place (and device) the dead one left."""
    from ..base.errors import UserError

    if state.error is not None:
        return
    try:
        resolved = run.resolved or run.resolve()
    except UserError as exc:
        state.error = str(exc)
        return
    taken = set(state.index.values())
    index = min(i for i in range(len(taken) + 1) if i not in taken)
    state.index[node.gateway.id] = index
    devices = run.ladder.devices
    cpus: list[int] = []
    spec = getattr(node.gateway, "spec", None)
    if not devices and getattr(spec, "popen", True):  # a local worker (popen), not ssh
        mine = set(state.local_index.values())
        local = min(i for i in range(len(mine) + 1) if i not in mine)
        state.local_index[node.gateway.id] = local
        cpus = cpu_share(host_cpus(run.ladder), max(state.local, local + 1), local)
    node.workerinput[KEY] = {
        "run_path": str(resolved.run_path),
        "index": index,
        "device": devices[index] if devices else "",
        # without devices a host's servers share it: each local worker gets its own CPUs
        "cpus": cpus,
        # a local worker's siblings and their servers are this process's descendants: the host
        # rule counts that tree as the run, not as noise (an ssh worker is on another host)
        "controller_pid": os.getpid() if getattr(spec, "popen", True) else 0,
    }


def node_down(state: Controller, node: Any) -> None:
    state.index.pop(node.gateway.id, None)
    state.local_index.pop(node.gateway.id, None)


def before(session: pytest.Session, run: Run, state: Controller) -> None:
    """Preflight for every worker's port, as test items; a failure stops the run."""
    from ..base.errors import UserError
    from . import loop as runloop

    config = session.config
    if state.error is not None:
        pytest.exit(state.error, returncode=pytest.ExitCode.USAGE_ERROR)
    try:
        if run.resolved is None:
            run.resolve()
        checks = run.preflight(workers=state.workers, on_wait=runloop.wait_line(config))
    except UserError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    runloop.gate_preflight(session, checks, config.getoption("mtpsweep_preflight_only"), None)
    state.checks = checks


def case_id(nodeid: str) -> str:
    """The parametrisation id of a node id, without the `@group` suffix loadgroup adds."""
    match = re.search(r"\[(.*)\](?:@[^\[\]]*)?$", nodeid)
    return match.group(1) if match else ""


def found(config: pytest.Config, run: Run, state: Controller, ids: Sequence[str]) -> None:
    """The first worker's collection is the selection: found the run directory for it, once,
    before xdist hands out the first test."""
    from ..base.errors import UserError
    from . import loop as runloop

    if state.founded or state.checks is None:
        return
    state.founded = True
    selected = {case_id(i) for i in ids}
    cases = [c for c in run.cases() if c.id in selected]
    try:
        run.begin(cases, state.checks, None)
    except UserError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    runloop.suite_properties(config, runloop.run_properties(run))


def settle(run: Run) -> list[str]:
    """At the controller's end: sessions a dead worker left with records but no session
    file are set aside (quarantined); their names. A stop a worker wrote is the run's."""
    from ..base import schema
    from ..state.runread import RunReader

    if run.run_dir is None or run.sessions is None:
        return []
    run_dir, out = run.run_dir, []
    stopped = run_dir.path / schema.STOPPED_FILE
    if stopped.exists() and run.sessions.stopped is None:  # a rule stopped it on a worker
        run.sessions.stopped = RunReader(run_dir.path).stop_reason  # bounded, never waits
    for slot in run.plan:
        if _abandoned(run_dir.path, slot):
            run_dir.quarantine(slot.name, WORKER_DIED)
            out.append(slot.name)
    if out:
        run_dir.append_text(schema.RESUME_LOG, f"{schema.utc_now_iso()} {WORKER_DIED}: {out}")
    return out


def _abandoned(path: Path, slot: SessionSlot) -> bool:
    from ..base import schema

    if (path / schema.session_file(slot.name)).exists():
        return False
    return (path / schema.records_file(slot.name)).exists() or (
        path / schema.server_log(slot.name)
    ).exists()


# -- a worker -----------------------------------------------------------------------------


def join(config: pytest.Config, run: Run, items: Sequence[pytest.Item]) -> None:
    """A worker's first session: join the run directory its controller founded."""
    from ..base.errors import UserError
    from ..protocol.begin import Placement

    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    info = workerinput.get(KEY)
    if info is None:  # the controller could not resolve the run; it says why
        pytest.skip("the controller did not start this run")
    cases = [c for c in (_case(i) for i in items) if c is not None]
    where = Placement(
        Path(info["run_path"]),
        workerinput["workerid"],
        info["index"],
        info["device"],
        frozenset(info.get("cpus") or ()),
        int(info.get("controller_pid") or 0),
    )
    try:
        run.join(cases, where)
    except UserError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


def _case(item: pytest.Item) -> Case | None:
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("mtpsweep_case") if callspec else None
    return case if getattr(case, "slot", None) is not None else None


def before_session(run: Run, slot: SessionSlot) -> None:
    """On a worker, before a session opens: the run stopped elsewhere -> StopRun; the session
    was filed by another worker -> AlreadyDone; a dead worker's session -> quarantined and
    skipped (its block goes on; --resume runs it again)."""
    from ..base import schema
    from ..base.errors import AlreadyDone, SkipSession, StopRun
    from ..state.runread import RunReader

    assert run.run_dir is not None
    path = run.run_dir.path
    stopped = path / schema.STOPPED_FILE
    if stopped.exists():
        raise StopRun(RunReader(path).stop_reason)  # bounded: a FIFO there never hangs a worker
    if (path / schema.session_file(slot.name)).exists():
        raise AlreadyDone(f"session {slot.name} was filed by another worker")
    if _abandoned(path, slot):
        run.run_dir.quarantine(slot.name, WORKER_DIED)
        raise SkipSession(f"session {slot.name}: {WORKER_DIED}")
