"""A drift no single gate caught: a one-sided CUSUM on the gates' standardised estimates.

Each gate reports a percent change with an interval; z = estimate / SE, the SE read off the
interval's width at its own confidence level. A slow regression shows as a run of small
losses, each inside its gate's margin. The statistic accumulates the losses beyond an
allowance `k` and forgets gains: S_0 = 0, S_i = max(0, S_{i-1} - clip(z_i, -c, c) - k);
drift is flagged while S_i > h. Why this test (bench/history_drift.py measures it, tests/history_drift_sim.py holds the
model):

- A CUSUM is the classic sequential test for a shift in mean (Page 1954): it uses the size of
  each loss (a sign or run test throws that away: "three losses in a row" flags 79 % of
  no-change histories of 20 gates), and it restarts by itself when the gains come back.
- The scores are clipped at ±c = 1: a loss its own gate already caught is the gate's business,
  and a gate with too narrow an interval or a heavy-tailed estimate moves S by at most
  c + k. That is what keeps the false alarms under 5 % in 20 gates when every reported SE is
  √3 too small (t(3) errors), at the cost of some power at the nominal SE.
- k = 0.25 is tuned to a shift of half an SE per gate (the CUSUM's allowance is half the shift
  it looks for): −1 % a gate at a 2 % SE, the drift a single gate misses most often.
- h = 4: a history of 20 no-change gates raises a false flag 0.4 % of the time (3.4 % with
  SEs √3 too small); a −1 %-a-gate drift is flagged within 20 gates 61 % of the time, within
  50, 98 %. The false-alarm rate grows with the gates looked at: 1.7 % (11.8 %) over 50.

Pure and stdlib-only (no numpy): `mtpsweep history` imports it without the analysis stack.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

ALLOWANCE = 0.25  # k, in SEs a gate: half the shift the test is tuned to
CLIP = 1.0  # c: no single gate moves the statistic by more than c + k
THRESHOLD = 4.0  # h
NAIVE_RUN = 3  # the naive rule: this many losses in a row


@dataclass(frozen=True)
class Point:
    """One gate's estimate (percent) with the interval it reported, at its two-sided
    confidence level."""

    estimate: float
    lower: float
    upper: float
    confidence: float = 0.95


@dataclass(frozen=True)
class Drift:
    """The CUSUM over one trend, gate by gate."""

    z: tuple[float | None, ...]  # each gate's standardised estimate (None: not usable)
    statistic: tuple[float, ...]  # S after each gate (unchanged over an unusable gate)
    flagged: tuple[bool, ...]  # S > h after that gate
    starts: tuple[int | None, ...]  # per gate: where the losses S holds began (None: S = 0)

    @property
    def now(self) -> bool:
        """Drift is flagged at the latest gate."""
        return bool(self.flagged) and self.flagged[-1]

    @property
    def since(self) -> int | None:
        """Where the losses behind the latest flag began (the gate after S was last 0)."""
        return self.starts[-1] if self.now else None


def standardised(point: Point) -> float | None:
    """estimate / SE, the SE from the interval's width at its confidence level; None when the
    interval says nothing (not finite, zero or negative width, a level outside (0, 1))."""
    values = (point.estimate, point.lower, point.upper, point.confidence)
    if not all(math.isfinite(v) for v in values) or not 0 < point.confidence < 1:
        return None
    width = point.upper - point.lower
    if width <= 0:
        return None
    se = width / (2 * NormalDist().inv_cdf(0.5 + point.confidence / 2))
    return point.estimate / se


def cusum(
    z: Sequence[float | None],
    *,
    k: float = ALLOWANCE,
    clip: float = CLIP,
    h: float = THRESHOLD,
) -> Drift:
    """The one-sided (losses) CUSUM over standardised estimates in gate order."""
    s, start = 0.0, None
    stats: list[float] = []
    flags: list[bool] = []
    starts: list[int | None] = []
    for i, zi in enumerate(z):
        if zi is not None and math.isfinite(zi):
            s = max(0.0, s - max(-clip, min(clip, zi)) - k)
            start = None if s == 0 else (i if start is None else start)
        stats.append(s)
        flags.append(s > h)
        starts.append(start)
    return Drift(tuple(z), tuple(stats), tuple(flags), tuple(starts))


def drift(points: Sequence[Point | None]) -> Drift:
    """The CUSUM of a trend's gates; a gate without an interval (None) leaves S as it was."""
    return cusum([None if p is None else standardised(p) for p in points])


def naive_runs(estimates: Sequence[float], run: int = NAIVE_RUN) -> tuple[bool, ...]:
    """The naive rule, for comparison only: flagged after `run` losses in a row (it ignores
    how large each loss is against its interval; bench/history_drift.py shows its false
    alarms)."""
    out: list[bool] = []
    streak = 0
    for e in estimates:
        streak = streak + 1 if e < 0 else 0
        out.append(streak >= run)
    return tuple(out)


def sparkline(values: Sequence[float | None]) -> str:
    """One character per value, scaled between the smallest and largest (' ' for None)."""
    bars = "▁▂▃▄▅▆▇█"
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return " " * len(values)
    lo, hi = min(finite), max(finite)
    span = hi - lo
    out = []
    for v in values:
        if v is None or not math.isfinite(v):
            out.append(" ")
        else:
            out.append(bars[0 if span == 0 else round((v - lo) / span * (len(bars) - 1))])
    return "".join(out)
