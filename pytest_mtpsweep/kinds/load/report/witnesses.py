"""The load report's witnesses (pure): what the run saw beside its endpoints, as report.md's
Witnesses lines: slots against the highest concurrency, queued requests, the server's
occupancy, the drafter's totals, the client's lag, energy per token, each session's drift.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ....kindapi.report import Md
from ..records import J_PER_TOKEN

if TYPE_CHECKING:
    import pandas as pd

    from ....kindapi.records import PlanDoc

LAG = "Client lag:"  # how the witnesses' client-lag line starts (Limitations repeats a flagged one)


def _f(value: Any, digits: int = 1) -> str:
    ok = isinstance(value, int | float) and math.isfinite(value)
    return f"{value:.{digits}f}" if ok else "n/a"


SPEC_FLAGS = ("--spec-type", "--model-draft", "-md", "--spec-draft-model")


def drafting(plan: PlanDoc) -> set[str]:
    """The treatments whose server flags ask for speculative decoding."""
    return {t.key for t in plan.treatments if any(a.split("=")[0] in SPEC_FLAGS for a in t.args)}


def witness_lines(levels: pd.DataFrame, plan: PlanDoc, baseline: str) -> list[str]:
    """Slots against the highest concurrency, queued requests, the server's occupancy, the
    drafter's totals, client-lag flags."""
    load = plan.kind_fields.get("load") or {}
    closed = [lv["value"] for lv in load.get("levels", []) if lv.get("mode") == "closed"]
    highest = int(max(closed)) if closed else None
    out = []
    for t, block in levels.groupby("treatment", sort=False):
        slots = sorted({int(s) for s in block["total_slots"].dropna()})
        said = ", ".join(map(str, slots)) or "unknown (the server reports no total_slots)"
        queued = block["queued"].dropna()
        q = int(queued.sum()) if len(queued) else None
        line = f"- {Md.text(t)}: server slots {said}; highest concurrency {highest}"
        if highest is not None and slots and highest > min(slots):
            line += f" (> slots: up to {highest - min(slots)} requests in flight wait for a slot)"
        line += (
            f"; {q} request(s) queued by the client's count (sent while every slot held another)"
            if q is not None
            else "; queued requests not counted (no slot count)"
        )
        busy = block["busy_slots_max"].dropna()
        wait = block["waiting_max"].dropna()
        if len(busy):
            line += f"; /slots busy at most {int(busy.max())}"
        if len(wait):
            line += f"; /metrics waiting at most {int(wait.max())}"
        drafted, accepted = block["drafted"].dropna(), block["accepted"].dropna()
        if len(drafted) and drafted.sum() > 0:
            line += (
                f"; drafted {int(drafted.sum())} tokens, accepted {int(accepted.sum())} "
                f"({accepted.sum() / drafted.sum():.0%}, warm-ups included)"
            )
        elif len(drafted) and t in drafting(plan):
            line += (
                "; its drafter proposed no token in any block (/metrics), so no gain of "
                "this treatment here is the drafter's"
            )
        out.append(line + ".")
    flagged = levels[levels["lag_flag"].notna()]
    if len(flagged):
        records = flagged.to_dict(orient="records")
        names = Md.text(", ".join(f"{r['session']}/{r['level']}" for r in records))
        worst = flagged["client_lag_p99_ms"].max()
        out.append(
            f"- {LAG} {len(flagged)} of {len(levels)} blocks over the bound "
            f"{_f(load.get('lag_bound_ms'), 2)} ms (worst p99 "
            f"{_f(worst, 2)} ms): {names}; their latencies hold the client's delay too."
        )
    else:
        out.append(f"- {LAG} no block over the bound of {Md.text(load.get('lag_bound_ms'))} ms.")
    out.append(energy_line(levels))
    return out


def energy_line(levels: pd.DataFrame) -> str:
    """Energy per output token per treatment (NVML), or, said once, why there is none."""
    if J_PER_TOKEN not in levels or not levels[J_PER_TOKEN].notna().any():
        why = levels["energy"].dropna() if "energy" in levels else levels["treatment"].iloc[:0]
        reason = str(why.iloc[0]) if len(why) else "the records carry no energy reading"
        return f"- Energy per token: not measured ({Md.text(reason)})."
    parts = []
    for t, block in levels.groupby("treatment", sort=False):
        jpt = block[J_PER_TOKEN].dropna()
        scope = ", ".join(sorted({str(x) for x in block["energy"].dropna()}))
        parts.append(
            f"{t} {jpt.mean():.4g} J/token over {len(jpt)} blocks ({scope})"
            if len(jpt)
            else f"{t} not measured"
        )
    return (
        "- Energy per token (NVML's total-energy counter around each block, its warm-up "
        "included): " + Md.text("; ".join(parts)) + "."
    )


def session_lines(sessions: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each session's drift (calibration at start and end) and the CPU others used meanwhile."""
    out = []
    for info in sessions:
        cal, host = info.get("calibration") or {}, info.get("host") or {}
        drift = cal.get("drift_pct")
        parts = [
            f"calibration drift {drift:+.1f} %"
            if isinstance(drift, float)
            else "no calibration drift"
        ]
        other = host.get("other_cpu_pct")
        if isinstance(other, float):
            flag = " (flagged: over its threshold)" if host.get("flagged") else ""
            note = f"; {Md.text(host['note'])}" if host.get("note") else ""
            parts.append(f"other processes used {other:.0f} % of the CPU{flag}{note}")
        out.append(f"- {Md.text(info.get('session'))}: {', '.join(parts)}.")
    return out
