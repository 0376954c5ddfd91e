"""The kind interface: what an experiment kind gives the protocol, and what it gets back.

Below the protocol and below every kind, so that both import it and neither imports the other
(pluggy's shape: the markers live in a module host and plug-ins share). A kind is found through
the entry-point group `pytest_mtpsweep.kinds` (`registry.py`); its entry point names a `Kind`,
a declaration that is cheap to import (every pytest run with `--ladder` loads it, for the
kind's options; `kindcheck.py` checks it). The rest of the kind is named in it as `"module:attribute"` and imported
only when a ladder of that kind is run:

- `ladder` -> a `KindSpec`: the top-level ladder fields it adds, how its server configurations
  are read, its fields parsed once into its settings, its cross-field rules (no heavy imports);
- `run` -> `prepare(ladder, settings, request) -> KindRun`: the cases of the plan, how one case
  is measured and recorded, its pre-registration lines and its analysis; a base class whose
  defaults say nothing for the rest (keyed fields, plan.json, preflight items, session facts);
- `commands` -> `register(subparsers)`: its own `mtpsweep` subcommands (optional);
- `analyse` -> `analyse(args, runs, plans) -> int`: `mtpsweep analyse` of its run directories;
- `plan` -> `plan(args, run, plan) -> int`: `mtpsweep plan`, cycles to a target from a pilot
  (optional: a kind without it is refused in one line);
- `interim` -> `interim(run_dir, request) -> AnalysisResult | cells`: what a `[stop]` rule
  looks at between cycles, written by nothing (a result is saved by the look once its record
  is in stop.json; optional: a kind without it refuses a `[stop]` ladder in one line).
- `compare` -> `compare(args, runs) -> int`: `mtpsweep compare RUN_A RUN_B`, two runs' own
  results side by side (optional, likewise).
- `sweep` -> `sweep_look(run_dir, request, look) -> SweepVerdict`: at a look of a `[stop]`
  sweep, the arms surely not the best and whether the sweep is settled (optional: without it a
  sweep's looks drop no arm).

Nothing here imports the rest of the package at run time (but `gate`, the gates' typed values); the names below TYPE_CHECKING are the layers beneath this one (ARCHITECTURE.md,
"Layers").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from argparse import Namespace
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..wishes.gate import Gate, GateGrammar, GateVerdict

if TYPE_CHECKING:
    from ..analysis.sequential import CellState
    from ..base.schema import WarmupFacts
    from ..ladder.fields import Spec
    from ..ladder.runplan import SessionSlot
    from ..ladder.values import Ladder, Preregistration, Treatment
    from ..preflight.items import PreflightItem
    from ..report.analysisresult import AnalysisResult
    from ..state.context import RunContext
    from ..state.live import LiveSession
    from ..state.plandoc import PlanDoc
    from ..wishes.options import Opt
    from ..wishes.request import AnalysisRequest, RunRequest

GROUP = "pytest_mtpsweep.kinds"  # the entry-point group kinds register in


class ExitStatus(IntEnum):
    """What a kind's `analyse` (and its other commands) returns: `mtpsweep analyse`'s exit
    status."""

    OK = 0  # every gate met
    GATE_FAILED = 1  # a gate not met
    ERROR = 2  # the command could not do its work


@dataclass(frozen=True)
class Kind:
    """A kind as it declares itself to the registry: its name, its test fixture, its options,
    and where the rest of it lives (`"module:attribute"`, imported when first needed)."""

    name: str  # what a ladder's `kind` field says
    fixture: str  # the fixture a test asks for to be parametrised over the kind's cases
    ladder: str  # -> KindSpec
    run: str  # -> prepare(ladder, settings, request) -> KindRun
    summary: str = ""  # what one case is, for the fixture's docstring (`pytest --fixtures`)
    options: tuple[Opt, ...] = ()  # its own command-line options, registered with the shared
    commands: str | None = None  # -> register(subparsers): its own `mtpsweep` subcommands
    analyse: str | None = None  # -> analyse(args, runs, plans) -> exit status
    plan: str | None = None  # -> plan(args, run, plan) -> exit status: `mtpsweep plan RUN`
    interim: str | None = None  # -> InterimFn: the records so far, for a `[stop]` rule's looks
    compare: str | None = None  # -> compare(args, runs) -> exit status: `mtpsweep compare`
    sweep: str | None = None  # -> SweepLookFn: a `[stop]` sweep's arms to drop at a look
    # takes a `[sweep]` (its arms run as treatments); a kind whose treatments are something
    # else (authoring's subjects) leaves it False, and the loader refuses the table in one line
    sweeps: bool = False
    gates: GateGrammar | None = None  # what its --expect gates may say; None: it judges none
    default: bool = False  # a ladder without a `kind` field is this kind (one kind says so)
    distributable: bool = False  # may run over pytest-xdist workers (-n)
    # plan.json fields the kind writes (`KindRun.plan_fields`) that make a later invocation the
    # same run (`--resume` refuses one that differs in them); the keyed fields always count
    resume_fields: tuple[str, ...] = ()

    @staticmethod
    def check_parts(
        *,
        run: PrepareFn,
        commands: CommandsFn | None = None,
        analyse: AnalyseFn | None = None,
        plan: PlanFn | None = None,
        interim: InterimFn | None = None,
        compare: CompareFn | None = None,
        sweep: SweepLookFn | None = None,
    ) -> None:
        """For mypy alone: a declaration calls it under TYPE_CHECKING with each part it names
        (imported there), so each is checked against its signature (tests/test_kindapi.py
        holds every named part to the call); it does nothing at run time."""


def raw_settings(ladder: Ladder, where: Path | str) -> Mapping[str, Any]:
    """A kind's settings when it parses none of its own: its fields as the ladder gives them."""
    return ladder.kind_fields


