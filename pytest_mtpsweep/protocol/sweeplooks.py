"""A `[stop]` sweep's looks at run time: at each look the kind names the arms surely not the
best (`Kind.sweep`); they leave the later cycles, the survivors keep their mirrored Williams
positions (a subsequence of a row and its reverse is itself mirrored), and the run stops once
the sweep is settled (one arm left, or the best set within the user's margin) or at
max_cycles. Which arm left at which look, and why, goes into stop.json (`dropped`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..kindbase import SweepLookAt, SweepVerdict
from ..ladder import Ladder
from ..state.rundocs import DroppedArm, StopDoc


@dataclass
class SweepLooks:
    """The arms of one sweep and those that left, asked of the kind at each look."""

    arms: tuple[str, ...]  # every treatment, the baseline among them, in ladder order
    margin_pct: float
    subsets: tuple[str, ...]  # the deciding subsets ((): every one)
    ask: Callable[[SweepLookAt], SweepVerdict]  # the kind's sweep_look on this run
    dropped: list[DroppedArm] = field(default_factory=list)
    # --resume: the looks stop.json already holds, each (settled, why), kept as they were
    restored: dict[int, tuple[bool, str]] = field(default_factory=dict)

    def restore(self, doc: StopDoc) -> None:
        """A resumed run's earlier looks from stop.json: the arms that left stay gone and a
        look already taken keeps its verdict (the records since would otherwise change it)."""
        self.dropped += [d for d in doc.dropped or () if d.arm in self.arms]
        for e in doc.looks:
            self.restored[e.look] = (e.met, e.why)

    @classmethod
    def for_ladder(cls, ladder: Ladder, ask: Callable[[SweepLookAt], SweepVerdict]) -> SweepLooks:
        cells = ladder.stop.cells if ladder.stop is not None else ()
        subsets = tuple(dict.fromkeys(c.partition(":")[2] for c in cells))
        return cls(ladder.treatment_keys, ladder.analysis.margin_pct, subsets, ask)

    @property
    def active(self) -> tuple[str, ...]:
        gone = {d.arm for d in self.dropped}
        return tuple(a for a in self.arms if a not in gone)

    def look(self, k: int, after_cycle: int, alpha: float) -> tuple[bool, str]:
        """Look k: the arms that leave are recorded; (settled, why)."""
        if k in self.restored:
            return self.restored[k]
        try:
            verdict = self.ask(SweepLookAt(self.active, alpha, self.margin_pct, self.subsets))
        except Exception as exc:  # a look that cannot judge drops nobody; the run goes on
            return False, f"the sweep's look failed: {exc}"
        for arm, why in verdict.drops:
            if arm in self.active:
                self.dropped.append(DroppedArm(arm, k, after_cycle, why))
        return verdict.settled, verdict.why
