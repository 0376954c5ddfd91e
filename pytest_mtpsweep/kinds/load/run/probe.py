"""A capacity probe on a live session: which level it runs, and the search's line after it.

The probes so far are the session's own (kept on the live session as they are measured); a
follower's first probes replay its cycle's leader, whose `search` lines are read from the
leader's records file (so a resumed run, or a follower in a later invocation, replays the same
levels). A follower whose leader has no records (deselected by `-k`) searches on its own, and
its lines say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ....kindapi.records import RunReader, schema
from ..capacity import Bracket, CapacitySettings, bracket, next_level
from ..records import SEARCH

if TYPE_CHECKING:
    from ....kindapi.run import LiveSession
    from .cases import LoadCase


def attainment(line: Mapping[str, Any]) -> float:
    """A block's share of its requests that met every SLO (a request not completed missed)."""
    good, n = line.get("good"), line.get("requests")
    ok = isinstance(good, int) and isinstance(n, int) and n > 0 and 0 <= good <= n
    return good / n if ok else 0.0  # type: ignore[operator]


def leader_levels(live: LiveSession, leader: str) -> tuple[float, ...] | None:
    """The levels the cycle's leader probed, in its order (None: it has no records here)."""

    if not (live.ctx.run_dir.path / schema.records_file(leader)).is_file():
        return None
    lines = RunReader(live.ctx.run_dir.path).session_records(leader).records
    probes = {
        int(r["probe"]): float(r["level_value"])
        for r in lines
        if r.get("record") == SEARCH
        and isinstance(r.get("probe"), int)
        and isinstance(r.get("level_value"), int | float)
        and not r.get("skipped")
    }
    return tuple(probes[k] for k in sorted(probes))


class Search:
    """The search as one probe of one session sees it."""

    def __init__(self, s: CapacitySettings, live: LiveSession, case: LoadCase) -> None:
        self.s, self.live, self.case = s, live, case
        self.own: list[tuple[float, bool]] = live.extra.setdefault("probes", [])
        if case.leader and "leader_levels" not in live.extra:
            live.extra["leader_levels"] = leader_levels(live, case.leader)
        self.replay: tuple[float, ...] | None = live.extra.get("leader_levels")

    @property
    def role(self) -> str:
        if not self.case.leader:
            return "leader"
        return "follower" if self.replay is not None else "follower without its leader's records"

    def level(self) -> float | None:
        """This probe's level: the leader's next level while replaying, else the search's."""
        done = len(self.own)
        if self.replay is not None and done < len(self.replay):
            return self.replay[done]
        return next_level(self.s, self.own)

    def now(self) -> Bracket:
        return bracket(self.s, self.own)

    def record(self, line: Mapping[str, Any]) -> dict[str, Any]:
        """After the probe's block: its attainment, whether it met the target, the bracket."""
        share = attainment(line)
        level = float(line["level_value"])
        self.own.append((level, share >= self.s.attainment))
        b = self.now()
        return {
            **{
                k: line.get(k)
                for k in (
                    "run_id",
                    "ladder",
                    "treatment",
                    "cycle",
                    "ordinal",
                    "session",
                    "level",
                    "mode",
                    "level_value",
                )
            },
            "record": SEARCH,
            "probe": self.case.probe,
            "role": self.role,
            "leader": self.case.leader or None,
            "good": line.get("good"),
            "requests": line.get("requests"),
            "attainment": share,
            "target": self.s.attainment,
            "met": share >= self.s.attainment,
            "bracket": [b.lo, b.hi],
            "done": b.done,
            "started_at": schema.utc_now_iso(),
        }

    def skip_reason(self) -> str:
        b = self.now()
        return f"the capacity search needs no probe {self.case.probe}: {b.done or 'converged'}"

    def done_line(self) -> dict[str, Any]:
        slot = self.case.slot
        b = self.now()
        return {
            "run_id": self.live.ctx.run_id,
            "treatment": slot.treatment,
            "cycle": slot.cycle,
            "ordinal": slot.ordinal,
            "session": slot.name,
            "record": SEARCH,
            "level": f"probe{self.case.probe}",
            "probe": self.case.probe,
            "role": self.role,
            "skipped": True,
            "bracket": [b.lo, b.hi],
            "done": b.done,
            "started_at": schema.utc_now_iso(),
        }
