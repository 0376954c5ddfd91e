"""A/A calibration of a non-inferiority gate: what a host's noise lets a gate resolve.

An A/A run measures one build as both arms, interleaved as the gate will be. Its pair log
ratios are noise alone, so their variance components (prompt, session pair, cell noise:
`planning.components`) are the host's. From them, for the gate's planned cycles:

- the noise floor: the smallest drop a one-sided test at the gate's level detects with 80 %
  power, (q_level + q_power)·SE with the estimator's own SE and df at k cycles
  (`planning.width_from_ms` at the expected mean squares); a margin below it is one the host
  cannot resolve, and the gate refuses it;
- the false-alarm rate of the margin: A/A gates simulated over the measured components through
  the published estimator (`stats.session_spread`, `stats.published_interval`) and the decision
  (`noninferiority.decide`), looks and levels as the gate's design has them; with its Wilson
  interval.

The calibration is a JSON file (`Calibration`) that a gate cites; `staleness` says, in one
sentence, why one no longer speaks for the host, model or time of a gate. Pure but for numpy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .noninferiority import NONINFERIOR, decide
from .planning import Components, expected_ms, point_variances, width_from_ms
from .stats import (
    MIN_CYCLES_FOR_SESSION,
    prompt_spread,
    published_interval,
    session_spread,
    t_quantile,
)

FORMAT = 1
KIND = "mtpsweep-calibration"
POWER = 0.80
MIN_REPS, MAX_REPS = 100, 20_000  # A/A gates simulated for the false-alarm rate
DEFAULT_REPS = 2000
MAX_AGE_DAYS = 30.0  # the longest a calibration may speak for a host (bounded, in days)
DEFAULT_AGE_DAYS = 7.0


@dataclass(frozen=True)
class Noise:
    """A cell's variance components on the log scale, and the prompts it has."""

    prompts: int
    prompt_var: float
    session_var: float
    noise_var: float
    # The A/A interval's bootstrap-t quantile over Student's t at n - 1 df (planning.pilot_ratio;
    # 0: t alone): heavy-tailed prompts widen the published interval beyond t's, and the floor
    # and the simulated gates carry that as the estimator does.
    q_ratio: float = 0.0

    @classmethod
    def of(cls, comp: Components, q_ratio: float = 0.0) -> Noise:
        v = point_variances(comp)[:, 0]
        return cls(comp.n, float(v[0]), float(v[1]), float(v[2]), q_ratio)

    def array(self) -> np.ndarray[Any, np.dtype[np.float64]]:
        return np.array([[self.prompt_var], [self.session_var], [self.noise_var]])


def _log_half(noise: Noise, cycles: int, confidence: float) -> float:
    """q·SE on the log scale at k cycles, q the estimator's quantile at this two-sided level."""
    var = noise.array()
    ms = expected_ms(var, noise.prompts, cycles)
    width = float(width_from_ms(ms, noise.prompts, cycles, 0.0, noise.q_ratio, confidence)[0])
    return math.asinh(width / 100.0)


def noise_floor_pct(noise: Noise, cycles: int, level: float = 0.90, power: float = POWER) -> float:
    """The smallest drop (percent, positive) a one-sided test at `level`'s tail detects with
    `power` at `cycles` cycles: (q_{1−α} + q_power)·SE at the estimator's df."""
    reach = _log_half(noise, cycles, level) + _log_half(noise, cycles, 2.0 * power - 1.0)
    return 100.0 * -math.expm1(-reach)


def cycles_to_resolve(
    noise: Noise, margin_pct: float, max_cycles: int, level: float = 0.90
) -> int | None:
    """The fewest even cycles from 4 (a gate's first look) whose noise floor is within the
    margin (None: not by max_cycles)."""
    for k in range(4, max_cycles + 1, 2):
        if noise_floor_pct(noise, k, level) <= margin_pct:
            return k
    return None


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
    if matrix.shape[1] >= MIN_CYCLES_FOR_SESSION:
        spread = session_spread([rows], [matrix])
    else:
        spread = prompt_spread([rows])
    est = float(rows.mean())
    q_boot = q_ratio * t_quantile(0.5 + level / 2.0, rows.size - 1.0) if q_ratio else math.nan
    low, high = published_interval(est, spread, q_boot, level)
    return tuple(100.0 * math.expm1(v) for v in (est, low, high))


