"""The authoring kind on the protocol: a case (a cell) is subject × cohort × task × repeat.

A subject is a session slot (one server session per subject: launched, or attached when
remote); its cells run in the counterbalanced order of `order.py`. A cell is measured by
running its conversation to an outcome; its turns, its conversation and its cell record are
written as they are made (`cells.py`). A test passes when the cell reached an outcome; the
outcome itself is data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ....kindapi import (
    BOOT,
    AnalysisError,
    AnalysisRequest,
    EndAnalysis,
    ExpectationError,
    KindRun,
    OptionError,
    Outcome,
    RunRequest,
    SkipSession,
)
from ....kindapi.ladder import Ladder, Preregistration, SessionSlot
from ....kindapi.records import schema
from ....kindapi.run import PreflightItem
from .. import records
from ..analysis.gates import check_names
from ..analysis.io import analyse_dir
from ..cohorts import digest as cohorts_digest
from ..cohorts import load_cohorts
from ..ladder import AuthoringSettings
from ..sandbox import probe
from ..tasks import digest as tasks_digest
from ..tasks import load_tasks
from . import cells, describe
from .budget import OutOfBudget, warmup_bound
from .measure import measure_cell, warm_up
from .order import subject_order
from .pool import CellPool
from .state import AuthoringCase, AuthoringRun
from .status import finish_run

if TYPE_CHECKING:
    from ....kindapi import Case, GateVerdict
    from ....kindapi.run import LiveSession, RunContext


class AuthoringKindRun(AuthoringRun, KindRun):
    """One authoring run on the protocol: cells measured, the end written."""

    # -- before the run ----------------------------------------------------------------

    def cases(self, plan: list[SessionSlot]) -> list[AuthoringCase]:
        order = subject_order(
            list(self.cohorts), list(self.tasks), self.settings.repeats, self.ladder.seed
        )
        return [
            AuthoringCase(slot, c, t, r, i) for slot in plan for i, (c, t, r) in enumerate(order)
        ]

    def keyed(self) -> dict[str, Any]:
        return {
            "task_set_digest": tasks_digest(tuple(self.tasks.values())),
            "cohort_set_digest": cohorts_digest(tuple(self.cohorts.values())),
            "max_turns": self.settings.max_turns,
            "checker_limits": describe.limits_text(self.settings.checker),
        }

    def plan_fields(self) -> dict[str, Any]:
        return describe.plan_fields(
            self.ladder, self.settings, tuple(self.tasks.values()), tuple(self.cohorts.values())
        )

    def preflight_items(self) -> tuple[PreflightItem, ...]:

        check = probe(self.settings.checker)
        digest = tasks_digest(tuple(self.tasks.values()))
        return (
            describe.tasks_item(digest, len(self.tasks)),
            describe.sandbox_item(check.verdict, check.reason, dict(check.isolation)),
        )

    def registration(self, reg: Preregistration) -> Preregistration:
        """Each cohort against the baseline cohort, within each subject, on four endpoints."""
        others = len([c for c in self.cohorts if c != self.ladder.baseline])
        return replace(
            reg, multiplicity=reg.multiplicity or describe.multiplicity(others, self.ladder)
        )

    def prereg_lines(self, reg: Preregistration) -> list[str]:
        return describe.prereg_lines(
            self.ladder, self.settings, reg, len(self.tasks), list(self.cohorts)
        )

    def lint_warnings(self) -> list[str]:
        """What lint says without failing: repeats that can only be copies."""
        local = [t.key for t in self.ladder.treatments if not t.attached]
        if self.ladder.temperature == 0 and self.settings.repeats > 1 and local:
            return [
                f"temperature is 0 and repeats is {self.settings.repeats}: local subject(s) "
                f"{', '.join(local)} are deterministic, so every repeat will write the same "
                "artefacts and add no information; sample (temperature = 0.7, say: each repeat "
                "gets its own seed) or use repeats = 1."
            ]
        return []

    # -- sessions and cells --------------------------------------------------------------

    def before_session(self, ctx: RunContext, slot: SessionSlot, cases: Sequence[Case]) -> None:
        st = self.run_state(ctx.run_dir.path)
        pending = [cast(AuthoringCase, c) for c in cases if not cells.is_final(st.latest.get(c.id))]
        if not pending:
            raise SkipSession(f"every selected cell of {slot.treatment} already has its outcome")
        if st.budget.refused is None and ctx.warmup:
            st.budget.allows(warmup_bound())  # the warm-up spends tokens too
        n = self.settings.cells_in_flight(slot.treatment)
        self.pools[slot.name] = CellPool(pending, n) if n > 1 and len(pending) > 1 else None
        if st.budget.refused is not None:
            for case in pending:
                self._record_cell(
                    ctx,
                    case,
                    {
                        records.OUTCOME: records.BUDGET_STOPPED,
                        "valid": True,
                        "reason": st.budget.refused,
                    },
                )
            raise OutOfBudget(
                f"{records.BUDGET_STOPPED}: {st.budget.refused}; the {len(pending)} cells of "
                f"{slot.treatment} were not run"
            )

    def warm_up(self, live: LiveSession) -> schema.WarmupFacts:

        return warm_up(self, live, self.run_state(live.ctx.run_dir.path))

    def measure(self, live: LiveSession, case: Case) -> Outcome:

        c = cast(AuthoringCase, case)
        st = self.run_state(live.ctx.run_dir.path)
        prior = st.latest.get(c.id)
        if cells.is_final(prior):
            assert prior is not None
            why = f"{c.id} has its outcome ({prior[records.OUTCOME]}) from before the resume"
            live.extra.setdefault("outcomes", {})
            return Outcome(cells.result_of(prior), skip=why)
        if st.budget.refused is not None:
            record = self._record_cell(
                live.ctx,
                c,
                {
                    records.OUTCOME: records.BUDGET_STOPPED,
                    "valid": True,
                    "reason": st.budget.refused,
                },
            )
            self._tally(live, record)
            return Outcome(
                cells.result_of(record), skip=f"{records.BUDGET_STOPPED}: {st.budget.refused}"
            )
        pool = self.pools.get(c.slot.name)
        if pool is None:
            body = measure_cell(self, live, c, st)
        else:  # this cell and the next ones in flight together; this one's result waited for
            body = pool.result(c, lambda x: measure_cell(self, live, x, st, pool.throttle))
        record = self._record_cell(live.ctx, c, body)
        self._tally(live, record)
        result = cells.result_of(record)
        if record[records.OUTCOME] == records.BUDGET_STOPPED:
            return Outcome(result, skip=f"{records.BUDGET_STOPPED}: {st.budget.refused}")
        return Outcome(result)

    def unmeasured(self, live: LiveSession, case: Case, reason: str) -> Outcome:
        record = self._record_cell(
            live.ctx,
            cast(AuthoringCase, case),
            {records.OUTCOME: None, "valid": False, "reason": reason},
        )
        self._tally(live, record)
        return Outcome(cells.result_of(record))

    def _record_cell(
        self, ctx: RunContext, case: AuthoringCase, body: dict[str, Any]
    ) -> dict[str, Any]:
        body = {"started_at": schema.utc_now_iso(), **body, "ended_at": schema.utc_now_iso()}
        record = records.authoring_record(
            self.identity(ctx, case), body, records.CELL_FIELDS, self.tail(ctx)
        )
        cells.append(ctx, records.cells_file(case.slot.name), record)
        self.run_state(ctx.run_dir.path).latest[case.id] = record
        return record

    def _tally(self, live: LiveSession, record: dict[str, Any]) -> None:
        counts = live.extra.setdefault("outcomes", {})
        if not cells.is_final(record):
            live.extra["incomplete"] = live.extra.get("incomplete", 0) + 1
        key = str(record.get(records.OUTCOME) or "no outcome")
        counts[key] = counts.get(key, 0) + 1
        live.extra["tokens"] = live.extra.get("tokens", 0) + int(
            (record.get(records.PROMPT_TOKENS) or 0) + (record.get(records.COMPLETION_TOKENS) or 0)
        )
        if record.get("tokens_unknown_turns"):  # its tokens are not in `tokens`: counted apart
            live.extra["tokens_unknown_cells"] = live.extra.get("tokens_unknown_cells", 0) + 1

    def session_facts(self, live: LiveSession) -> dict[str, Any]:
        # the session's end: cells still in flight finish (their requests have timeouts)
        pool = self.pools.pop(live.slot.name, None)
        flight = {"concurrency": 1}
        if pool is not None:
            pool.close()
            flight = pool.throttle.facts()
        planned = live.info.get("planned_measurements", 0)
        return {
            **flight,
            # --resume runs an incomplete session again (only its cells without an outcome)
            "complete": live.measured >= planned and not live.extra.get("incomplete"),
            "outcomes": dict(live.extra.get("outcomes", {})),
            "warmup_tokens": live.extra.get("warmup_tokens", 0),
            "tokens": live.extra.get("tokens", 0),
            "tokens_unknown_cells": live.extra.get("tokens_unknown_cells", 0),
            "sandbox": dict(live.extra.get("sandbox", {})),
        }

    # -- after the run -------------------------------------------------------------------

    def validate_analysis(self, request: AnalysisRequest) -> None:
        if request.baseline and request.baseline not in self.cohorts:
            raise OptionError(
                f"--baseline {request.baseline}: not a cohort of ladder {self.ladder.name}; use "
                f"one of {', '.join(self.cohorts)}."
            )
        self._validate_gates(request)
        s = self.settings
        for flag, given, default, field, stated in (
            ("--boot", request.boot, BOOT.default, "resamples", s.resamples),
            ("--boot-seed", request.seed, BOOT.seed, "seed", s.boot_seed),
        ):
            if field in s.contrast_stated and given not in (default, stated):
                raise OptionError(
                    f"{flag} {given}: the ladder pre-registers contrast.{field} = "
                    f"{stated}; drop {flag} or change the ladder."
                )

    def _validate_gates(self, request: AnalysisRequest) -> None:
        """Each `--expect COHORT:SUBJECT:not-slower:M` parsed and its names checked, before
        anything runs."""

        base = request.baseline or self.ladder.baseline
        for gate in request.gates:
            try:
                check_names(gate, self.cohorts, self.ladder.treatment_keys)
            except ExpectationError as exc:
                raise OptionError(f"--expect {gate}: {exc}.") from None
            if gate.treatment == base:
                raise OptionError(
                    f"--expect {gate}: {base} is the baseline cohort itself; name "
                    "a cohort to compare with it."
                )

    def bootstrap(self, request: AnalysisRequest) -> tuple[str, int, int]:
        """The baseline cohort, resamples and seed the analysis uses."""
        s = self.settings
        return (
            request.baseline or self.ladder.baseline,
            s.resamples if "resamples" in s.contrast_stated else request.boot,
            s.boot_seed if "seed" in s.contrast_stated else request.seed,
        )

    def analyse(self, run_dir: Path, request: AnalysisRequest) -> EndAnalysis:
        """The session-end analysis; a refusal is a line, never a traceback."""

        baseline, boot, seed = self.bootstrap(request)
        try:
            # report.md and report.html, from one model
            result = analyse_dir(run_dir, baseline, boot, seed, self.settings.pooled)
        except AnalysisError as exc:
            return EndAnalysis(error=str(exc))
        gates: tuple[GateVerdict, ...] = ()
        if request.gates and result.cells is not None:
            from ..analysis.gates import verdicts

            gates = verdicts(request.gates, result.cells, baseline)
        return EndAnalysis(
            table=result.headline, report=result.out_dir / schema.REPORT_MD, gates=gates
        )

    def finish(self, run_dir: Path, selected: Sequence[Case]) -> list[str]:
        planned = [
            {
                "cell": c.id,
                "subject": c.slot.treatment,
                "cohort": c.cohort,
                "task": c.task,
                "repeat": c.repeat,
                "model_id": self.ladder.model_id_of(c.slot.treatment),
            }
            for c in (cast(AuthoringCase, x) for x in selected)
        ]
        return finish_run(run_dir, planned)


def prepare(ladder: Ladder, s: AuthoringSettings, request: RunRequest) -> AuthoringKindRun:
    """Load the tasks and cohorts the ladder names (each template checked against each task)."""
    if request.prompts_dir is not None:
        raise OptionError(
            "--prompts-dir picks a decode prompt set; an authoring ladder names its tasks and "
            "cohorts through authoring_dir: drop --prompts-dir."
        )
    tasks = load_tasks(s.authoring_dir / "tasks", s.tasks)
    cohorts = load_cohorts(s.authoring_dir / "cohorts", s.cohorts, tasks)
    return AuthoringKindRun(ladder, s, tasks, cohorts)
