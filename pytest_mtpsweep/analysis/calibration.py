"""A/A calibration of a non-inferiority gate: what a host's noise lets a gate resolve.

An A/A run measures one build as both arms, interleaved as the gate will be. Its pair log
ratios are noise alone, so their variance components (prompt, session pair, cell noise:
`planning.components`) are the host's. From them, for the gate's planned cycles:

- the noise floor: the smallest drop a one-sided test at the gate's level detects with 80 %
  power, (q_level + q_power)·SE with the estimator's own SE and df at k cycles
  (`planning.width_from_ms` at the expected mean squares); a margin below it is one the host
  cannot resolve, and the gate refuses it;
- the false-alarm rate of the margin: A/A gates simulated over the measured components through
  the published estimator (`Spread.of_sessions`, `Spread.interval`) and the decision
  (`NonInferiority.decide`), looks and levels as the gate's design has them; with its Wilson
  interval.

Each cell's figures are a `CellCalibration`; the file a gate cites is `calibration_file`'s.
Pure but for numpy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.constants import INTERVAL
from ..ladder.values import MAX_CYCLES
from .noninferiority import NONINFERIOR, NonInferiority
from .planning import components, expected_ms, pilot_ratio, point_variances, width_from_ms
from .stats import Spread, t_quantile

POWER = 0.80
MIN_REPS, MAX_REPS = 100, 20_000  # A/A gates simulated for the false-alarm rate
DEFAULT_REPS = 2000


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion k/n (95 % by default)."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if k == 0 else max(0.0, centre - half)), (
        1.0 if k == n else min(1.0, centre + half)
    )


@dataclass(frozen=True)
class Rate:
    """A simulated error rate: count, replications, and its 95 % Wilson interval."""

    count: int
    reps: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.count / self.reps if self.reps else math.nan


def _interval(
    matrix: np.ndarray[Any, np.dtype[np.float64]], level: float, q_ratio: float
) -> tuple[float, ...]:
    """The published estimator on one prompts × cycles matrix: (est, low, high) in percent,
    its bootstrap-t part carried as `q_ratio` times t at n - 1 df."""
    rows = matrix.mean(axis=1)
    if matrix.shape[1] >= INTERVAL.session_cycles:
        spread = Spread.of_sessions([rows], [matrix])
    else:
        spread = Spread.of_prompts([rows])
    est = float(rows.mean())
    q_boot = q_ratio * t_quantile(0.5 + level / 2.0, rows.size - 1.0) if q_ratio else math.nan
    low, high = spread.interval(est, q_boot, level)
    return tuple(100.0 * math.expm1(v) for v in (est, low, high))


@dataclass(frozen=True)
class Noise:
    """A cell's variance components on the log scale, the prompts it has and the complete
    cycles they were measured over; what a gate resolves over them."""

    prompts: int
    prompt_var: float
    session_var: float
    noise_var: float
    # The A/A interval's bootstrap-t quantile over Student's t at n - 1 df (planning.pilot_ratio;
    # 0: t alone): heavy-tailed prompts widen the published interval beyond t's, and the floor
    # and the simulated gates carry that as the estimator does.
    q_ratio: float = 0.0
    cycles_run: int = 0  # the complete cycles the components come from (0: not measured)

    @classmethod
    def measure(
        cls,
        matrix: np.ndarray[Any, np.dtype[np.float64]],
        row: Mapping[str, object],
        confidence: float,
    ) -> Noise | None:
        """A cell's noise from its prompts × cycles log ratios (`planning.components`) and its
        row as published at `confidence` (`planning.pilot_ratio`); None when fewer than 2
        cycles or 2 complete rows leave nothing to separate."""
        comp = components(matrix)
        if comp is None:
            return None
        v = point_variances(comp)[:, 0]
        ratio = pilot_ratio(row, comp.n, confidence)
        return cls(comp.n, float(v[0]), float(v[1]), float(v[2]), ratio, comp.cycles)

    def array(self) -> np.ndarray[Any, np.dtype[np.float64]]:
        return np.array([[self.prompt_var], [self.session_var], [self.noise_var]])

    def _log_half(self, cycles: int, confidence: float) -> float:
        """q·SE on the log scale at k cycles, q the estimator's quantile at this two-sided level."""
        var = self.array()
        ms = expected_ms(var, self.prompts, cycles)
        width = float(width_from_ms(ms, self.prompts, cycles, 0.0, self.q_ratio, confidence)[0])
        return math.asinh(width / 100.0)

    def floor_pct(self, cycles: int, level: float = 0.90, power: float = POWER) -> float:
        """The noise floor: the smallest drop (percent, positive) a one-sided test at `level`'s
        tail detects with `power` at `cycles` cycles, (q_{1−α} + q_power)·SE at the
        estimator's df."""
        reach = self._log_half(cycles, level) + self._log_half(cycles, 2.0 * power - 1.0)
        return 100.0 * -math.expm1(-reach)

    def cycles_to_resolve(
        self, margin_pct: float, max_cycles: int, level: float = 0.90
    ) -> int | None:
        """The fewest even cycles from 4 (a gate's first look) whose noise floor is within the
        margin (None: not by max_cycles)."""
        for k in range(4, max_cycles + 1, 2):
            if self.floor_pct(k, level) <= margin_pct:
                return k
        return None

    def false_alarms(
        self,
        margin_pct: float,
        looks: Sequence[int],
        levels: Sequence[float],
        *,
        reps: int = DEFAULT_REPS,
        seed: int = 0,
    ) -> Rate:
        """A/A gates simulated over these components: the share that fail (shown inferior at a
        look, or undecided at the last), stopping at the first look where the gate is decided.
        `levels`: the two-sided level of the gate's interval at each look (0.90 fixed)."""
        if not MIN_REPS <= reps <= MAX_REPS:
            raise ValueError(f"replications {reps} outside {MIN_REPS}-{MAX_REPS}")
        rng = np.random.default_rng(seed)
        n, top = self.prompts, looks[-1]
        sd = np.sqrt(self.array()[:, 0])
        a = sd[0] * rng.standard_normal((reps, n, 1))
        b = sd[1] * rng.standard_normal((reps, 1, top))
        e = sd[2] * rng.standard_normal((reps, n, top))
        y = a + b + e
        fails = 0
        for r in range(reps):
            for i, (k, level) in enumerate(zip(looks, levels, strict=True)):
                est, low, high = _interval(y[r, :, :k], level, self.q_ratio)
                got = NonInferiority.decide(
                    est, low, high, margin_pct, final=i == len(looks) - 1, level=level
                )
                if got.decided or got.final:
                    fails += got.outcome != NONINFERIOR
                    break
        return Rate(fails, reps, *wilson(fails, reps))

    def calibrated(
        self,
        cell: str,
        margin_pct: float,
        looks: Sequence[int],
        levels: Sequence[float],
        *,
        reps: int = DEFAULT_REPS,
        seed: int = 0,
    ) -> CellCalibration:
        """This A/A cell's calibration for a gate of this margin, looks and levels: the floor
        at the last look's cycles and level (as a reader recomputes it), the cycles the margin
        needs within a ladder's bound, and the simulated false alarms."""
        return CellCalibration(
            cell=cell,
            prompts=self.prompts,
            cycles_run=self.cycles_run,
            prompt_var=self.prompt_var,
            session_var=self.session_var,
            noise_var=self.noise_var,
            noise_floor_pct=self.floor_pct(looks[-1], levels[-1]),
            cycles_needed=self.cycles_to_resolve(margin_pct, MAX_CYCLES, levels[-1]),
            false_alarm=self.false_alarms(margin_pct, looks, levels, reps=reps, seed=seed),
            q_ratio=self.q_ratio,
        )


@dataclass(frozen=True)
class CellCalibration:
    """One A/A cell (`aa:prose`): its components, noise floor and false-alarm rate."""

    cell: str
    prompts: int
    cycles_run: int
    prompt_var: float
    session_var: float
    noise_var: float
    noise_floor_pct: float
    cycles_needed: int | None  # the fewest cycles whose floor is within the margin
    false_alarm: Rate
    q_ratio: float = 0.0  # the bootstrap-t ratio the floor carries (`Noise.q_ratio`)

    @property
    def noise(self) -> Noise:
        return Noise(
            self.prompts,
            self.prompt_var,
            self.session_var,
            self.noise_var,
            self.q_ratio,
            self.cycles_run,
        )