@dataclass(frozen=True)
class KindSpec:
    """The ladder side of a kind: the loader checks `fields`, reads `treatments`, parses
    `settings` once (one-line LadderErrors naming `where`) and runs `validate(ladder, settings,
    where)`; the settings travel on as `Ladder.kind_settings` to `prepare`."""

    name: str
    fields: Spec  # top-level fields the kind adds to a ladder
    treatments: Callable[[dict[str, Any], Path], tuple[Treatment, ...]]
    validate: Callable[[Ladder, Any, Path | str], None]  # its cross-field rules
    defaults: Mapping[str, Any] = field(default_factory=dict)  # shared fields it defaults otherwise
    settings: Callable[[Ladder, Path | str], Any] = raw_settings  # its fields, one typed value


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
    # valid and carrying what the analysis pairs (e.g. a primary rate); None: = valid
    usable: bool | None = None
    # a rate the protocol watches for a host gone busy mid-session (higher is faster, e.g. a
    # decode rate in tokens/s); None: the kind has no such rate for this case
    rate: float | None = None


@dataclass(frozen=True)
class EndAnalysis:
    """What the session-end analysis produced, for the terminal summary and the exit status."""

    table: str = ""
    report: Path | None = None
    error: str | None = None
    headline: Mapping[str, str] | None = None  # for JUnit <properties>: name -> one line
    gates: tuple[GateVerdict, ...] = ()  # one per gate, in the order given

    def verdicts(self, gates: Sequence[Gate]) -> list[GateVerdict]:
        """One verdict per gate: the kind's own; each not judged when the analysis did not
        run, or when the kind gave none for it (a gate nobody judged fails)."""
        if self.error:
            return [
                GateVerdict.unjudged(g, f"the analysis did not run ({self.error})") for g in gates
            ]
        mine = {v.gate: v for v in self.gates}
        return [
            mine.get(g) or GateVerdict.unjudged(g, "the analysis gave it no verdict") for g in gates
        ]


class KindRun(ABC):
    """One run's worth of a kind, as the protocol uses it: subclass it, write the six abstract
    methods, and override a default only where the kind has something to add.

    `prepare(ladder, settings, request)` builds it, `settings` being what the kind's
    `KindSpec.settings` parsed of the ladder when it was loaded (parsed once, handed in).
    """

    calibrates: bool = False  # whether sessions run the calibration prompt at start and end

    # -- what every kind writes ------------------------------------------------------------

    @abstractmethod
    def cases(self, plan: list[SessionSlot]) -> Sequence[Case]:
        """Every case of the plan, in run order, each with its slot and position."""

    @abstractmethod
    def prereg_lines(self, reg: Preregistration) -> list[str]:
        """Its section "Endpoints and contrasts" of preregistration.md (`reg` as
        `registration` left it)."""

    @abstractmethod
    def warm_up(self, live: LiveSession) -> WarmupFacts:
        """One short request before the first case; invalid facts set the session aside."""

    @abstractmethod
    def measure(self, live: LiveSession, case: Any) -> Outcome:
        """Measure one case on the live session, append its record(s), say what came of it."""

    @abstractmethod
    def unmeasured(self, live: LiveSession, case: Any, reason: str) -> Outcome:
        """Record a case its session could not measure (the server died, say)."""

    @abstractmethod
    def analyse(self, run_dir: Path, request: AnalysisRequest) -> EndAnalysis:
        """The session-end analysis: files under RUN/analysis/, the terminal's table."""

    # -- defaults: what a kind with nothing to add does -------------------------------------

    def keyed(self) -> dict[str, Any]:
        """What the kind adds to the keyed fields (sessions pool only when these match)."""
        return {}

    def plan_fields(self) -> dict[str, Any]:
        """What the kind adds to plan.json; an `analysis` entry is merged into its block."""
        return {}

    def preflight_items(self) -> tuple[PreflightItem, ...]:
        """Its rows of the preflight table."""
        return ()

    def registration(self, reg: Preregistration) -> Preregistration:
        """The pre-registration with what the kind defaults filled in (its multiplicity
        statement, when the ladder states none)."""
        return reg

    def before_session(self, ctx: RunContext, slot: SessionSlot, cases: Sequence[Case]) -> None:
        """Called before a session starts; raises SkipSession if it must not."""
        return None

    def session_facts(self, live: LiveSession) -> dict[str, Any]:
        """What a closing session adds to its session file (a `shakedown` dict with a one-line
        `summary` is printed once, for the first session)."""
        return {}

    def session_note(self, live: LiveSession) -> str:
        """Its word in a session's closing progress line."""
        return ""

    def properties(self, case: Any, result: Any) -> dict[str, Any]:
        """A measured case's JUnit properties beyond its session."""
        return {"valid": result.valid, **({} if result.valid else {"reason": result.reason})}

    def validate_analysis(self, request: AnalysisRequest) -> None:
        """Analysis options checked before the first server starts (the gates are parsed by
        the kind's `GateGrammar` before this; a kind without one is refused `--expect`)."""
        return None

    def finish(self, run_dir: Path, selected: Sequence[Any]) -> list[str]:
        """After the last session, analysis or not: the kind's own end files (e.g. a run
        status); returns lines for the terminal."""
        return []

    def lint_warnings(self) -> list[str]:
        """What `mtpsweep lint` says of the ladder without failing it."""
        return []

    def gate_cells(self, cases: Sequence[Case]) -> frozenset[str] | None:
        """The cells (`treatment:cell`) a gate may name when these cases run: the headline
        cells by default (None: not checked before the run)."""
        return self.stop_cells(cases)

    def stop_cells(self, cases: Sequence[Case]) -> frozenset[str] | None:
        """The headline cells (`treatment:cell`) the kind's interim analysis can give when these
        cases run: what a `[stop] cells` entry may name (None: the kind cannot say before the
        run, and the entries are not checked against the cases)."""
        del cases
        return None


