"""The A/A calibration file a not-slower gate cites (`Calibration`, JSON, `FORMAT` versioned):
its cells' figures (`calibration.CellCalibration`), its digest against hand edits, the checks
that it holds only what `mtpsweep calibrate` writes, and its `staleness`: in one sentence, why
one no longer speaks for the host, model or time of a gate."""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from ..base.constants import INTERVAL
from ..base.fileio import BadFile, json_safe, load_json_bounded, output_problem
from ..ladder.values import MAX_CYCLES
from ..wishes.gate import MAX_MARGIN_PCT, MIN_MARGIN_PCT
from .calibration import DEFAULT_REPS, MAX_REPS, MIN_REPS, CellCalibration, Rate

FORMAT = 2  # 2: q_ratio per cell, the cycles the run had, and the file's sha256
KIND = "mtpsweep-calibration"
MAX_TEXT = 500  # characters of any text field
MAX_CALIBRATION_BYTES = 1 << 20  # a file of 32 cells is ~20 kB
FLOOR_TOLERANCE = 1e-6  # relative: a floor recomputed from the file's own components
MAX_AGE_DAYS = 30.0  # the longest a calibration may speak for a host (bounded, in days)
DEFAULT_AGE_DAYS = 7.0


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

    @staticmethod
    def this_host(placement: str) -> dict[str, str]:
        """This host as a calibration names it (the hostname, the CPU's features as the build
        cache keys them, the CPU count, the run's `placement`), and its fingerprint (sha256 of
        the rest): what `host` holds, and what `staleness` compares."""
        from ..rig.build import cpu_key  # the build cache's key, loaded only when asked

        parts = {
            "hostname": platform.node(),
            "machine": platform.machine(),
            "cpu_key": cpu_key(),
            "cpus": str(os.cpu_count() or 0),
            "placement": placement,
        }
        text = "\n".join(f"{k}={v}" for k, v in sorted(parts.items()))
        return {"fingerprint": hashlib.sha256(text.encode()).hexdigest()[:32], **parts}

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

    @classmethod
    def read(cls, path: Path) -> Calibration:
        """A calibration file, read bounded (`fileio`) and checked (`from_json`): ValueError
        naming the file and why."""
        try:
            doc = load_json_bounded(path, MAX_CALIBRATION_BYTES)
        except BadFile as exc:
            raise ValueError(f"{path} {exc}; run `mtpsweep calibrate` again") from None
        return cls.from_json(doc, str(path))

    @staticmethod
    def output_problem(path: Path, run_file: str = "") -> str | None:
        """Why a calibration may not be written to `path` (a clause), or None: it must be new or
        a calibration already, a regular file in a folder that can be written, and inside a run
        directory only its `run_file` (`fileio.output_problem`)."""
        return output_problem(
            path,
            looks_right=lambda head: f'"{KIND}"'.encode() in head,
            what="a calibration",
            run_file=run_file,
        )

    def staleness(
        self,
        *,
        host_fingerprint: str,
        model_sha256: str | None,
        now: datetime,
        max_age_days: float = DEFAULT_AGE_DAYS,
        model_id: str | None = None,
    ) -> str | None:
        """Why this calibration does not speak for a gate here (one clause), or None when fresh:
        another host, another model, or older than `max_age_days`."""
        if self.host.get("fingerprint") != host_fingerprint:
            return (
                f"it was measured on another host ({self.host.get('hostname', '?')}, fingerprint "
                f"{self.host.get('fingerprint', '?')[:12]}, not {host_fingerprint[:12]})"
            )
        if model_sha256 is not None and self.model_sha256 != model_sha256:
            return (
                f"it was measured on another model ({self.model_id}, sha256 {self.model_sha256[:12]}, "
                f"not {model_sha256[:12]})"
            )
        if model_id and self.model_id != model_id:
            return f"it was measured on another model ({self.model_id}, not {model_id})"
        try:
            made = datetime.fromisoformat(self.created_at.replace("Z", "+00:00"))
            age = (now - made).total_seconds() / 86400.0
        except (ValueError, TypeError):  # TypeError: a time without a zone
            return f"its created_at {self.created_at!r} is not a time with its zone"
        if not 0.0 <= age <= max_age_days:
            return f"it is {age:.1f} days old, beyond the {max_age_days:g} days a calibration holds"
        return None


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
    floor = c.noise.floor_pct(cal.looks[-1], cal.levels[-1])
    if not math.isclose(floor, c.noise_floor_pct, rel_tol=FLOOR_TOLERANCE):
        return (
            f"cell {c.cell!r} has noise floor {c.noise_floor_pct:g} %, but its own components "
            f"give {floor:.4g} %"
        )
    return None
