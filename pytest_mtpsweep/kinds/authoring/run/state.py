"""What an authoring run holds: its cases (cells), its state across sessions, and the part of
the run a cell's measurement reads (`measure.py`): the settings, tasks and cohorts, and the
identity every turn and cell record starts with.

The protocol side (sessions, measuring, the end) is `authoringrun.AuthoringKindRun`, built on
this; measure.py imports only this module, so the two never import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import records
from . import cells
from .budget import Budget

if TYPE_CHECKING:
    from ....kindapi.ladder import Ladder, SessionSlot
    from ....kindapi.run import RunContext
    from ..cohorts import Cohort
    from ..ladder import AuthoringSettings
    from ..tasks import Task
    from .pool import CellPool


@dataclass(frozen=True)
class AuthoringCase:
    """One cell: a subject's session slot, a cohort, a task and a repeat, at its position."""

    slot: SessionSlot
    cohort: str
    task: str
    repeat: int
    position: int

    @property
    def id(self) -> str:
        return f"{self.slot.treatment}-{self.cohort}-{self.task}-r{self.repeat}"


@dataclass
class RunState:
    """What the run holds across sessions: the budget, the attempt, each cell's last record."""

    budget: Budget
    attempt: int
    latest: dict[str, dict[str, Any]]


class AuthoringRun:
    """One authoring run's inputs (tasks and cohorts loaded) and its records' identity."""

    def __init__(
        self,
        ladder: Ladder,
        s: AuthoringSettings,
        tasks: tuple[Task, ...],
        cohorts: tuple[Cohort, ...],
    ) -> None:
        self.ladder, self.settings = ladder, s
        self.tasks = {t.id: t for t in tasks}
        self.cohorts = {c.name: c for c in cohorts}
        self.state: RunState | None = None
        self.pools: dict[str, CellPool | None] = {}  # session -> its cells in flight together

    def run_state(self, run_dir: Path) -> RunState:
        if self.state is None:
            self.state = RunState(
                Budget(self.settings.token_budget, cells.spent(run_dir)),
                cells.attempt(run_dir),
                cells.latest(run_dir),
            )
        return self.state

    def identity(self, ctx: RunContext, case: AuthoringCase) -> dict[str, Any]:
        st = self.run_state(ctx.run_dir.path)
        return {
            "run_id": ctx.run_id,
            "ladder": self.ladder.name,
            "session": case.slot.name,
            "subject": case.slot.treatment,
            "model_id": self.ladder.model_id_of(case.slot.treatment),
            "cohort": case.cohort,
            "task": case.task,
            "repeat": case.repeat,
            "cell": case.id,
            "position": case.position,
            "attempt": st.attempt,
        }

    def tail(self, ctx: RunContext) -> dict[str, Any]:
        # the keyed fields' ladder-wide model_id must not mask the subject's own
        keyed = {k: v for k, v in ctx.keyed.items() if k not in records.CELL_IDENTITY_FIELDS}
        return {**keyed, **ctx.provenance()}