@dataclass(frozen=True)
class SweepLookAt:
    """What a sweep's look asks the kind: the arms still in the run (the baseline among them),
    the look's spent two-sided level, the user's margin, the subsets that decide."""

    active: tuple[str, ...]
    alpha: float
    margin_pct: float
    subsets: tuple[str, ...] = ()  # (): every subset
    # --resume and the analysis re-take an earlier look on the records up to its cycle
    through_cycle: int | None = None


@dataclass(frozen=True)
class SweepVerdict:
    """A sweep's look: the arms that leave (each with why), and whether the sweep is settled
    (one arm left, or the best set within the margin) with the reason in words."""

    drops: tuple[tuple[str, str], ...] = ()
    settled: bool = False
    why: str = ""


# -- the parts a `Kind` names as `"module:attribute"`, typed ---------------------------------
# Each is a callback Protocol (positional-only, so a kind names its parameters as it likes).
# The registry imports a part when first named, so the type cannot ride on the string: a kind's
# declaration hands each part, imported under TYPE_CHECKING, to `Kind.check_parts`, and mypy
# checks it there (tests/test_kindapi.py checks that every part a kind names is handed over).
# They stay here, off the door: a kind writes plain typed functions.


class PrepareFn(Protocol):
    """`run`: the run side of a ladder, handed the settings its `KindSpec` parsed."""

    def __call__(self, ladder: Ladder, settings: Any, request: RunRequest, /) -> KindRun: ...


class CommandsFn(Protocol):
    """`commands`: the kind's own `mtpsweep` subcommands, added to the subparsers given."""

    def __call__(self, subparsers: Any, /) -> None: ...


class AnalyseFn(Protocol):
    """`analyse`: `mtpsweep analyse` of the kind's run directories -> an exit status."""

    def __call__(
        self, args: Namespace, runs: Sequence[Path], plans: Sequence[PlanDoc], /
    ) -> int: ...


class PlanFn(Protocol):
    """`plan`: `mtpsweep plan RUN --target-width W`, cycles to a target from a pilot."""

    def __call__(self, args: Namespace, run_dir: Path, plan: PlanDoc, /) -> int: ...


class InterimFn(Protocol):
    """`interim`: what a `[stop]` rule looks at between cycles, from the records so far,
    computed without writing: an `AnalysisResult` (its headline cells' decisions and interval
    half-widths; the look saves it once its record is in stop.json), or the cells alone."""

    def __call__(
        self, run_dir: Path, request: AnalysisRequest, /
    ) -> AnalysisResult | Sequence[CellState]: ...


class CompareFn(Protocol):
    """`compare`: `mtpsweep compare RUN_A RUN_B`, two runs' own results side by side."""

    def __call__(self, args: Namespace, runs: Sequence[Path], /) -> int: ...


class SweepLookFn(Protocol):
    """`sweep`: at a look of a `[stop]` sweep, the arms to drop and whether it is settled."""

    def __call__(
        self, run_dir: Path, request: AnalysisRequest, at: SweepLookAt, /
    ) -> SweepVerdict: ...


# A kind's parts, each `"module:attribute"` in its `Kind` (ladder and run required), with the
# type each part's attribute has (the ladder's is a `KindSpec` value, the rest are callables).
PART_TYPES: Mapping[str, type] = {
    "ladder": KindSpec,
    "run": PrepareFn,
    "commands": CommandsFn,
    "analyse": AnalyseFn,
    "plan": PlanFn,
    "interim": InterimFn,
    "compare": CompareFn,
    "sweep": SweepLookFn,
}
PARTS = tuple(PART_TYPES)
