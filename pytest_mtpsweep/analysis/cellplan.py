"""One headline cell's plan from a pilot (`CellPlan`): the cycles its published 95 % interval
needs to reach a half-width, with a range, by the model of `planning` (a cell whose unit is
the prompt, or the cycle: load's per-block throughput), and `mtpsweep plan`'s table of them,
shared by every kind that plans."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..base.constants import INTERVAL
from ..base.textwidth import render as table
from .planning import (
    DRAWS,
    RANGE,
    component_draws,
    components,
    cycle_seconds,
    even_cycles,
    first_reaching,
    half_width,
    pilot_ratio,
    point_variances,
    realised_ms,
    width_from_ms,
)
from .stats import FloatArray


def duration(seconds: float | None) -> str:
    """A wall time as a person reads it: 40 s, 12 min, 3.4 h; '-' when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _cycles(c: CellPlan, top: int) -> tuple[str, str]:
    if not math.isfinite(c.floor):  # no components: the note says why
        return "-", "-"
    best = str(c.cycles) if c.cycles is not None else f">{top}"
    low = str(c.low) if c.low is not None else f">{top}"
    high = str(c.high) if c.high is not None else f">{top}"
    return best, (low if low == high else f"{low}-{high}")


def _now(row: Mapping[str, object]) -> float:
    lo, hi = float(row["ci_low"]), float(row["ci_high"])  # type: ignore[arg-type]
    return (hi - lo) / 2.0 if math.isfinite(lo) and math.isfinite(hi) else math.nan


def _unplannable(cycles_run: int) -> str:
    """Why a cell without components has no plan (its note)."""
    return (
        "no pair of this treatment and the baseline yet"
        if cycles_run == 0
        else "under 2 cycles the prompts' spread and the noise are one; run a cycle pair"
        if cycles_run < 2
        else "fewer than 2 prompts have pairs in every cycle"
    )


@dataclass(frozen=True)
class CellPlan:
    """One headline cell's plan: cycles to reach the target, with its range and floor."""

    cell: str  # treatment:subset
    endpoint: str
    n_prompts: int
    pilot_cycles: int
    now: float  # the published half-width now (percent), NaN without an interval
    cycles: int | None  # None: not within max_cycles
    low: int | None  # the range's ends: None on `high` means beyond max_cycles
    high: int | None
    width_at_max: float  # predicted half-width at max_cycles
    floor: float  # the half-width no number of cycles goes below (prompts set it)
    note: str = ""

    @property
    def reachable(self) -> bool:
        return self.cycles is not None

    @classmethod
    def by_prompt(
        cls,
        cell: str,
        endpoint: str,
        matrix: FloatArray,
        row: Mapping[str, object],
        *,
        target: float,
        max_cycles: int,
        confidence: float = 0.95,
        pilot_confidence: float = 0.95,
        draws: int = DRAWS,
        seed: int = 0,
    ) -> CellPlan:
        """The plan of a cell whose unit is the prompt, from its prompts × cycles log ratios and
        its published row (`pilot_confidence`: the level that row was published at, a [stop]
        look's or 95 %)."""
        now = _now(row)
        comp = components(matrix)
        n = int(np.isfinite(matrix).any(axis=1).sum())
        cycles_run = int(np.isfinite(matrix).any(axis=0).sum())
        if comp is None:
            why = _unplannable(cycles_run)
            return cls(
                cell, endpoint, n, cycles_run, now, None, None, None, math.nan, math.nan, why
            )
        pct = float(row["pct_change"])  # type: ignore[arg-type]
        est = math.log1p(pct / 100.0) if math.isfinite(pct) and pct > -100.0 else 0.0
        ratio = pilot_ratio(row, n, pilot_confidence)
        ks = even_cycles(max_cycles)
        point = point_variances(comp)
        widths = np.stack([half_width(point, n, k, est, ratio, confidence) for k in ks], axis=-1)
        best = first_reaching(widths, ks, target)[0]
        # The range: components drawn from the pilot's chi-square intervals, then what a run of k
        # cycles would estimate with them, so it spans both the pilot's and the run's chance.
        rng = np.random.default_rng(seed)
        drawn = component_draws(comp, draws, rng)
        curves = np.stack(
            [
                width_from_ms(realised_ms(drawn, n, k, rng), n, k, est, ratio, confidence)
                for k in ks
            ],
            axis=-1,
        )
        need = first_reaching(curves, ks, target)
        low, high = np.quantile(need, RANGE, method="lower")
        floor = half_width(point, n, 10**9, est, ratio, confidence)[0]
        notes = []
        if now <= target and pilot_confidence >= confidence:
            # The run already holds it: its own interval outranks the model, which at the pilot's
            # cycles differs from it only where a component was truncated at 0.
            best, low = min(best, comp.cycles), min(low, comp.cycles)
            notes.append(f"reached: this run's interval is ±{now:.1f} %")
        if n < INTERVAL.min_prompts:
            notes.append(f"{n} prompts: no decision below {INTERVAL.min_prompts} at any cycles")
        if not math.isfinite(best) and floor > target:
            notes.append(f"the prompts' spread alone gives ±{floor:.1f} %: add prompts")
        return cls(
            cell=cell,
            endpoint=endpoint,
            n_prompts=n,
            pilot_cycles=comp.cycles,
            now=now,
            cycles=int(best) if math.isfinite(best) else None,
            low=int(low) if math.isfinite(low) else None,
            high=int(high) if math.isfinite(high) else None,
            width_at_max=float(widths[0, -1]),
            floor=float(floor),
            note="; ".join(notes),
        )

    @classmethod
    def by_cycle(
        cls,
        cell: str,
        endpoint: str,
        values: FloatArray,
        *,
        target: float,
        max_cycles: int,
        draws: int = DRAWS,
        seed: int = 0,
    ) -> CellPlan:
        """The plan of a cell whose unit is the cycle (one log gain per cycle, Student's t at
        k - 1 df, no bootstrap): SE² = s²/k, so more cycles always help and there is no floor."""
        from scipy.special import stdtrit

        v = values[np.isfinite(values)]
        k0 = int(v.size)
        if k0 < 2:
            why = "under 2 cycles there is no spread between cycles to plan from; run a cycle pair"
            return cls(cell, endpoint, k0, k0, math.nan, None, None, None, math.nan, math.nan, why)
        est, var = float(v.mean()), float(v.var(ddof=1))
        t0 = float(stdtrit(k0 - 1, 0.975))
        now = 100.0 * math.exp(est) * math.sinh(t0 * math.sqrt(var / k0))
        ks = even_cycles(max_cycles)

        def width(s2: FloatArray, k: int) -> FloatArray:
            with np.errstate(over="ignore"):
                return np.asarray(
                    100.0 * math.exp(est) * np.sinh(stdtrit(k - 1, 0.975) * np.sqrt(s2 / k))
                )

        point = np.stack([width(np.array([var]), k) for k in ks], axis=-1)
        best = first_reaching(point, ks, target)[0]
        rng = np.random.default_rng(seed)
        half, df = draws // 2, k0 - 1.0
        drawn = var * np.concatenate(
            [df / rng.chisquare(df, half), rng.chisquare(df, draws - half) / df]
        )
        curves = np.stack(
            [width(drawn * rng.chisquare(k - 1, draws) / (k - 1), k) for k in ks], axis=-1
        )
        low, high = np.quantile(first_reaching(curves, ks, target), RANGE, method="lower")
        return cls(
            cell=cell,
            endpoint=endpoint,
            n_prompts=0,  # the cycle is the unit: prompts do not enter
            pilot_cycles=k0,
            now=now,
            cycles=int(best) if math.isfinite(best) else None,
            low=int(low) if math.isfinite(low) else None,
            high=int(high) if math.isfinite(high) else None,
            width_at_max=float(point[0, -1]),
            floor=0.0,
        )

    @staticmethod
    def table(
        cells: Sequence[CellPlan],
        session_facts: Sequence[Mapping[str, object]],
        *,
        run: str,
        target: float,
        top: int,
    ) -> str:
        """The plans as `mtpsweep plan` shows them: the header, one row per cell, the summary
        lines. The pilot's cycles are its cells' most; a cycle's wall time and the sessions it is
        taken over come from the pilot's session files (`session_facts`)."""
        cycles_run = max((c.pilot_cycles for c in cells), default=0)
        per_cycle = cycle_seconds(session_facts)
        sessions = sum(1 for s in session_facts if isinstance(s.get("duration_s"), int | float))
        head = (
            f"mtpsweep plan {run}: cycles for a 95 % half-width of ±{target:g} % "
            f"(at most {top} cycles; {cycles_run} cycle(s) run; range: the central 80 % over the "
            "components' chi-square uncertainty and a run's own chance)"
        )
        return "\n".join(
            [
                head,
                _rows(cells, per_cycle, top),
                *_summary(cells, per_cycle, sessions, target, top),
            ]
        )