def false_alarms(
    noise: Noise,
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
    n, top = noise.prompts, looks[-1]
    sd = np.sqrt(noise.array()[:, 0])
    a = sd[0] * rng.standard_normal((reps, n, 1))
    b = sd[1] * rng.standard_normal((reps, 1, top))
    e = sd[2] * rng.standard_normal((reps, n, top))
    y = a + b + e
    fails = 0
    for r in range(reps):
        for i, (k, level) in enumerate(zip(looks, levels, strict=True)):
            est, low, high = _interval(y[r, :, :k], level, noise.q_ratio)
            got = decide(est, low, high, margin_pct, final=i == len(looks) - 1, level=level)
            if got.decided or got.final:
                fails += got.outcome != NONINFERIOR
                break
    return Rate(fails, reps, *wilson(fails, reps))


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


@dataclass(frozen=True)
class Calibration:
    """The calibration file a gate cites (JSON, `FORMAT` versioned)."""

    host: Mapping[str, str]  # fingerprint and what it is made of
    model_id: str
    model_sha256: str
    build: str
    created_at: str  # ISO 8601, UTC
    margin_pct: float
    cycles: int  # the gate's planned (maximum) cycles
    looks: tuple[int, ...]
    levels: tuple[float, ...]
    run_dir: str
    cells: tuple[CellCalibration, ...] = field(default=())

    @property
    def noise_floor_pct(self) -> float:
        """The worst cell's floor: what the gate as planned can resolve."""
        return max((c.noise_floor_pct for c in self.cells), default=math.nan)

    def refusal(self) -> str | None:
        """One sentence when the margin is below what the host can resolve, else None."""
        worst = max(self.cells, key=lambda c: c.noise_floor_pct, default=None)
        if worst is None or worst.noise_floor_pct <= self.margin_pct:
            return None
        more = (
            f"{worst.cycles_needed} cycles would reach it"
            if worst.cycles_needed is not None
            else "no number of cycles within the ladder's bound reaches it: add prompts"
        )
        return (
            f"the margin {self.margin_pct:g} % is below what this host can resolve on "
            f"{worst.cell} with {self.cycles} cycles (noise floor {worst.noise_floor_pct:.2f} %"
            f" at 80 % power); widen the margin to {math.ceil(worst.noise_floor_pct * 10) / 10:g}"
            f" % or more, or plan more cycles ({more})"
        )

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc = {"format": FORMAT, "kind": KIND, **doc, "noise_floor_pct": self.noise_floor_pct}
        for cell in doc["cells"]:
            rate = cell["false_alarm"]
            rate["rate"] = rate["count"] / rate["reps"] if rate["reps"] else None
        return doc

    @classmethod
    def from_json(cls, doc: Any, where: str) -> Calibration:
        """From the file's JSON; ValueError naming the field when it is not this format."""
        if not isinstance(doc, Mapping) or doc.get("kind") != KIND:
            raise ValueError(f"{where} is not an mtpsweep calibration file")
        if doc.get("format") != FORMAT:
            raise ValueError(
                f"{where} is calibration format {doc.get('format')!r}, not {FORMAT}; "
                "run `mtpsweep calibrate` again"
            )
        try:
            cells = tuple(
                CellCalibration(**{**c, "false_alarm": Rate(**{
                    k: v for k, v in c["false_alarm"].items() if k != "rate"})})
                for c in doc["cells"]
            )  # fmt: skip
            return cls(
                host={str(k): str(v) for k, v in doc["host"].items()},
                model_id=str(doc["model_id"]),
                model_sha256=str(doc["model_sha256"]),
                build=str(doc["build"]),
                created_at=str(doc["created_at"]),
                margin_pct=float(doc["margin_pct"]),
                cycles=int(doc["cycles"]),
                looks=tuple(int(k) for k in doc["looks"]),
                levels=tuple(float(v) for v in doc["levels"]),
                run_dir=str(doc["run_dir"]),
                cells=cells,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(
                f"{where} is malformed ({exc!s}); run `mtpsweep calibrate` again"
            ) from None


def staleness(
    cal: Calibration,
    *,
    host_fingerprint: str,
    model_sha256: str | None,
    now: datetime,
    max_age_days: float = DEFAULT_AGE_DAYS,
) -> str | None:
    """Why this calibration does not speak for a gate here (one clause), or None when fresh:
    another host, another model, or older than `max_age_days`."""
    if cal.host.get("fingerprint") != host_fingerprint:
        return (
            f"it was measured on another host ({cal.host.get('hostname', '?')}, fingerprint "
            f"{cal.host.get('fingerprint', '?')[:12]}, not {host_fingerprint[:12]})"
        )
    if model_sha256 is not None and cal.model_sha256 != model_sha256:
        return (
            f"it was measured on another model ({cal.model_id}, sha256 {cal.model_sha256[:12]}, "
            f"not {model_sha256[:12]})"
        )
    try:
        made = datetime.fromisoformat(cal.created_at.replace("Z", "+00:00"))
        age = (now - made).total_seconds() / 86400.0
    except ValueError:
        return f"its created_at {cal.created_at!r} is not a time"
    if not 0.0 <= age <= max_age_days:
        return f"it is {age:.1f} days old, beyond the {max_age_days:g} days a calibration holds"
    return None
