"""A conversation run per turn (pure): each treatment's TTFT by turn with its interval, the
cached prompt tokens the server reported and the share of the prompt they were, and the TTFT
gain per turn, paired by (conversation, turn) slot.

TTFT's median per (treatment, level, turn) pools every cycle's valid requests at that turn; its
interval is the distribution-free one of order statistics (the binomial's, at least 95 %),
which takes the requests as independent: they share sessions, so it is narrower than one that
counts the session. The gain per turn is the per-level contrast's own estimate
(`contrast.clustered`) on the pairs of that turn alone: request i of a treatment's block with
request i of the baseline's, prompts as the clusters.

The cached tokens are the records' judged `cached_tokens` (`loadgen.chatlevel.read_cache`):
a request whose server said none counts as unknown, never as 0, and one whose count could not
be true as invalid; both are counted per treatment under the report's Limitations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ....kindapi.analysis import to_pct
from ....kindapi.report import Md, Section, Table, Text
from ..records import TTFT_MS
from .contrast import cell_matrix, clustered, request_gains

if TYPE_CHECKING:
    import pandas as pd

    from ....kindapi.records import PlanDoc

CSV = "load_turns.csv"
PNG = "load_turns.png"
CONFIDENCE = 0.95
HEADERS = (
    "treatment",
    "level",
    "turn",
    "completed",
    "TTFT p50 ms [95% CI]",
    "cached tokens",
    "cache unknown",
    "cache invalid",
    "TTFT gain [95% CI]",
)


@dataclass(frozen=True)
class TurnReport:
    """What the analysis writes of a conversation run: the table and the report's parts."""

    table: pd.DataFrame
    headline: tuple[str, ...]  # one line per treatment and level: turn 1 against the last
    section: Section  # the report's "Per turn", its table included
    limits: tuple[str, ...]  # cached tokens unknown or invalid, per treatment


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The median's distribution-free interval [x_(l), x_(n+1-l)] with the largest l whose
    coverage 1 - 2 P(Binomial(n, 1/2) <= l - 1) is at least `confidence`; NaN under 6 values
    (no such interval reaches 95 %)."""
    x = sorted(v for v in values if math.isfinite(v))
    n = len(x)
    best = 0
    tail = 0.0
    for lo in range(1, n // 2 + 1):
        tail += math.comb(n, lo - 1) / 2.0**n  # P(B <= lo - 1)
        if 1.0 - 2.0 * tail < confidence:
            break
        best = lo
    if best == 0:
        return math.nan, math.nan
    return x[best - 1], x[n - best]


def _median(values: Any) -> float:
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(np.median(v)) if v.size else math.nan


def _gain(
    requests: pd.DataFrame, t: str, b: str, level: str, turn: int, *, boot: int, seed: int
) -> tuple[float, float, float]:
    """The TTFT gain of t over b at one turn, percent with its interval (NaN: no pair)."""

    gains = request_gains(requests[requests["turn"] == turn], t, b, level, "ttft")
    if gains.empty:
        return math.nan, math.nan, math.nan
    e = clustered(
        cell_matrix(gains)[0],
        len(gains),
        boot=boot,
        seed=seed,
        key=f"{t}:{b}:ttft:{level}:turn{turn}",
    )
    return to_pct(e.est), to_pct(e.low), to_pct(e.high)


def turn_table(
    requests: pd.DataFrame,
    treatments: Sequence[str],
    baseline: str,
    order: Sequence[str],
    *,
    boot: int,
    seed: int,
) -> pd.DataFrame:
    """One row per (treatment, level, turn), treatments in the given order, levels lowest
    first, turns ascending; the baseline's gain columns NaN."""
    import pandas as pd

    conv = requests[requests["turn"].notna()]
    rows = []
    for t in treatments:
        for level in order:
            mine = conv[(conv["treatment"] == t) & (conv["level"] == level)]
            for turn in sorted({int(k) for k in mine["turn"]}):
                at = mine[mine["turn"] == turn]
                ok = at[at["valid"].astype(bool)]
                ttft = pd.to_numeric(ok[TTFT_MS], errors="coerce").dropna().tolist()
                low, high = median_interval(ttft)
                known = at[at["cache_status"] == "ok"]
                cached = pd.to_numeric(known["cached_tokens"], errors="coerce")
                prompt = pd.to_numeric(known["prompt_tokens_total"], errors="coerce")
                both = cached.notna() & prompt.notna() & (prompt > 0)
                share = float(cached[both].sum() / prompt[both].sum()) if both.any() else math.nan
                g = (
                    (math.nan,) * 3
                    if t == baseline
                    else _gain(requests, t, baseline, level, turn, boot=boot, seed=seed)
                )
                rows.append(
                    {
                        "treatment": t,
                        "level": level,
                        "turn": turn,
                        "requests": len(at),
                        "completed": len(ok),
                        "ttft_p50_ms": _median(ttft),
                        "ttft_p50_low_ms": low,
                        "ttft_p50_high_ms": high,
                        "cached_p50": _median(cached.dropna()),
                        "prompt_p50": _median(prompt.dropna()),
                        "cached_share": share,
                        "cache_known": len(known),
                        "cache_unknown": int((at["cache_status"] == "unknown").sum()),
                        "cache_invalid": int((at["cache_status"] == "invalid").sum()),
                        "ttft_gain_pct": g[0],
                        "ttft_gain_low": g[1],
                        "ttft_gain_high": g[2],
                    }
                )
    return pd.DataFrame(rows)


