"""Experiment kinds: the part of an experiment that is not the run protocol.

The protocol (ladder loading, plan order, preflight, run directory, pre-registration,
sessions, quarantine, curtailment, resume, row table, the session-end analysis call) is
shared. A kind supplies only:

- its ladder fields (`KindSpec`: extra top-level fields, how its server configurations are
  read, its cross-field rules), importable without any heavy dependency;
- its run (`KindRun`): the cases of the plan, how one case is measured and recorded, what a
  session adds to its session file, its preflight items, and its analysis.

A kind lives in `kinds/<name>/`: `ladder.py` defines `SPEC`, `run.py` defines `prepare()`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..ladder.fields import Spec
    from ..ladder.model import Ladder, Treatment
    from ..ladder.plan import SessionSlot
    from ..options import AnalysisRequest, RunRequest
    from ..preflight.items import PreflightItem
    from ..protocol.lifecycle import LiveSession


# The fixture a test asks for to be parametrised over a kind's cases.
FIXTURES: dict[str, str] = {"decode": "measurement", "authoring": "cell"}


@dataclass(frozen=True)
class KindSpec:
    """The ladder side of a kind."""

    name: str
    fields: Spec  # top-level fields the kind adds to a ladder
    treatments: Callable[[dict[str, Any], Path], tuple[Treatment, ...]]
    validate: Callable[[Ladder, Path | str], None]


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
    # valid and carrying what the analysis pairs (a decode's primary rate); None: = valid
    usable: bool | None = None


@dataclass(frozen=True)
class EndAnalysis:
    """What the session-end analysis produced, for the terminal summary and the exit status."""

    table: str = ""
    report: Path | None = None
    error: str | None = None
    gate_failures: tuple[str, ...] = ()
    headline: Mapping[str, str] | None = None  # for JUnit <properties>


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

    def measure(self, live: LiveSession, case: Case) -> Outcome: ...

    def unmeasured(self, live: LiveSession, case: Case, reason: str) -> Outcome: ...

    def session_facts(self, live: LiveSession) -> dict[str, Any]: ...

    def validate_analysis(self, request: AnalysisRequest) -> None: ...

    def analyse(self, run_dir: Path, request: AnalysisRequest) -> EndAnalysis: ...


def prepare(ladder: Ladder, request: RunRequest) -> KindRun:
    """The run side of the ladder's kind, its inputs (prompts, tasks) loaded."""
    module = importlib.import_module(f"{__name__}.{ladder.kind}.run")
    run: KindRun = module.prepare(ladder, request)
    return run
