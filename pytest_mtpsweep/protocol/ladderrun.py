"""One pytest run of a ladder, as the plugin and the CLI see it: a thin object that holds the
request, the ladder, the kind and the plan, and hands each step to the module that does it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base import schema
from ..base.errors import ExpectationError, LadderError, OptionError, ProvisionError
from ..interface import registry
from ..ladder import Ladder, SessionSlot, find_ladder, ladder_plan
from ..ladder.attachfields import one_server
from ..ladder.serverargs import argument_problems
from ..wishes import options
from ..wishes.gate import Gate, parse_gates
from ..wishes.request import PreflightRequest, RunRequest
from . import finish, interrupts, looks, resume, setup, timeouts
from .begin import Placement, begin, join
from .loader import load_ladder

if TYPE_CHECKING:
    from ..interface.kind import Case, EndAnalysis, Kind, KindRun, Result
    from ..preflight import PreflightItem
    from ..state.live import LiveSession
    from ..state.rundir import RunDir
    from .progress import Progress
    from .schedule import Schedule
    from .session import Sessions


@dataclass
class Run:
    """The state of one pytest session that runs a ladder."""

    request: RunRequest
    ladder: Ladder
    declared: Kind  # the ladder's kind as the registry found it
    kind: KindRun  # and its run side, prepared for this ladder
    plan: list[SessionSlot]
    resolved: setup.Resolved | None = None
    sessions: Sessions | None = None
    summary: finish.Summary | None = None
    analysis: EndAnalysis | None = None
    selected: tuple[str, ...] | None = None  # the treatments this invocation measures

    def check_selection(self, cases: Sequence[Case]) -> None:
        """Note which treatments the selected measurements belong to; `--base-url` (one
        server) refuses a selection of more than one."""
        self.selected = tuple(dict.fromkeys(c.slot.treatment for c in cases))
        looks.check_cells(self.ladder, self.kind, cases, selected=True)
        if self.request.base_url is not None:
            one_server(self.request.base_url, list(self.selected))

    @classmethod
    def from_request(cls, request: RunRequest) -> Run:
        """Load and check everything the command line names, before anything starts."""
        path = find_ladder(request.ladder, list(request.search_dirs))
        said = options.describe_overrides(request.overrides, options.table(registry.options()))
        ladder = load_ladder(path, request.overrides, said, base_url=request.base_url)
        wrong_args = argument_problems(ladder)  # what `mtpsweep lint` lists, the first refused
        if wrong_args:
            raise LadderError(wrong_args[0])
        declared = registry.kind(ladder.kind, str(ladder.path))
        for name in request.kind_options:
            owner = registry.owner_of(name)
            if owner is not None and owner.name != ladder.kind:
                flag = next(o.flag for o in owner.options if o.name == name)
                raise OptionError(
                    f"{flag} is an option of the {owner.name} kind, and ladder {ladder.name} is "
                    f"{ladder.kind}; drop {flag}."
                )
        if any(ladder.model_of(t.key) is None for t in ladder.treatments if not t.attached):
            raise ProvisionError(
                f"ladder {ladder.name} ({ladder.path}) needs --model: "
                f"{ladder.requires_model or 'a GGUF model file'}."
            )
        gates = parse_gates(request.analysis.expect, declared.gates, declared.name)
        request = dataclasses.replace(
            request, analysis=dataclasses.replace(request.analysis, gates=gates)
        )
        kind = registry.prepare(ladder, request)
        looks.check_supported(ladder, declared)
        if request.resume is not None and ladder.stop is not None:
            resume.check_stop_file(request.resume)  # before preflight: it starts nothing
        kind.validate_analysis(request.analysis)
        plan = ladder_plan(ladder)
        cases = kind.cases(plan)
        looks.check_cells(ladder, kind, cases, selected=False)
        check_gate_cells(ladder, gates, kind.gate_cells(cases))
        return cls(request, ladder, declared, kind, plan)

    @property
    def run_dir(self) -> RunDir | None:
        return self.sessions.ctx.run_dir if self.sessions else None

    @property
    def schedule(self) -> Schedule | None:
        return self.sessions.schedule if self.sessions else None

    @property
    def stopped(self) -> str | None:
        return self.sessions.stopped if self.sessions else None

    def cases(self) -> list[Case]:
        """Every case of the plan, in run order."""
        return list(self.kind.cases(self.plan))

    def resolve(self) -> setup.Resolved:
        """Find the server and the model; fix the keyed fields, the run id and its path."""
        self.resolved = setup.resolve(self.ladder, self.kind, self.request)
        return self.resolved

    def preflight(
        self,
        opts: PreflightRequest | None = None,
        workers: int = 1,
        on_wait: Callable[[str], None] | None = None,
    ) -> list[PreflightItem]:
        """Every preflight item for this run (every worker's port), before anything starts;
        `on_wait` hears about a wait for a quiet host (--wait-for-quiet)."""
        assert self.resolved is not None, "resolve() comes first"
        opts = opts or self.request.preflight
        return setup.preflight(
            self.ladder,
            self.kind,
            self.request,
            self.resolved,
            opts,
            sessions=len(self.plan),
            measurements=len(self.cases()),
            treatments=self.selected,
            workers=workers,
            on_wait=on_wait,
        )

    def begin(
        self,
        cases: Sequence[Case],
        checks: Sequence[PreflightItem],
        progress: Progress | None = None,
    ) -> None:
        """Found the run directory (or reopen the resumed one); make the sessions."""
        assert self.resolved is not None, "resolve() comes first"
        self.sessions = begin(
            self.request,
            self.ladder,
            self.declared,
            self.kind,
            self.plan,
            self.resolved,
            cases,
            checks,
        )
        interrupts.install()  # a second Ctrl-C ends the run quietly (plugin unconfigure restores)
        if progress is not None:
            self.sessions.progress = progress

    def join(self, cases: Sequence[Case], where: Placement) -> None:
        """A pytest-xdist worker: its sessions in the run directory its controller founded."""
        if self.resolved is None:
            self.resolve()
        assert self.resolved is not None
        self.sessions = join(
            self.request, self.ladder, self.kind, self.plan, self.resolved, cases, where
        )
        interrupts.install()

    def item_limits(self, cases: Sequence[Case]) -> list[float] | None:
        """pytest-timeout's limit for each selected case in run order (None: no limit)."""
        return timeouts.item_limits(cases, self.ladder)

    def properties(self, live: LiveSession, case: Case, result: Result) -> dict[str, Any]:
        """A measured case's JUnit properties: its run and session, then the kind's own."""
        slot = case.slot
        return {
            "run_id": live.ctx.run_id,
            "session": slot.name,
            "treatment": slot.treatment,
            "cycle": slot.cycle,
            **self.kind.properties(case, result),
        }

    def check_schedule(self, slot: SessionSlot) -> None:
        """AlreadyDone or Curtailed when this session must not run."""
        assert self.sessions is not None, "begin() comes first"
        run_dir = self.sessions.ctx.run_dir

        def record_drops(doc: dict[str, Any]) -> None:
            run_dir.write_json(schema.CURTAILMENT_FILE, doc)

        self.sessions.schedule.check(slot, record_drops)

    def finish(self) -> finish.Summary | None:
        """The row table and the memory witness, rebuilt from the session files."""
        if self.sessions is None:
            return None
        summary = finish.summarise(self.sessions.ctx.run_dir, self.ladder)
        selected = [c for cs in self.sessions.cases.values() for c in cs]
        lines = self.kind.finish(self.sessions.ctx.run_dir.path, selected)
        self.summary = dataclasses.replace(summary, kind_lines=lines)
        return self.summary

    def analyse(self) -> EndAnalysis | None:
        """The kind's session-end analysis of the run directory (None with --no-analysis)."""
        if self.sessions is None or not self.request.analysis.enabled:
            return None
        self.analysis = self.kind.analyse(self.sessions.ctx.run_dir.path, self.request.analysis)
        return self.analysis


def check_gate_cells(ladder: Ladder, gates: Sequence[Gate], cells: frozenset[str] | None) -> None:
    """Each gate names a cell the ladder measures (`KindRun.gate_cells`; None: the kind cannot
    say before the run): refused before any session, not judged unmeasured at the end."""
    for gate in gates:
        if cells is not None and gate.key not in cells:
            have = ", ".join(sorted(cells)) or "none"
            raise ExpectationError(
                f"--expect {gate}: ladder {ladder.name} never measures {gate.key} (the cells "
                f"it measures against its baseline: {have}); gate a cell it measures."
            )
