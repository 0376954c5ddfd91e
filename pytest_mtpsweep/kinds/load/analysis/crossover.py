"""Where a treatment's gain crosses zero as the load rises, with an interval (pure).

From three or more levels of one mode: the gain (log scale) per level, linearly interpolated
between adjacent levels on log2 of the level (levels usually double), and the first level at
which it changes sign from its sign at the lowest level. The interval is the bootstrap's: the
clusters (prompts for a per-request endpoint, cycles for a per-block one) are resampled once
for every level together, so the levels' correlation through shared prompts and sessions is
kept; a resample whose gains never change sign crosses "beyond the highest level", one whose
gain has the other sign already at the lowest crosses "at or below the lowest", and an end of
the interval that falls there is said so, not invented. `bench/crossover_coverage.py` measures
how often the interval holds a known crossing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ....kindapi.analysis import Resamples
from .contrast import REQUEST_ENDPOINTS, FloatArray, level_gains, request_gains

if TYPE_CHECKING:
    import pandas as pd

MIN_LEVELS = 3


@dataclass(frozen=True)
class Crossover:
    """The level where a contrast's gain crosses zero (NaN: it does not within the levels run).

    `low`/`high` are the 95 % interval's ends; -inf means "at or below the lowest level", +inf
    "beyond the highest". `gains_pct` are the point gains per level, lowest first.
    """

    treatment: str
    baseline: str
    endpoint: str
    mode: str
    labels: tuple[str, ...]
    levels: tuple[float, ...]
    gains_pct: tuple[float, ...]
    at: float
    low: float
    high: float
    crossing_share: float  # the share of resamples that cross within the levels run
    clusters: int

    @property
    def crosses(self) -> bool:
        return math.isfinite(self.at)


def first_crossing(x: FloatArray, g: FloatArray) -> float:
    """x where g first changes sign from its sign at x[0], interpolated linearly; +inf when it
    never does, -inf when g[0] is zero or not finite data (NaN where g has no finite value)."""
    ok = np.isfinite(g)
    x, g = x[ok], g[ok]
    if g.size == 0:
        return math.nan
    if g[0] == 0:
        return -math.inf
    sign = np.sign(g[0])
    for i in range(1, g.size):
        if np.sign(g[i]) != sign:
            return float(x[i - 1] + (x[i] - x[i - 1]) * g[i - 1] / (g[i - 1] - g[i]))
    return math.inf


def _crossings(x: FloatArray, gains: FloatArray, sign0: float) -> FloatArray:
    """Each resample's crossing (columns of gains: levels x boot); a resample whose lowest
    level already has the other sign than the point estimate's crossed at or below it."""
    out = np.empty(gains.shape[1])
    for j in range(gains.shape[1]):
        g = gains[:, j]
        first = g[np.isfinite(g)][:1]
        if first.size and np.sign(first[0]) != sign0:
            out[j] = -math.inf
        else:
            out[j] = first_crossing(x, g)
    return out


def _cluster_matrix(
    requests: pd.DataFrame, levels: pd.DataFrame, t: str, b: str, labels: Sequence[str], ep: str
) -> FloatArray:
    """levels x clusters of mean log gains (NaN where a cluster lacks a level)."""
    import pandas as pd

    per: dict[str, pd.Series] = {}
    for label in labels:
        if ep in REQUEST_ENDPOINTS:
            g = request_gains(requests, t, b, label, ep)
            cells = g.groupby(["prompt_id", "cycle"])["gain"].mean()
            per[label] = cells.groupby("prompt_id").mean()
        else:
            per[label] = pd.Series(level_gains(levels, t, b, label, ep), dtype="float64")
    frame = pd.DataFrame(per).T  # levels x clusters, aligned on the cluster
    out: FloatArray = frame.reindex(list(labels)).to_numpy(dtype=np.float64)
    return out