def _f(value: Any, digits: int = 0) -> str:
    ok = isinstance(value, int | float) and math.isfinite(value)
    return f"{value:,.{digits}f}" if ok else "n/a"


def _interval(r: Mapping[str, Any]) -> str:
    if not math.isfinite(r["ttft_p50_low_ms"]):
        return f"{_f(r['ttft_p50_ms'])} [n/a: under 6]"
    return f"{_f(r['ttft_p50_ms'])} [{_f(r['ttft_p50_low_ms'])}, {_f(r['ttft_p50_high_ms'])}]"


def _gain_text(r: Mapping[str, Any]) -> str:
    if not math.isfinite(r["ttft_gain_pct"]):
        return "-"
    if not math.isfinite(r["ttft_gain_low"]):
        return f"{r['ttft_gain_pct']:+.1f} % [n/a]"
    return f"{r['ttft_gain_pct']:+.1f} % [{r['ttft_gain_low']:+.1f}, {r['ttft_gain_high']:+.1f}]"


def _cached(r: Mapping[str, Any]) -> str:
    """`104 of 143 (72 %)`: the median cached tokens of the median prompt, the share of all."""
    if not r["cache_known"]:
        return "unknown"
    share = f" ({r['cached_share']:.0%})" if math.isfinite(r["cached_share"]) else ""
    return f"{_f(r['cached_p50'])} of {_f(r['prompt_p50'])}{share}".replace("%)", " %)")


def headline(table: pd.DataFrame) -> tuple[str, ...]:
    """Per treatment and level: TTFT and the cache at the first turn against the last."""
    out = []
    for (t, level), rows in table.groupby(["treatment", "level"], sort=False):
        first, last = rows.iloc[0], rows.iloc[-1]
        if first["turn"] == last["turn"]:
            continue
        out.append(
            f"{t} at {level}: TTFT median {_f(first['ttft_p50_ms'])} ms at turn "
            f"{int(first['turn'])} with {_cached(first)} prompt tokens cached, "
            f"{_f(last['ttft_p50_ms'])} ms at turn {int(last['turn'])} with {_cached(last)}"
        )
    return tuple(out)


