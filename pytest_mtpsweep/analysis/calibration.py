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

The calibration is a JSON file (`Calibration`) that a gate cites; `staleness` says, in one
sentence, why one no longer speaks for the host, model or time of a gate. Pure but for numpy.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..base.constants import INTERVAL
from ..base.fileio import BadFile, json_safe, load_json_bounded
from ..ladder.values import MAX_CYCLES
from ..wishes.gate import MAX_MARGIN_PCT, MIN_MARGIN_PCT
from .noninferiority import NONINFERIOR, NonInferiority
from .planning import Components, expected_ms, point_variances, width_from_ms
from .stats import Spread, t_quantile

FORMAT = 2  # 2: q_ratio per cell, the cycles the run had, and the file's sha256
KIND = "mtpsweep-calibration"
MAX_TEXT = 500  # characters of any text field
MAX_CALIBRATION_BYTES = 1 << 20  # a file of 32 cells is ~20 kB
FLOOR_TOLERANCE = 1e-6  # relative: a floor recomputed from the file's own components
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
    if matrix.shape[1] >= INTERVAL.session_cycles:
        spread = Spread.of_sessions([rows], [matrix])
    else:
        spread = Spread.of_prompts([rows])
    est = float(rows.mean())
    q_boot = q_ratio * t_quantile(0.5 + level / 2.0, rows.size - 1.0) if q_ratio else math.nan
    low, high = spread.interval(est, q_boot, level)
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
            got = NonInferiority.decide(
                est, low, high, margin_pct, final=i == len(looks) - 1, level=level
            )
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
    q_ratio: float = 0.0  # the bootstrap-t ratio the floor carries (`Noise.q_ratio`)

    @property
    def noise(self) -> Noise:
        return Noise(self.prompts, self.prompt_var, self.session_var, self.noise_var, self.q_ratio)


@dataclass(frozen=True)
class Calibration:
    """The calibration file a gate cites (JSON, `FORMAT` versioned)."""

    # `mtpsweep calibrate`'s bounds, as `Calibration.DEFAULT_REPS` (the module's names, too)
    DEFAULT_REPS: ClassVar[int] = DEFAULT_REPS
    MIN_REPS: ClassVar[int] = MIN_REPS
    MAX_REPS: ClassVar[int] = MAX_REPS
    DEFAULT_AGE_DAYS: ClassVar[float] = DEFAULT_AGE_DAYS

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
    cycles_run: int = 0  # the complete cycles the A/A run had, whatever it planned

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
        return {**doc, "sha256": digest(doc)}

    @classmethod
    def from_json(cls, doc: Any, where: str) -> Calibration:
        """From the file's JSON; ValueError naming the field when it is not this format, was
        changed since calibrate wrote it, or holds a value calibrate could not have written."""
        if not isinstance(doc, Mapping) or doc.get("kind") != KIND:
            raise ValueError(f"{where} is not an mtpsweep calibration file")
        if doc.get("format") != FORMAT:
            raise ValueError(
                f"{where} is calibration format {doc.get('format')!r}, not {FORMAT}; "
                "run `mtpsweep calibrate` again"
            )
        if doc.get("sha256") != digest(doc):
            raise ValueError(
                f"{where} was changed after `mtpsweep calibrate` wrote it (its sha256 does not "
                "match what it holds); run `mtpsweep calibrate` again"
            )
        try:
            cal = _parsed(doc)
            why = problem(cal)  # a value of the wrong type fails its comparison: malformed
        except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
            raise ValueError(
                f"{where} is malformed ({exc!s}); run `mtpsweep calibrate` again"
            ) from None
        if why is not None:
            raise ValueError(
                f"{where}: {why}, which `mtpsweep calibrate` never writes; run it again"
            )
        return cal