def crossover(
    requests: pd.DataFrame,
    levels: pd.DataFrame,
    t: str,
    b: str,
    mode: str,
    labels: Sequence[str],
    values: Sequence[float],
    ep: str,
    *,
    boot: int,
    seed: int,
) -> Crossover | None:
    """The crossing of one contrast's gain over one mode's levels (None under three levels)."""
    if len(labels) < MIN_LEVELS:
        return None
    m = _cluster_matrix(requests, levels, t, b, labels, ep)
    x = np.log2(np.asarray(values, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        point = np.nanmean(m, axis=1) if m.shape[1] else np.full(len(labels), np.nan)
    at = first_crossing(x, point)
    gains = tuple(100.0 * math.expm1(v) if math.isfinite(v) else math.nan for v in point)

    def made(at: float, low: float, high: float, share: float) -> Crossover:
        return Crossover(
            t,
            b,
            ep,
            mode,
            tuple(labels),
            tuple(float(v) for v in values),
            gains,
            at,
            low,
            high,
            share,
            int(m.shape[1]),
        )

    if not math.isfinite(at):
        return made(math.nan, math.nan, math.nan, 0.0)
    if m.shape[1] < 2:  # one cluster: a crossing, but nothing to resample
        return made(float(2.0**at), math.nan, math.nan, math.nan)
    idx = Resamples.indices(m.shape[1], boot, seed, f"{t}:{b}:{ep}:{mode}:crossover")
    with np.errstate(invalid="ignore"):
        means = np.nanmean(m[:, idx], axis=2)  # levels x boot
    first = point[np.isfinite(point)][0]
    cross = _crossings(x, means, float(np.sign(first)))
    cross = cross[~np.isnan(cross)]
    if cross.size == 0:
        return made(float(2.0**at), math.nan, math.nan, math.nan)
    # an order statistic, not an interpolation: the ends may be the infinite "outside" values
    lo, hi = np.quantile(cross, (0.025, 0.975), method="inverted_cdf")
    share = float(np.isfinite(cross).mean())
    return made(float(2.0**at), _level(float(lo)), _level(float(hi)), share)


def crossovers(
    requests: Any,
    levels: Any,
    pairs: Sequence[tuple[str, str]],
    modes: Mapping[str, list[str]],
    endpoint: str,
    *,
    boot: int,
    seed: int,
) -> list[Crossover]:
    """Where the headline endpoint's gain crosses zero, per contrast and mode of 3+ levels."""
    value = dict(zip(levels["level"].astype(str), levels["level_value"].astype(float), strict=True))
    out = []
    for t, b in pairs:
        for mode, labels in modes.items():
            c = crossover(
                requests,
                levels,
                t,
                b,
                mode,
                labels,
                [value[x] for x in labels],
                endpoint,
                boot=boot,
                seed=seed,
            )
            if c is not None:
                out.append(c)
    return out


def frame(crossings: Sequence[Crossover]) -> Any:
    import pandas as pd

    cols = [
        "treatment",
        "baseline",
        "endpoint",
        "mode",
        "crosses",
        "at",
        "low",
        "high",
        "crossing_share",
        "clusters",
        "labels",
        "levels",
        "gains_pct",
    ]
    rows = [
        {
            **asdict(c),
            "crosses": c.crosses,
            "labels": " ".join(c.labels),
            "levels": " ".join(f"{v:g}" for v in c.levels),
            "gains_pct": " ".join(f"{v:.2f}" for v in c.gains_pct),
        }
        for c in crossings
    ]
    return pd.DataFrame(rows, columns=cols)


def _level(log2_value: float) -> float:
    if math.isinf(log2_value) or math.isnan(log2_value):
        return log2_value
    return float(2.0**log2_value)


def sentence(c: Crossover, name: str) -> str:
    """One line for the report: where it crosses, with its interval, or that it does not."""
    unit = "concurrency" if c.mode == "closed" else "rate"
    span = f"{_num(c.levels[0])}–{_num(c.levels[-1])}"
    if not c.crosses:
        return (
            f"{c.treatment} vs {c.baseline}, {name} gain: does not cross zero within the "
            f"{unit} levels run ({span}; {_pct(c.gains_pct[0])} at the lowest, "
            f"{_pct(c.gains_pct[-1])} at the highest)"
        )
    low = f"≤ {_num(c.levels[0])}" if c.low == -math.inf else _num(c.low)
    high = f"beyond {_num(c.levels[-1])}" if c.high == math.inf else _num(c.high)
    open_both = c.low == -math.inf and c.high == math.inf
    where = ": not located, the interval spans every level run" if open_both else ""
    return (
        f"{c.treatment} vs {c.baseline}, {name} gain crosses zero at {unit} ≈ {_num(c.at)} "
        f"[{low}, {high}] (interpolated on log2 {unit}; 95 % bootstrap over "
        f"{c.clusters} clusters, {100 * c.crossing_share:.0f} % of resamples cross within "
        f"{span}){where}"
    )


def _num(v: float) -> str:
    return f"{v:.3g}"


def _pct(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:+.1f} %"
