"""`[capacity]`: search each treatment's highest load within the SLOs, in lockstep (pure).

A capacity ladder has no level lists: every session runs *probes*, each a block at a level the
search picks from the probes before it. The search doubles from `low` until a probe's SLO
attainment (the share of its requests meeting every `[slo]` target) falls below the target, or
`high` passes; then it bisects (geometrically; whole numbers for concurrency) between the
highest level that met the target and the lowest that did not, until they are within the
tolerance. Lockstep: in every cycle the first session in the plan's order *leads* (searches on
its own probes); every other session of the cycle first probes the leader's levels in the
leader's order, on the same requests, so their attainments pair, then goes on searching from
what its own probes say until its own bracket closes. The plan's order alternates which
treatment leads (ABBA), so over a cycle pair each of two treatments leads once.

Bounded by construction: a leader runs at most `max_probes()` probes (the search's deepest
path, computed exactly), a follower at most twice that.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...kindapi import LadderError
from .loadgen.arrivals import MAX_RATE, MIN_RATE

MODES = {"concurrency": "closed", "rate": "open"}
MAX_CONCURRENCY = 4096  # as a level ladder's requests in flight (ladder.MAX_LANES)
MIN_TOLERANCE = 0.01
MAX_PROBES = 24  # a search deeper than this has bounds or a tolerance no one can afford
DEFAULTS = {"slo_attainment": 0.9, "mode": "concurrency", "tolerance": 0.25}


@dataclass(frozen=True)
class CapacitySettings:
    """The search: its target attainment, its mode and bounds, and its tolerance (relative)."""

    attainment: float
    mode: str  # closed (concurrency) or open (rate)
    low: float
    high: float
    tolerance: float

    def whole(self) -> bool:
        return self.mode == "closed"

    def closed_enough(self, lo: float, hi: float) -> bool:
        """Whether a bracket [lo, hi) is as narrow as the search goes."""
        return hi <= lo * (1.0 + self.tolerance) or (self.whole() and hi - lo <= 1)

    def max_probes(self) -> int:
        """The most probes a leader's search can take: its deepest path over every outcome."""
        return _deepest(self, ())

    def plan_entry(self) -> dict[str, Any]:
        return {
            "slo_attainment": self.attainment,
            "mode": self.mode,
            "low": self.low,
            "high": self.high,
            "tolerance": self.tolerance,
            "max_probes": self.max_probes(),
        }


@dataclass(frozen=True)
class Bracket:
    """What probes say of one session's (or one treatment's) capacity.

    `lo` met the target and `hi` did not (None: no such level); `done` is why the search
    stopped (None: it goes on)."""

    lo: float | None
    hi: float | None
    done: str | None


def bracket(s: CapacitySettings, probes: Sequence[tuple[float, bool]]) -> Bracket:
    """The bracket from (level, met) probes: `hi` the lowest level that failed, `lo` the highest
    below it that met the target (a noisy non-monotone probe above `hi` is outvoted by it)."""
    failed = [lv for lv, met in probes if not met]
    hi = min(failed) if failed else None
    passed = [lv for lv, met in probes if met and (hi is None or lv < hi)]
    lo = max(passed) if passed else None
    if hi is not None and hi <= s.low:
        return Bracket(lo, hi, f"below the lowest level: {_num(s.low)} missed the target")
    if lo is not None and lo >= s.high:
        return Bracket(lo, hi, f"at or above the highest level: {_num(s.high)} met the target")
    if lo is not None and hi is not None and s.closed_enough(lo, hi):
        return Bracket(lo, hi, f"bracketed: {_num(lo)} met the target, {_num(hi)} did not")
    return Bracket(lo, hi, None)


