"""Experiment kinds: the part of an experiment that is not the run protocol.

The protocol (ladder loading, plan order, preflight, run directory, pre-registration,
sessions, quarantine, curtailment, resume, row table, the session-end analysis call) is
shared. A kind supplies only:

- its ladder fields (`KindSpec`: extra top-level fields, how its server configurations are
  read, its cross-field rules), importable without any heavy dependency;
- its run (`KindRun`): the cases of the plan, how one case is measured and recorded, what a
  session adds to its session file, its preflight items, and its analysis; optionally
  `properties(case, result)` (a measured case's JUnit properties) and `session_note(live)`
  (its word in a session's closing line).

A kind lives in `kinds/<name>/`: `ladder.py` defines `SPEC`, `run.py` defines `prepare()`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..ladder.fields import Spec
    from ..ladder.model import Ladder, Preregistration, Treatment
    from ..ladder.plan import SessionSlot
    from ..options import AnalysisRequest, RunRequest
    from ..preflight.items import PreflightItem
    from ..protocol.context import RunContext
    from ..protocol.lifecycle import LiveSession
    from ..schema import WarmupFacts


# The fixture a test asks for to be parametrised over a kind's cases.
FIXTURES: dict[str, str] = {"decode": "measurement", "authoring": "cell"}


@dataclass(frozen=True)
class KindSpec:
    """The ladder side of a kind."""

    name: str
    fields: Spec  # top-level fields the kind adds to a ladder
    treatments: Callable[[dict[str, Any], Path], tuple[Treatment, ...]]
    validate: Callable[[Ladder, Path | str], None]
    defaults: Mapping[str, Any] = field(default_factory=dict)  # shared fields it defaults otherwise


def cli_registrars() -> list[Callable[[Any], None]]:
    """Each kind's own `mtpsweep` subcommands (a kind's optional `cli.register(sub)`)."""
    out = []
    for name in FIXTURES:
        try:
            module = importlib.import_module(f"{__name__}.{name}.cli")
        except ModuleNotFoundError:
            continue
        out.append(module.register)
    return out


def kind_spec(name: str) -> KindSpec:
    """The ladder side of kind `name` (no heavy imports)."""
    spec: KindSpec = importlib.import_module(f"{__name__}.{name}.ladder").SPEC
    return spec


class Case(Protocol):
    """One parametrised item: a session slot and what is measured in it."""

    @property
    def slot(self) -> SessionSlot: ...

    @property
    def id(self) -> str: ...

    @property
    def position(self) -> int: ...


class Result(Protocol):
    """What a measurement test receives: it passes when the measurement is valid."""

    @property
    def valid(self) -> bool: ...

    @property
    def reason(self) -> str | None: ...


@dataclass(frozen=True)
class Outcome:
    """A measured case: what the test gets, and what the protocol must do about it."""

    result: Result
    marker: str | None = None  # a stop marker: the run stops once this is recorded
    skip: str | None = None  # the case was not run (its record says so): the test is skipped
    # valid and carrying what the analysis pairs (a decode's primary rate); None: = valid
    usable: bool | None = None


@dataclass(frozen=True)
class GateVerdict:
    """One `--expect` gate, judged: it becomes the test item `mtpsweep::expect[<expectation>]`."""

    expectation: str
    met: bool | None  # None: not judged (no analysis)
    detail: str


@dataclass(frozen=True)
class EndAnalysis:
    """What the session-end analysis produced, for the terminal summary and the exit status."""

    table: str = ""
    report: Path | None = None
    error: str | None = None
    gate_failures: tuple[str, ...] = ()
    headline: Mapping[str, str] | None = None  # for JUnit <properties>: name -> one line
    gates: tuple[GateVerdict, ...] = ()  # one per --expect, in the order given

    def verdicts(self, expect: Sequence[str]) -> list[GateVerdict]:
        """One verdict per `--expect`: the kind's own, else read off `error` and
        `gate_failures` (each failure line starts with its expectation)."""
        if self.gates:
            return list(self.gates)
        if self.error:
            why = f"not judged: the analysis did not run ({self.error})"
            return [GateVerdict(e, False, f"{e} {why}") for e in expect]
        failed = {f.split(" not met", 1)[0]: f for f in self.gate_failures}
        return [GateVerdict(e, e not in failed, failed.get(e, f"{e} met")) for e in expect]


class KindRun(Protocol):
    """One run's worth of a kind, as the protocol uses it."""

    name: str
    fixture: str  # the fixture name a test asks for to be parametrised over the cases
    calibrates: bool  # whether sessions run the calibration prompt at start and end

    def cases(self, plan: list[SessionSlot]) -> list[Case]: ...

    def keyed(self) -> dict[str, Any]: ...

    def plan_fields(self) -> dict[str, Any]: ...

    def preflight_items(self) -> tuple[PreflightItem, ...]: ...

    def quarantine_members(self, session: str) -> dict[str, str]: ...

    def prereg_lines(self, reg: Preregistration) -> list[str]: ...

    def before_session(self, ctx: RunContext, slot: SessionSlot, cases: Sequence[Case]) -> None:
        """Called before a session starts; raises SkipSession if it must not."""

    def warm_up(self, live: LiveSession) -> WarmupFacts:
        """One short request before the first case; invalid facts set the session aside."""

    def measure(self, live: LiveSession, case: Case) -> Outcome: ...

    def unmeasured(self, live: LiveSession, case: Case, reason: str) -> Outcome: ...

    def session_facts(self, live: LiveSession) -> dict[str, Any]: ...

    def validate_analysis(self, request: AnalysisRequest) -> None: ...

    def analyse(self, run_dir: Path, request: AnalysisRequest) -> EndAnalysis: ...

    def finish(self, run_dir: Path, selected: Sequence[Case]) -> list[str]:
        """After the last session, analysis or not: the kind's own end files (e.g. a run
        status); returns lines for the terminal."""


def case_properties(kind: KindRun, case: Case, result: Result) -> dict[str, Any]:
    """What a measured case shows in JUnit beyond its session: the kind's optional
    `properties(case, result)`, else whether it is valid and why not."""
    own = getattr(kind, "properties", None)
    if own is not None:
        props: dict[str, Any] = own(case, result)
        return props
    return {"valid": result.valid, **({} if result.valid else {"reason": result.reason})}


def session_note(kind: KindRun, live: LiveSession) -> str:
    """The kind's optional `session_note(live)` for a session's closing line ('' without)."""
    own = getattr(kind, "session_note", None)
    return str(own(live)) if own is not None else ""


def prepare(ladder: Ladder, request: RunRequest) -> KindRun:
    """The run side of the ladder's kind, its inputs (prompts, tasks) loaded."""
    module = importlib.import_module(f"{__name__}.{ladder.kind}.run")
    run: KindRun = module.prepare(ladder, request)
    return run
