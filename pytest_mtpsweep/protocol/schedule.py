"""The schedule: which sessions run, given --resume and the deadline (curtailment)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..base.errors import AlreadyDone, Curtailed, Decided
from ..ladder import Ladder
from ..ladder.runplan import SessionSlot, session_label
from ..ladder.values import Preregistration
from ..wishes.options import parse_deadline, parse_duration
from . import preregistration as prereg

if TYPE_CHECKING:
    from .looks import Looks


def estimate_s(done: list[tuple[float, int]], planned: int) -> float | None:
    """Seconds a session of `planned` measurements should take, from (seconds, measurements)
    of the sessions done so far; None before any session has finished."""
    rates = [sec / max(n, 1) for sec, n in done]
    return sum(rates) / len(rates) * max(planned, 1) if rates else None


def plan_drops(
    remaining: list[tuple[SessionSlot, float]],
    time_left_s: float,
    drop_order: tuple[str, ...],
    never_drop: str,
) -> list[SessionSlot]:
    """Sessions to drop, first in drop order, until the estimated rest fits the time left.

    `remaining` pairs each session still to run with its estimated seconds. The never-drop
    session is never returned; if dropping every other listed session still does not fit,
    those are all dropped and the run goes on as far as it gets.
    """
    need = sum(sec for _, sec in remaining)
    by_label = {session_label(s): (s, sec) for s, sec in remaining}
    dropped: list[SessionSlot] = []
    for label in drop_order:
        if need <= time_left_s:
            break
        if label == never_drop or label not in by_label:
            continue
        slot, sec = by_label[label]
        dropped.append(slot)
        need -= sec
    return dropped


def deadline_from(
    deadline: str | None, time_budget: str | None, now_mono: float, now_wall: dt.datetime
) -> float | None:
    """The earlier of --deadline and --time-budget as a time.monotonic() value (None: none)."""
    ends: list[float] = []
    if time_budget:
        ends.append(now_mono + parse_duration(time_budget))
    if deadline:
        at = parse_deadline(deadline, now_wall)
        ends.append(now_mono + (at - now_wall).total_seconds())
    return min(ends) if ends else None


@dataclass
class Schedule:
    """What has run and what may still run: sessions done before a resume, sessions dropped to
    meet the deadline, and the durations the estimates come from."""

    plan: list[SessionSlot]
    selected: list[SessionSlot]
    planned: dict[str, int]  # session name -> measurements selected in it
    prereg: Preregistration
    deadline: float | None = None  # time.monotonic() value
    done: set[str] = field(default_factory=set)
    dropped: dict[str, str] = field(default_factory=dict)  # session name -> reason
    durations: list[tuple[float, int]] = field(default_factory=list)
    deadline_label: str = ""  # the deadline as the user reads it (local time)
    ran: list[str] = field(default_factory=list)  # sessions filed so far, in order
    stopped_by_deadline: dict[str, Any] | None = None
    looks: Looks | None = None  # the stop rule's looks ([stop]); None: fixed cycles
    decided: dict[str, str] = field(default_factory=dict)  # session name -> why not needed
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def for_run(
        cls,
        ladder: Ladder,
        plan: list[SessionSlot],
        planned: dict[str, int],
        deadline: float | None,
        done: set[str],
    ) -> Schedule:
        """The schedule of a run whose selected sessions are those in `planned`."""
        selected = [s for s in plan if s.name in planned]
        reg = prereg.effective(ladder, plan)
        return cls(plan, selected, planned, reg, deadline=deadline, done=done)

    def check(self, slot: SessionSlot, on_drop: Callable[[dict[str, Any]], None]) -> None:
        """Before a session: AlreadyDone or Curtailed if it must not run.

        The drop order plans sessions away while the deadline is ahead; once it has passed,
        the run stops after the session that was running, whatever the drop order says.
        """
        if self.looks is not None and slot.name not in self.decided:
            k = self.looks.due(slot)
            if k is not None:
                met = self.looks.take(k)
                self._arms_left()
                if met:
                    self._stop_by_rule(k)
        if slot.name in self.decided:
            raise Decided(self.decided[slot.name])
        if slot.name in self.done:
            raise AlreadyDone(f"session {slot.name} completed in the resumed run")
        if self.deadline is not None and slot.name not in self.dropped:
            if self.clock() >= self.deadline:
                self._stop_at_deadline(slot)
                on_drop(self.curtailment_document())
            elif self._curtail(slot):
                on_drop(self.curtailment_document())
        if slot.name in self.dropped:
            raise Curtailed(self.dropped[slot.name])

    def _arms_left(self) -> None:
        """A sweep's dropped arms: their sessions after the look are not needed."""
        sweep = self.looks.sweep if self.looks is not None else None
        for d in sweep.dropped if sweep is not None else ():
            for s in self.selected:
                later = s.treatment == d.arm and s.cycle > d.after_cycle
                if later and s.name not in self.done and s.name not in self.decided:
                    self.decided[s.name] = (
                        f"not needed: {d.arm} left the sweep at look {d.look} after "
                        f"cycle {d.after_cycle} ({d.why})"
                    )

    def _stop_by_rule(self, k: int) -> None:
        assert self.looks is not None and self.looks.stopped is not None
        after = self.looks.stopped.after_cycle
        for s in self.selected:  # an arm that left keeps its own reason
            if s.cycle > after and s.name not in self.done and s.name not in self.decided:
                self.decided[s.name] = (
                    f"not needed: the stop rule was met at look {k} after cycle {after} "
                    f"({self.looks.stopped.why})"
                )

    def _still_to_run(self, current: SessionSlot) -> list[SessionSlot]:
        """The selected sessions from `current` on that are neither dropped nor done."""
        names = [s.name for s in self.plan]
        here = names.index(current.name)
        return [
            s
            for s in self.selected
            if names.index(s.name) >= here and s.name not in set(self.dropped) | self.done
        ]

    def _stop_at_deadline(self, current: SessionSlot) -> None:
        rest = self._still_to_run(current)
        after = self.ran[-1] if self.ran else None
        when = self.deadline_label or "the deadline"
        for s in rest:
            self.dropped[s.name] = (
                f"not run: the deadline ({when}) had passed, so the run stopped after "
                f"{after or 'its start'}"
            )
        self.stopped_by_deadline = {
            "deadline": when,
            "after": after,
            "not_run": [s.name for s in rest],
        }

    def record(self, duration_s: float, measured: int) -> None:
        """A finished, usable session's duration: what later estimates come from."""
        if measured:
            self.durations.append((duration_s, measured))

    def time_for(self, slot: SessionSlot) -> bool:
        """Whether the session fits before the deadline (a re-run asks this)."""
        if self.deadline is None:
            return True
        est = estimate_s(self.durations, self.planned.get(slot.name, 0))
        return est is None or self.clock() + est < self.deadline

    def _curtail(self, current: SessionSlot) -> bool:
        ahead = self._still_to_run(current)
        remaining: list[tuple[SessionSlot, float]] = []
        for s in ahead:
            est = estimate_s(self.durations, self.planned.get(s.name, 0))
            if est is None:
                return False  # nothing measured yet to estimate from
            remaining.append((s, est))
        assert self.deadline is not None
        left = self.deadline - self.clock()
        drops = plan_drops(remaining, left, self.prereg.drop_order, self.prereg.never_drop)
        for s in drops:
            self.dropped[s.name] = (
                f"curtailed: dropped {session_label(s)} (pre-registered drop order) so the run "
                f"ends by its deadline; {left:.0f} s were left"
            )
        return bool(drops)

    def curtailment_document(self) -> dict[str, Any]:
        """curtailment.json: what was dropped, why, the registered sentence, and whether the
        deadline itself stopped the run."""
        return {
            **({"deadline_stop": self.stopped_by_deadline} if self.stopped_by_deadline else {}),
            "dropped": [
                {
                    "session": s.name,
                    "treatment": s.treatment,
                    "cycle": s.cycle,
                    "reason": self.dropped[s.name],
                }
                for s in self.plan
                if s.name in self.dropped
            ],
            "sentence": self.prereg.curtailment_sentence,
            "affected_treatments": sorted(
                {s.treatment for s in self.plan if s.name in self.dropped}
            ),
        }