def digest(doc: Mapping[str, Any]) -> str:
    """sha256 of what the file holds but its own digest and the printed refusal: a hand edit
    shows as a mismatch."""
    body = {k: v for k, v in doc.items() if k not in ("sha256", "refusal")}
    text = json.dumps(json_safe(body), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _parsed(doc: Mapping[str, Any]) -> Calibration:
    def cell(c: Mapping[str, Any]) -> CellCalibration:
        rate = Rate(**{k: v for k, v in c["false_alarm"].items() if k != "rate"})
        return CellCalibration(**{**c, "false_alarm": rate})

    return Calibration(
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
        cells=tuple(cell(c) for c in doc["cells"]),
        cycles_run=int(doc["cycles_run"]),
    )


def _number(value: Any, low: float, high: float) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high


def problem(cal: Calibration) -> str | None:
    """What in a calibration calibrate could not have written (a clause), or None."""
    texts = [
        cal.model_id,
        cal.model_sha256,
        cal.build,
        cal.created_at,
        cal.run_dir,
        *cal.host.keys(),
        *cal.host.values(),
    ]
    if any(len(t) > MAX_TEXT for t in texts):
        return f"a text in it is longer than {MAX_TEXT} characters"
    try:
        made = datetime.fromisoformat(cal.created_at.replace("Z", "+00:00"))
    except ValueError:
        return f"its created_at {cal.created_at!r} is not a time"
    if made.utcoffset() is None:
        return f"its created_at {cal.created_at!r} has no time zone"
    if not (MIN_MARGIN_PCT < cal.margin_pct <= MAX_MARGIN_PCT):
        return f"its margin_pct {cal.margin_pct!r} is outside (0, {MAX_MARGIN_PCT:g}]"
    if not (
        INTERVAL.session_cycles <= cal.cycles_run <= MAX_CYCLES and 4 <= cal.cycles <= MAX_CYCLES
    ):
        return f"its cycles {cal.cycles} (of {cal.cycles_run} run) are outside 4-{MAX_CYCLES}"
    looks = list(cal.looks)
    if not looks or looks != sorted(set(looks)) or looks[0] < 2 or looks[-1] != cal.cycles:
        return f"its looks {looks} are not rising cycles ending at its cycles {cal.cycles}"
    if len(cal.levels) != len(looks) or not all(0 < v < 1 for v in cal.levels):
        return f"its levels {list(cal.levels)} are not one level in (0, 1) per look"
    if not cal.cells:
        return "it holds no cell"
    return next(filter(None, (_cell_problem(c, cal) for c in cal.cells)), None)


def _cell_problem(c: CellCalibration, cal: Calibration) -> str | None:
    fa = c.false_alarm
    checks = (
        (2 <= c.prompts <= 1_000_000, "prompts"),
        (INTERVAL.session_cycles <= c.cycles_run <= MAX_CYCLES, "cycles_run"),
        (
            all(_number(v, 0.0, 1e6) for v in (c.prompt_var, c.session_var, c.noise_var)),
            "variances",
        ),
        (_number(c.q_ratio, 0.0, 1e3), "q_ratio"),
        (_number(c.noise_floor_pct, 1e-9, 100.0), "noise_floor_pct"),
        (c.cycles_needed is None or 4 <= c.cycles_needed <= MAX_CYCLES, "cycles_needed"),
        (MIN_REPS <= fa.reps <= MAX_REPS and 0 <= fa.count <= fa.reps, "false_alarm"),
        (_number(fa.low, 0.0, 1.0) and _number(fa.high, fa.low, 1.0), "false_alarm"),
    )
    bad = next((name for ok, name in checks if not ok), None)
    if bad is not None:
        return f"cell {c.cell!r} has a {bad} out of bounds"
    floor = noise_floor_pct(c.noise, cal.looks[-1], cal.levels[-1])
    if not math.isclose(floor, c.noise_floor_pct, rel_tol=FLOOR_TOLERANCE):
        return (
            f"cell {c.cell!r} has noise floor {c.noise_floor_pct:g} %, but its own components "
            f"give {floor:.4g} %"
        )
    return None


def read_calibration(path: Path) -> Calibration:
    """A calibration file, read bounded (`fileio`): ValueError naming the file and why."""
    try:
        doc = load_json_bounded(path, MAX_CALIBRATION_BYTES)
    except BadFile as exc:
        raise ValueError(f"{path} {exc}; run `mtpsweep calibrate` again") from None
    return Calibration.from_json(doc, str(path))


def staleness(
    cal: Calibration,
    *,
    host_fingerprint: str,
    model_sha256: str | None,
    now: datetime,
    max_age_days: float = DEFAULT_AGE_DAYS,
    model_id: str | None = None,
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
    if model_id and cal.model_id != model_id:
        return f"it was measured on another model ({cal.model_id}, not {model_id})"
    try:
        made = datetime.fromisoformat(cal.created_at.replace("Z", "+00:00"))
        age = (now - made).total_seconds() / 86400.0
    except (ValueError, TypeError):  # TypeError: a time without a zone
        return f"its created_at {cal.created_at!r} is not a time with its zone"
    if not 0.0 <= age <= max_age_days:
        return f"it is {age:.1f} days old, beyond the {max_age_days:g} days a calibration holds"
    return None