def next_level(s: CapacitySettings, probes: Sequence[tuple[float, bool]]) -> float | None:
    """The level of the next probe, or None when the bracket is closed."""
    b = bracket(s, probes)
    if b.done is not None:
        return None
    if b.lo is None and b.hi is None:
        return s.low
    if b.hi is None:  # still doubling
        assert b.lo is not None
        return _fit(s, min(s.high, b.lo * 2.0))
    if b.lo is None:  # the first probe failed above low (a follower's replay): go down
        return _fit(s, max(s.low, b.hi / 2.0))
    mid = math.sqrt(b.lo * b.hi)
    # whole requests in flight; a rate to 4 figures, so labels stay readable
    mid = min(max(round(mid), b.lo + 1), b.hi - 1) if s.whole() else float(f"{mid:.4g}")
    return float(mid) if b.lo < mid < b.hi else None


def _fit(s: CapacitySettings, value: float) -> float:
    return float(round(value)) if s.whole() else float(value)


def _deepest(s: CapacitySettings, probes: tuple[tuple[float, bool], ...]) -> int:
    level = next_level(s, probes)
    if level is None or len(probes) >= MAX_PROBES:
        return len(probes)
    return max(_deepest(s, (*probes, (level, met))) for met in (True, False))


def _num(v: float) -> str:
    return f"{v:g}"


def parse(raw: Any, where: Path | str) -> CapacitySettings | None:
    """`[capacity]` read and checked whole (None when the ladder has none)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise LadderError(f"{where}: field 'capacity' must be a table; write [capacity].")
    known = {"slo_attainment", "mode", "low", "high", "tolerance"}
    extra = sorted(set(raw) - known)
    if extra:
        raise LadderError(
            f"{where}: [capacity] has unknown field(s) {', '.join(extra)}; it takes "
            f"{', '.join(sorted(known))}."
        )
    f = {**DEFAULTS, **raw}
    mode = f["mode"]
    if mode not in MODES:
        raise LadderError(f"{where}: capacity.mode is {mode!r}; use 'concurrency' or 'rate'.")
    target = _number(f["slo_attainment"], "slo_attainment", where)
    if not 0.0 < target < 1.0:
        raise LadderError(
            f"{where}: capacity.slo_attainment is {target!r}; use a share above 0 and below 1, "
            "e.g. 0.9 (90 % of requests meet every [slo] target): no count of requests can "
            "show a level surely at 1."
        )
    tol = _number(f["tolerance"], "tolerance", where)
    if not MIN_TOLERANCE <= tol <= 1.0:
        raise LadderError(
            f"{where}: capacity.tolerance is {tol!r}; use a relative width from "
            f"{MIN_TOLERANCE:g} to 1 (0.25: stop when the bracket's ends are within 25 %)."
        )
    top, bottom = (MAX_CONCURRENCY, 1.0) if mode == "concurrency" else (MAX_RATE, MIN_RATE)
    low = _number(f.get("low", bottom), "low", where)
    if "high" not in f:
        raise LadderError(
            f"{where}: [capacity] needs 'high', the most load to try (e.g. high = 32); the "
            "search is bounded by it."
        )
    high = _number(f["high"], "high", where)
    whole = mode == "concurrency"
    for name, v in (("low", low), ("high", high)):
        if not bottom <= v <= top or (whole and v != int(v)):
            what = "a whole number of requests in flight" if whole else "requests/s"
            raise LadderError(
                f"{where}: capacity.{name} is {v!r}; use {what} from {bottom:g} to {top:g}."
            )
    if not low < high:
        raise LadderError(
            f"{where}: capacity.low ({low:g}) must be below capacity.high ({high:g}); widen "
            "the bounds."
        )
    s = CapacitySettings(target, MODES[mode], float(low), float(high), tol)
    if s.max_probes() >= MAX_PROBES:
        raise LadderError(
            f"{where}: [capacity] from {low:g} to {high:g} at tolerance {tol:g} needs more than "
            f"{MAX_PROBES} probes a session; narrow the bounds or raise the tolerance."
        )
    return s


def _number(value: Any, name: str, where: Path | str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value):
        raise LadderError(f"{where}: capacity.{name} is {value!r}; use a finite number.")
    return float(value)