def section(table: pd.DataFrame, plan: PlanDoc, baseline: str) -> Section:
    """The report's "Per turn": what a block's conversations were, then the table."""
    load = plan.kind_fields.get("load") or {}
    c = load.get("conversation") or {}
    rows = tuple(
        (
            str(r["treatment"]),
            str(r["level"]),
            str(int(r["turn"])),
            f"{int(r['completed'])}/{int(r['requests'])}",
            _interval(r),
            _cached(r),
            str(int(r["cache_unknown"])),
            str(int(r["cache_invalid"])),
            _gain_text(r),
        )
        for r in table.to_dict(orient="records")
    )
    design = Md.text(
        f"Each block ran {c.get('conversations')} conversations of {c.get('turns')} turns "
        f"({c.get('think_time_s')} s between an answer and the next turn), every turn "
        "carrying the conversation so far after one shared system prefix of "
        f"{c.get('system_prefix_chars')} characters (about {c.get('system_prefix_tokens')} "
        f"tokens, sha256 {str(c.get('system_prefix_sha256'))[:12]}), prompt cache "
        f"{'on' if load.get('cache_prompt') else 'off'}."
    )
    reading = (
        "TTFT: the median over every cycle's completed requests at that turn, in ms, with its "
        "distribution-free 95 % interval (order statistics; it takes the requests as "
        "independent, which requests sharing a session are not). Cached: the median of the "
        "cached prompt tokens the server reported, of the median prompt, and the share of all "
        "prompt tokens cached at that turn (requests whose server said nothing are unknown, "
        f"never 0). Gain: TTFT against {Md.text(baseline)} at that turn, paired by "
        "(conversation, turn) slot, prompts as clusters."
    )
    return Section("Per turn", (Text(design), Text(reading), Table(HEADERS, rows)))


def limits(requests: pd.DataFrame) -> tuple[str, ...]:
    """Per treatment: requests whose cached tokens are unknown or invalid, and why."""
    conv = requests[requests["turn"].notna()]
    out = []
    for t, mine in conv.groupby("treatment", sort=False):
        unknown = int((mine["cache_status"] == "unknown").sum())
        bad = mine[mine["cache_status"] == "invalid"]
        if not unknown and bad.empty:
            continue
        said = f"{unknown} of {len(mine)} requests' cached tokens unknown (the server said none)"
        if len(bad):
            reasons = "; ".join(sorted({str(x) for x in bad["cache_reason"].dropna()})[:3])
            said += f", {len(bad)} invalid ({reasons})"
        out.append(f"- {Md.text(f'{t}: {said}; they are in no cached-token figure.')}")
    return tuple(out)


def analyse(
    requests: pd.DataFrame,
    plan: PlanDoc,
    treatments: Sequence[str],
    baseline: str,
    order: Sequence[str],
    *,
    boot: int,
    seed: int,
) -> TurnReport | None:
    """The per-turn report of a conversation run; None for any other run."""
    if "turn" not in requests or not requests["turn"].notna().any():
        return None
    table = turn_table(requests, treatments, baseline, order, boot=boot, seed=seed)
    if table.empty:
        return None
    return TurnReport(table, headline(table), section(table, plan, baseline), limits(requests))


def figure(table: pd.DataFrame) -> Any:
    """TTFT's median by turn (its interval as bars) and the share of the prompt cached, per
    treatment and level: a line each."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2, squeeze=False)[0]
    styles = ("-", "--", ":", "-.")
    levels = list(dict.fromkeys(table["level"]))
    series = table.groupby(["treatment", "level"], sort=False).ngroups
    n = 0
    for k, (t, mine) in enumerate(table.groupby("treatment", sort=False)):
        for j, level in enumerate(levels):
            rows = mine[mine["level"] == level]
            # each series a little apart on x, so intervals at one turn do not hide each other
            x = rows["turn"].astype(int).to_numpy() + 0.06 * (n - (series - 1) / 2)
            n += 1
            y = rows["ttft_p50_ms"].to_numpy(dtype=float)
            err = [
                y - rows["ttft_p50_low_ms"].to_numpy(dtype=float),
                rows["ttft_p50_high_ms"].to_numpy(dtype=float) - y,
            ]
            style = styles[j % len(styles)]
            left.errorbar(
                x,
                y,
                yerr=err,
                fmt=style,
                marker="o",
                color=f"C{k}",
                capsize=3,
                label=f"{t} {level}",
            )
            right.plot(
                x,
                100 * rows["cached_share"].to_numpy(dtype=float),
                style,
                marker="o",
                color=f"C{k}",
                label=f"{t} {level}",
            )
    for ax in (left, right):
        ax.set_xlabel("turn")
        ax.set_xticks(sorted({int(x) for x in table["turn"]}))
    left.set_title("TTFT median (ms), 95 % interval")
    right.set_title("prompt tokens cached (%)")
    right.set_ylim(0, 100)
    left.legend(fontsize="small")
    return fig
