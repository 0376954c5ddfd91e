"""A capacity search's analysis (pure): attainment per level, each treatment's capacity, and
the capacity ratio with an interval that keeps the pairing.

A request *attains* when it completed and met every `[slo]` target (`itl_ms` against its mean
ITL, as goodput counts). Per treatment and level the attainment pools every cycle's probes at
that level, with a Wilson 95 % interval. The capacity's bracket is the search's rule on the
pooled shares: the lowest level that missed the target, and the highest below it that met it;
the capacity is the level where the share crosses the target, interpolated on log level between
the two. Each end's share is uncertain, so beside the search's bracket stands a 95 % one: from
the highest level whose share's Wilson lower bound still meets the target to the lowest whose
upper bound misses it. The ratio treatment / baseline is of those capacities; its interval resamples the
prompts (the clusters every treatment shares: the same prompt at the same place of every probe
block) once for all treatments and levels, so a prompt that makes both slow moves both, and
takes the 2.5 and 97.5 % points of the resampled ratios. A capacity beyond either bound is said
as a bound (">= 16"), and a ratio with it as a bound too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ....kindapi.analysis import Resamples
from ..capacity import CapacitySettings, bracket
from ..ladder import SLO_E2E, SLO_ITL, SLO_TTFT
from ..records import E2E_MS, ITL_MEAN_MS, TTFT_MS
from .contrast import FloatArray

if TYPE_CHECKING:
    import pandas as pd

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Attained:
    """One treatment at one level: requests that attained, of how many, and the interval."""

    treatment: str
    level: float
    good: int
    n: int
    share: float
    low: float
    high: float


@dataclass(frozen=True)
class Capacity:
    """One treatment's capacity: the bracket's ends (None: no such level) and the estimate
    (`censored` -1: below `lo`'s level, +1: at or above the highest probed, 0: interpolated)."""

    treatment: str
    lo: Attained | None
    hi: Attained | None
    estimate: float
    censored: int
    # the 95 % bracket: the highest level whose attainment's Wilson lower bound meets the
    # target below the lowest whose upper bound misses it (None: no probed level is that sure)
    sure_lo: float | None = None
    sure_hi: float | None = None


UNKNOWN = "unknown"  # a Ratio's `bound` when both capacities lie beyond the same end


@dataclass(frozen=True)
class Ratio:
    """Treatment / baseline capacity, with its 95 % interval (NaN: no interval), `bound`
    '>=' or '<=' when a capacity is censored, `UNKNOWN` when both are, the same way."""

    treatment: str
    baseline: str
    ratio: float
    low: float
    high: float
    bound: str
    resamples: int


def wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson score 95 % interval of k successes in n (NaN, NaN for n = 0)."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    # At 0 of n (or n of n) the two ends meet p only in exact arithmetic; rounded, the low end
    # sat 5.6e-17 above a share of 0, and the capacity figure's error bar came out negative
    # (issue 43: a first probe that missed its SLO ended the run in an INTERNALERROR).
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def attains(requests: pd.DataFrame, slo: Mapping[str, float]) -> pd.Series:
    """Per request: completed and within every SLO target."""
    ok = requests["valid"].astype(bool)
    for key, col in ((SLO_TTFT, TTFT_MS), (SLO_E2E, E2E_MS)):
        if key in slo:
            v = requests[col].astype("float64")
            ok &= v.notna() & (v <= float(slo[key]))
    if SLO_ITL in slo:
        v = requests[ITL_MEAN_MS].astype("float64")
        ok &= v.isna() | (v <= float(slo[SLO_ITL]))  # one chunk has no gap: nothing to miss
    return ok


def estimate(s: CapacitySettings, counts: Mapping[float, tuple[float, float]]) -> tuple[float, int]:
    """The capacity from per-level counts: interpolated between the bracket's ends (0), or the
    bound it lies beyond (-1: below the lowest met level, +1: at or above the highest)."""
    shares = {lv: k / n for lv, (k, n) in counts.items() if n > 0}
    b = bracket(s, [(lv, p >= s.attainment) for lv, p in shares.items()])
    if b.hi is None:
        return (b.lo if b.lo is not None else math.nan), 1
    if b.lo is None:
        return b.hi, -1
    p_lo, p_hi = shares[b.lo], shares[b.hi]
    frac = (p_lo - s.attainment) / (p_lo - p_hi) if p_lo > p_hi else 0.5
    return float(math.exp(math.log(b.lo) + frac * (math.log(b.hi) - math.log(b.lo)))), 0


def table(requests: pd.DataFrame, slo: Mapping[str, float]) -> list[Attained]:
    """Every (treatment, level) probed, pooled over cycles, with its Wilson interval."""
    frame = requests.assign(attained=attains(requests, slo))
    prompts = sorted({str(p) for p in frame["prompt_id"]})
    out = []
    for t, mine in frame.groupby("treatment", sort=False):
        for level, (k, n) in sorted(_point(*_matrices(mine, prompts)).items()):
            lo, hi = wilson(int(k), int(n))
            out.append(Attained(str(t), level, int(k), int(n), k / n if n else math.nan, lo, hi))
    return out


def capacities(s: CapacitySettings, rows: Sequence[Attained]) -> list[Capacity]:
    out = []
    for t in dict.fromkeys(r.treatment for r in rows):
        mine = {r.level: r for r in rows if r.treatment == t}
        est, cens = estimate(s, {lv: (r.good, r.n) for lv, r in mine.items()})
        b = bracket(s, [(lv, r.share >= s.attainment) for lv, r in mine.items()])
        lo = mine.get(b.lo) if b.lo is not None else None
        hi = mine.get(b.hi) if b.hi is not None else None
        missed = [lv for lv, r in mine.items() if r.high < s.attainment]
        sure_hi = min(missed) if missed else None
        met = [
            lv
            for lv, r in mine.items()
            if r.low >= s.attainment and (sure_hi is None or lv < sure_hi)
        ]
        out.append(Capacity(t, lo, hi, est, cens, max(met) if met else None, sure_hi))
    return out


def _matrices(
    frame: pd.DataFrame, prompts: Sequence[str]
) -> tuple[list[float], FloatArray, FloatArray]:
    """levels, and levels x prompts counts of attained and of all requests (one treatment)."""
    levels = sorted(float(v) for v in frame["level_value"].unique())
    col = {p: i for i, p in enumerate(prompts)}
    good = np.zeros((len(levels), len(prompts)))
    n = np.zeros((len(levels), len(prompts)))
    row = {lv: i for i, lv in enumerate(levels)}
    for lv, p, ok in zip(
        frame["level_value"], frame["prompt_id"].astype(str), frame["attained"], strict=True
    ):
        n[row[float(lv)], col[p]] += 1
        good[row[float(lv)], col[p]] += bool(ok)
    return levels, good, n


def ratios(
    s: CapacitySettings,
    requests: pd.DataFrame,
    slo: Mapping[str, float],
    pairs: Sequence[tuple[str, str]],
    *,
    boot: int,
    seed: int,
) -> list[Ratio]:
    """Each treatment's capacity over the baseline's, prompts resampled for both at once."""
    frame = requests.assign(attained=attains(requests, slo))
    prompts = sorted({str(p) for p in frame["prompt_id"]})
    idx = Resamples.indices(len(prompts), boot, seed, "capacity-ratio")
    # each resample's draw count per prompt: the weights of every treatment's requests alike
    draws = np.stack([np.bincount(row, minlength=len(prompts)) for row in idx]).astype(float)
    out = []
    for t, b in pairs:
        mats = {k: _matrices(frame[frame["treatment"] == k], prompts) for k in (t, b)}
        (et, ct), (eb, cb) = (estimate(s, _point(*mats[k])) for k in (t, b))
        bound = ratio_bound(ct, cb)
        point = et / eb if eb > 0 and bound != UNKNOWN else math.nan
        got: list[float] = []
        if not bound and prompts:
            per = {k: (lv, draws @ g.T, draws @ n.T) for k, (lv, g, n) in mats.items()}
            for j in range(boot):
                (rt, kt), (rb, kb) = (
                    estimate(
                        s, {v: (per[k][1][j, i], per[k][2][j, i]) for i, v in enumerate(per[k][0])}
                    )
                    for k in (t, b)
                )
                if kt == 0 and kb == 0 and rb > 0:
                    got.append(rt / rb)
        lo, hi = np.quantile(got, (0.025, 0.975)) if len(got) >= 20 else (math.nan, math.nan)
        out.append(Ratio(t, b, point, float(lo), float(hi), bound, len(got)))
    return out


def ratio_bound(ct: int, cb: int) -> str:
    """What a ratio of two capacities censored this way says (`censored` of each: -1 below
    the search's `low`, +1 at or above its top, 0 found): "" a ratio, ">=" or "<=" a bound
    (the treatment's held down and the baseline's held up, or the other way), `UNKNOWN` when
    both lie beyond the same end: their ratio could be anything."""
    if ct * cb > 0:
        return UNKNOWN
    if ct > 0 or cb < 0:
        return ">="
    return "<=" if (ct < 0 or cb > 0) else ""


def _point(
    levels: list[float], good: FloatArray, n: FloatArray
) -> dict[float, tuple[float, float]]:
    return {lv: (float(good[i].sum()), float(n[i].sum())) for i, lv in enumerate(levels)}


@dataclass(frozen=True)
class CapacityResult:
    """A search's analysis: its settings, the attainment table, capacities and ratios."""

    settings: CapacitySettings
    slo: Mapping[str, float]
    attained: tuple[Attained, ...]
    capacities: tuple[Capacity, ...]
    ratios: tuple[Ratio, ...]


def settings_of(entry: Mapping[str, Any]) -> CapacitySettings | None:
    """The search as plan.json states it (None: a level ladder, or an entry that cannot be read)."""
    try:
        return CapacitySettings(
            float(entry["slo_attainment"]),
            str(entry["mode"]),
            float(entry["low"]),
            float(entry["high"]),
            float(entry["tolerance"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def analyse(
    load: Mapping[str, Any],
    requests: pd.DataFrame,
    order: Sequence[str],
    pairs: Sequence[tuple[str, str]],
    *,
    boot: int,
    seed: int,
) -> CapacityResult | None:
    """The search's analysis from the plan's load entry and the request rows (None: no search)."""
    entry = load.get("capacity")
    s = settings_of(entry) if isinstance(entry, Mapping) else None
    slo = load.get("slo")
    if s is None or not isinstance(slo, Mapping) or requests.empty:
        return None
    rank = {t: i for i, t in enumerate(order)}
    rows = sorted(table(requests, slo), key=lambda r: (rank.get(r.treatment, len(rank)), r.level))
    caps = capacities(s, rows)
    return CapacityResult(
        s,
        slo,
        tuple(rows),
        tuple(caps),
        tuple(ratios(s, requests, slo, pairs, boot=boot, seed=seed)),
    )


def _share(a: Attained) -> str:
    return f"{a.share:.2f} [{a.low:.2f}, {a.high:.2f}] of {a.n}"


def _sure(c: Capacity) -> str:
    if c.sure_lo is not None and c.sure_hi is not None:
        return f"[{c.sure_lo:g}, {c.sure_hi:g}]"
    if c.sure_lo is None and c.sure_hi is None:
        return "not established: no level probed met or missed the target surely"
    if c.sure_hi is not None:
        return (
            f"at most {c.sure_hi:g} (no level probed met the target surely; more requests "
            "per probe, or cycles, would show one)"
        )
    return f"at least {c.sure_lo:g} (no level probed missed the target surely)"


def lines(r: CapacityResult) -> list[str]:
    """The headline's sentences: each treatment's capacity with its bracket, then each ratio."""
    s = r.settings
    unit = "concurrency" if s.mode == "closed" else "rate"
    targets = ", ".join(f"{k} <= {v:g}" for k, v in r.slo.items())
    out = []
    for c in r.capacities:
        head = f"{c.treatment}: capacity within the SLOs ({s.attainment:.0%} of requests {targets})"
        if c.censored > 0:
            top = c.lo.level if c.lo else s.high
            out.append(
                f"{head}: {unit} >= {top:g}, the highest level it met the target at"
                + (f" ({_share(c.lo)})" if c.lo else "")
            )
        elif c.censored < 0 and c.lo is None and (c.hi is None or c.hi.level <= s.low):
            # No level met the target: the capacity lies below the search's `low`, and the
            # first probe already says so.
            out.append(
                f"{head}: below `low` ({unit} {s.low:g}): no level probed met the target"
                + (f"; {c.hi.level:g} missed it ({_share(c.hi)})" if c.hi else "")
            )
        elif c.censored < 0:
            out.append(
                f"{head}: {unit} < {c.estimate:g}, where it already missed the target"
                + (f" ({_share(c.hi)})" if c.hi else "")
            )
        else:
            assert c.lo is not None and c.hi is not None
            out.append(
                f"{head}: {unit} ≈ {c.estimate:.3g}, between {c.lo.level:g} (met: "
                f"{_share(c.lo)}) and {c.hi.level:g} (missed: {_share(c.hi)}); 95 % "
                f"bracket: {_sure(c)}"
            )
    for q in r.ratios:
        if q.bound == UNKNOWN:
            end = (
                "below any level that met the target"
                if _side(r, q.treatment) < 0
                else "at or above the highest level probed"
            )
            out.append(
                f"{q.treatment} vs {q.baseline}: capacity ratio unknown (both capacities "
                f"lie {end}, so the search says nothing of their ratio; widen the search)"
            )
        elif q.bound:
            out.append(
                f"{q.treatment} vs {q.baseline}: capacity ratio {q.bound} {q.ratio:.3g} "
                "(a capacity lies beyond the search's bounds)"
            )
        elif math.isnan(q.low):
            out.append(
                f"{q.treatment} vs {q.baseline}: capacity ratio {q.ratio:.3g} (no "
                f"interval: {q.resamples} usable resamples)"
            )
        else:
            out.append(
                f"{q.treatment} vs {q.baseline}: capacity ratio {q.ratio:.3g} "
                f"[{q.low:.3g}, {q.high:.3g}] (95 %, the same prompts at the same levels "
                f"resampled for both; {q.resamples} resamples)"
            )
    return out


def _side(r: CapacityResult, treatment: str) -> int:
    return next((c.censored for c in r.capacities if c.treatment == treatment), 0)


def frame(r: CapacityResult) -> pd.DataFrame:
    """load_capacity.csv: the attainment table, with each treatment's bracket marked."""
    import pandas as pd

    ends = {
        (c.treatment, a.level): end
        for c in r.capacities
        for end, a in (("met", c.lo), ("missed", c.hi))
        if a is not None
    }
    est = {c.treatment: (c.estimate, c.censored) for c in r.capacities}
    sure = {c.treatment: (c.sure_lo, c.sure_hi) for c in r.capacities}
    return pd.DataFrame(
        [
            {
                "treatment": a.treatment,
                "level": a.level,
                "good": a.good,
                "n": a.n,
                "attainment": a.share,
                "ci_low": a.low,
                "ci_high": a.high,
                "bracket": ends.get((a.treatment, a.level), ""),
                "capacity": est[a.treatment][0],
                "censored": est[a.treatment][1],
                "sure_lo": sure[a.treatment][0],
                "sure_hi": sure[a.treatment][1],
            }
            for a in r.attained
        ]
    )