def _rows(cells: Sequence[CellPlan], per_cycle: float | None, top: int) -> str:
    """The table of one row per cell: its prompts, half-width now, cycles with their range,
    the wall time at `per_cycle` seconds a cycle, and its note."""
    rows = [["cell", "endpoint", "prompts", "now", "cycles", "range", "wall time", "note"]]
    for c in cells:
        best, span = _cycles(c, top)
        wall = per_cycle * c.cycles if per_cycle is not None and c.cycles is not None else None
        now = f"±{c.now:.1f} %" if math.isfinite(c.now) else "-"
        rows.append(
            [c.cell, c.endpoint, str(c.n_prompts or "-"), now, best, span, duration(wall), c.note]
        )
    return table(rows)


def _summary(
    cells: Sequence[CellPlan], per_cycle: float | None, sessions: int, target: float, top: int
) -> list[str]:
    """The lines under the table: a cycle's wall time over `sessions` session files, the cycles
    every reachable cell needs beyond the pilot's, and the cells no cycles within `top` reach."""
    cycles_run = max((c.pilot_cycles for c in cells), default=0)
    lines = []
    if per_cycle is None:
        lines.append("wall time: no session file of this run records duration_s")
    else:
        lines.append(
            f"wall time: a cycle took {duration(per_cycle)} here (mean duration_s per treatment "
            f"over {sessions} session(s), summed)"
        )
    reached = [c.cycles for c in cells if c.cycles is not None]
    if reached:
        need = max(reached)
        more = max(0, need - cycles_run)
        if more == 0:
            lines.append(f"every reachable cell: {need} cycles, which this run has")
        else:
            extra = f", about {duration(per_cycle * more)} more" if per_cycle is not None else ""
            lines.append(f"every reachable cell: {need} cycles, {more} more than this run{extra}")
    missed = [c for c in cells if c.cycles is None and math.isfinite(c.width_at_max)]
    if missed:
        said = ", ".join(f"{c.cell} (±{c.width_at_max:.1f} % at {top})" for c in missed)
        lines.append(f"cannot reach ±{target:g} % within {top} cycles: {said}")
    return lines
