"""A `[stop]` sweep's looks at run time: at each look the kind names the arms surely not the
best (`Kind.sweep`); they leave the later cycles, the survivors keep their mirrored Williams
positions (a subsequence of a row and its reverse is itself mirrored), and the run stops once
the sweep is settled (one arm left, or the best set within the user's margin) or at
max_cycles. Which arm left at which look, and why, goes into stop.json (`dropped`) for the
reader's sake; `--resume` never reads it back: it re-takes the looks the run had passed on the
records up to each look's cycle (`replay`), so a hand-edited stop.json cannot drop an arm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..interface.kind import SweepLookAt, SweepVerdict
from ..ladder import Ladder
from ..state.rundocs import DroppedArm


@dataclass
class SweepLooks:
    """The arms of one sweep and those that left, asked of the kind at each look."""

    arms: tuple[str, ...]  # every treatment, the baseline among them, in ladder order
    margin_pct: float
    subsets: tuple[str, ...]  # the deciding subsets ((): every one)
    ask: Callable[[SweepLookAt], SweepVerdict]  # the kind's sweep_look on this run
    dropped: list[DroppedArm] = field(default_factory=list)
    # --resume: the looks the run had passed, re-taken (`replay`), each (settled, why)
    restored: dict[int, tuple[bool, str]] = field(default_factory=dict)

    def replay(self, looks: tuple[int, ...], confidence: tuple[float, ...], reached: int) -> None:
        """A resumed run's earlier looks, re-taken: each look the run had passed (its cycle
        below the highest cycle with a finished session; a look at that cycle is due again
        and taken as usual) on the records up to its cycle, among the arms then in the run,
        until one settles the sweep. The verdicts are kept as the looks' own."""
        for k, (cycle, conf) in enumerate(zip(looks[:-1], confidence, strict=False), start=1):
            if cycle >= reached:
                break
            settled, why = self.look(k, cycle, 1.0 - conf, through=cycle)
            self.restored[k] = (settled, why)
            if settled:
                break

    @classmethod
    def for_ladder(cls, ladder: Ladder, ask: Callable[[SweepLookAt], SweepVerdict]) -> SweepLooks:
        cells = ladder.stop.cells if ladder.stop is not None else ()
        subsets = tuple(dict.fromkeys(c.partition(":")[2] for c in cells))
        return cls(ladder.treatment_keys, ladder.analysis.margin_pct, subsets, ask)

    @property
    def active(self) -> tuple[str, ...]:
        gone = {d.arm for d in self.dropped}
        return tuple(a for a in self.arms if a not in gone)

    def look(
        self, k: int, after_cycle: int, alpha: float, through: int | None = None
    ) -> tuple[bool, str]:
        """Look k (on the records up to cycle `through`, when given): the arms that leave are
        recorded; (settled, why)."""
        if k in self.restored:
            return self.restored[k]
        at = SweepLookAt(self.active, alpha, self.margin_pct, self.subsets, through_cycle=through)
        try:
            verdict = self.ask(at)
        except Exception as exc:  # a look that cannot judge drops nobody; the run goes on
            return False, f"the sweep's look failed: {exc}"
        for arm, why in verdict.drops:
            if arm in self.active:
                self.dropped.append(DroppedArm(arm, k, after_cycle, why))
        return verdict.settled, verdict.why
