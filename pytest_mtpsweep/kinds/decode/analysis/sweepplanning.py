"""Planning a sweep from a pilot: at which look each arm is expected to leave, and the sessions
and hours the sequential sweep is expected to take against the full grid (`mtpsweep plan`).

A projection, not a promise. Per deciding subset, each arm's pilot estimate against the
baseline (percent) and its standard error (the 95 % half-width over 1.96) are taken as the
truth; the standard error shrinks as sqrt(pilot cycles / cycles). An arm is expected to leave
at the first look where its gap to the best other arm, plus the look's two-sided normal
quantile times the gap's standard error (the two arms' errors added in quadrature, their
pairing ignored: a cautious projection), is below zero on every deciding subset. The run is
expected to stop at the look that leaves one arm beside the baseline, else at max_cycles.
Kind-neutral and pure: the kind hands in the pilot's numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

Z95 = NormalDist().inv_cdf(0.975)


@dataclass(frozen=True)
class ArmEstimate:
    """One arm's pilot estimate against the baseline on one subset (percent, 95 % half-width)."""

    arm: str
    subset: str
    estimate_pct: float
    half_width_pct: float


@dataclass(frozen=True)
class SweepPlan:
    """When each arm is expected to leave (None: it stays), the stop, sessions and hours."""

    leaves_after: Mapping[str, int | None]
    stop_after: int
    sessions: int
    grid_sessions: int
    session_s: float | None

    @property
    def hours(self) -> float | None:
        return None if self.session_s is None else self.sessions * self.session_s / 3600.0

    @property
    def grid_hours(self) -> float | None:
        return None if self.session_s is None else self.grid_sessions * self.session_s / 3600.0

    def lines(self, baseline: str) -> list[str]:
        """The plan in words, for `mtpsweep plan`'s output."""
        out = ["", "Sweep (projected from this pilot, its estimates taken as the truth):"]
        for arm, k in self.leaves_after.items():
            out.append(f"  {arm}: " + (f"leaves after cycle {k}" if k else "stays to the end"))
        hours = (
            f", about {self.hours:.1f} h against {self.grid_hours:.1f} h"
            if self.hours is not None and self.grid_hours is not None
            else ""
        )
        out.append(
            f"  expected stop after cycle {self.stop_after}: {self.sessions} sessions against "
            f"the full grid's {self.grid_sessions}{hours} (the baseline {baseline} runs "
            "every cycle)."
        )
        return out


def _log_se(est_pct: float, half_pct: float) -> tuple[float, float]:
    est = math.log1p(est_pct / 100.0)
    up = math.log1p((est_pct + half_pct) / 100.0)
    return est, max(up - est, 1e-12) / Z95


def plan_sweep(
    estimates: Sequence[ArmEstimate],
    *,
    arms: Sequence[str],
    baseline: str,
    pilot_cycles: int,
    looks: Sequence[int],
    confidence: Sequence[float],
    subsets: Sequence[str] = (),
    session_s: float | None = None,
) -> SweepPlan:
    """The projected sweep (see the module docstring); `arms` excludes the baseline."""
    top = looks[-1] if looks else pilot_cycles
    deciding = list(subsets) or sorted({e.subset for e in estimates})
    leaves: dict[str, int | None] = dict.fromkeys(arms)
    active = list(arms)
    stop = top
    for look, level in zip(looks, confidence, strict=True):
        if look >= top:
            break
        z = NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)
        shrink = math.sqrt(pilot_cycles / look) if look > 0 else 1.0
        going = [
            a for a in active if _surely_behind(a, active, estimates, deciding, z, shrink, baseline)
        ]
        for a in going:
            leaves[a] = look
        active = [a for a in active if a not in going]
        if len(active) <= 1:
            stop = look
            break
    sessions = sum((leaves[a] or stop) for a in arms) + stop  # the baseline runs to the stop
    grid = (len(arms) + 1) * top
    return SweepPlan(leaves, stop, sessions, grid, session_s)


def _surely_behind(
    arm: str,
    active: Sequence[str],
    estimates: Sequence[ArmEstimate],
    subsets: Sequence[str],
    z: float,
    shrink: float,
    baseline: str,
) -> bool:
    """Whether `arm` is projected surely behind the best other arm (the baseline among them) on
    every deciding subset."""
    for subset in subsets:
        by = {
            e.arm: _log_se(e.estimate_pct, e.half_width_pct)
            for e in estimates
            if e.subset == subset and math.isfinite(e.estimate_pct)
        }
        by[baseline] = (0.0, 0.0)
        if arm not in by:
            return False
        est, se = by[arm]
        others = [by[o] for o in (*active, baseline) if o != arm and o in by]
        if not others:
            return False
        best = max(others, key=lambda v: v[0])
        if est - best[0] + z * math.hypot(se, best[1]) * shrink >= 0:
            return False
    return True
