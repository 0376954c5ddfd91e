"""A load run's records as tables (pure): its requests and its level blocks, and the per-level
figures of each treatment, pooled over cycles.

Percentiles pool the requests of every cycle of a (treatment, level): TTFT and e2e one sample
per completed request, ITL one per chunk gap (over its tokens where known), as
`loadgen.summary` does per block. Throughput is the mean over cycles of each block's figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ....kindapi.records import recordlines as rl
from ..records import (
    CONVERSATION_FIELDS,
    E2E_MS,
    GOODPUT_REQ_S,
    ITL_MEAN_MS,
    J_PER_TOKEN,
    LEVEL,
    OUTPUT_TOK_S,
    REQ_S,
    REQUEST,
    SEARCH,
    TTFT_MS,
)

if TYPE_CHECKING:
    import pandas as pd

REQUEST_COLUMNS = (
    "treatment",
    "cycle",
    "session",
    "level",
    "mode",
    "level_value",
    "block",
    "request",
    "prompt_id",
    "valid",
    TTFT_MS,
    E2E_MS,
    ITL_MEAN_MS,
    "itl_ms",
    "output_tokens",
    "queued",
    "send_lag_ms",
    "usage_status",
    *CONVERSATION_FIELDS,  # a conversation block's slot and cached tokens (kinds/load/analysis/turns.py)
)
LEVEL_COLUMNS = (
    "treatment",
    "cycle",
    "session",
    "level",
    "mode",
    "level_value",
    "block",
    "valid",
    "reason",
    "requests",
    "completed",
    OUTPUT_TOK_S,
    REQ_S,
    GOODPUT_REQ_S,
    "good",
    "queued",
    "total_slots",
    "max_in_flight",
    "lag_flag",
    "client_lag_p99_ms",
    "busy_slots_max",
    "waiting_max",
    "drafted",
    "accepted",
    "timed_out",
    "span_s",
    "energy_j",
    J_PER_TOKEN,
    "energy",
)
# Every field the tables read, with its type (recordlines' one rule): a line holding something
# else is named as unreadable by file and line, never coerced or met as a crash.
REQUIRED = ("record", "treatment", "cycle", "session", "level")
_BLOCK_TYPES = {  # the numbers bounded (recordlines' RANGES): what no run writes is set aside
    "record": rl.STR,
    "treatment": rl.NAME,
    "cycle": rl.COUNT,
    "session": rl.NAME,
    "level": rl.NAME,
    "mode": rl.STR,
    "level_value": rl.AMOUNT,
    "block": rl.COUNT,
    "valid": rl.BOOL,
    "reason": rl.STR,
}
REQUEST_TYPES = _BLOCK_TYPES | {
    "request": rl.COUNT,
    "prompt_id": rl.NAME,
    TTFT_MS: rl.MS,
    E2E_MS: rl.MS,
    ITL_MEAN_MS: rl.MS,
    "itl_ms": rl.MS_LIST,
    "output_tokens": rl.TOKENS,
    "queued": rl.BOOL,
    "send_lag_ms": rl.LAG_MS,
    "usage_status": rl.STR,
    "model": rl.STR,
    "conversation": rl.COUNT,
    "turn": rl.COUNT,
    "cached_tokens": rl.CONTEXT_TOKENS,
    "cache_status": rl.STR,
    "cache_source": rl.STR,
    "cache_reason": rl.STR,
    "prompt_tokens_total": rl.CONTEXT_TOKENS,
}
LEVEL_TYPES = _BLOCK_TYPES | {
    "requests": rl.COUNT,
    "completed": rl.COUNT,
    OUTPUT_TOK_S: rl.RATE,
    REQ_S: rl.RATE,
    GOODPUT_REQ_S: rl.RATE,
    "good": rl.COUNT,
    "queued": rl.COUNT,
    "total_slots": rl.COUNT,
    "max_in_flight": rl.COUNT,
    "lag_flag": rl.STR,
    "timed_out": rl.BOOL,
    "span_s": rl.SECONDS,
    "client_lag_ms": rl.OBJECT,
    "client_lag_ms.p99": rl.LAG_MS,
    "occupancy": rl.OBJECT,
    **{
        f"occupancy.{k}": rl.AMOUNT
        for k in ("busy_slots_max", "waiting_max", "drafted", "accepted")
    },
}
SEARCH_TYPES = {  # a capacity search's line after each probe (`probe.SEARCH`): read, not tabled
    "record": rl.STR,
    "treatment": rl.NAME,
    "cycle": rl.COUNT,
    "session": rl.NAME,
    "level": rl.NAME,
    "probe": rl.COUNT,
    "level_value": rl.AMOUNT,
    "attainment": rl.FRACTION,
    "met": rl.BOOL,
    "good": rl.COUNT,
    "requests": rl.COUNT,
}
# The session facts the report reads, bounded: a file holding a value no run writes is set aside
# and named with the unreadable lines.
SESSION_TYPES: rl.Types = {
    "ordinal": rl.COUNT,
    "cycle": rl.COUNT,
    "duration_s": rl.SECONDS,
    "load_s": rl.SECONDS,
    "host": rl.OBJECT,
    "host.span_s": rl.SECONDS,
    "host.flagged": rl.BOOL,
}
PERCENTILES = (50, 90, 99)
LATENCIES = ("ttft", "itl", "e2e")


def types_for(record: Mapping[str, Any]) -> rl.Types:
    """A line's types by what it is: a request, a level, or (anything else) its `record`
    field must say which."""
    kind = record.get("record")
    if kind == REQUEST:
        return REQUEST_TYPES
    if kind == LEVEL:
        return LEVEL_TYPES
    if kind == SEARCH:
        return SEARCH_TYPES
    return {"record": (REQUEST, LEVEL, SEARCH)}


def _level_row(r: Mapping[str, Any]) -> dict[str, Any]:
    occ = r.get("occupancy") or {}
    lag = r.get("client_lag_ms") or {}
    row = {k: r.get(k) for k in LEVEL_COLUMNS}
    row |= {
        "client_lag_p99_ms": lag.get("p99"),
        "busy_slots_max": occ.get("busy_slots_max"),
        "waiting_max": occ.get("waiting_max"),
        "drafted": occ.get("drafted"),
        "accepted": occ.get("accepted"),
    }
    return row


def frames(records: Iterable[Mapping[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(requests, levels): one row per request line and per level line; a line repeated (a
    resumed block) counts once, the last one."""
    import pandas as pd

    reqs, levels = [], []
    for r in records:
        if r.get("record") == "request":
            reqs.append({k: r.get(k) for k in REQUEST_COLUMNS})
        elif r.get("record") == "level":
            levels.append(_level_row(r))
    rq = pd.DataFrame(reqs, columns=list(REQUEST_COLUMNS))
    lv = pd.DataFrame(levels, columns=list(LEVEL_COLUMNS))
    rq = rq.drop_duplicates(["session", "level", "request"], keep="last")
    lv = lv.drop_duplicates(["session", "level"], keep="last")
    for frame in (rq, lv):
        frame["cycle"] = frame["cycle"].astype("int64")
        frame["level_value"] = frame["level_value"].astype("float64")
    return rq.reset_index(drop=True), lv.reset_index(drop=True)


def level_order(levels: pd.DataFrame) -> list[str]:
    """Level labels lowest first: closed loop (by concurrency), then open loop (by rate)."""
    seen = levels[["mode", "level_value", "level"]].drop_duplicates()
    seen = seen.assign(m=(seen["mode"] != "closed").astype(int)).sort_values(["m", "level_value"])
    return [str(x) for x in seen["level"]]


def _pct(values: Any, q: int) -> float:
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(np.percentile(v, q)) if v.size else float("nan")


def percentile_table(
    requests: pd.DataFrame, levels: pd.DataFrame, treatments: Sequence[str] = ()
) -> pd.DataFrame:
    """Per (treatment, level): p50/p90/p99 of TTFT, ITL and e2e over every cycle's valid
    requests, the mean throughput and goodput over cycles, requests, completed, queued; in
    the order of `treatments` (others after, by name), each lowest level first."""
    import pandas as pd

    ok = requests[requests["valid"].astype(bool)]
    rows = []
    order = level_order(levels) if len(levels) else []
    for (treatment, level), block in levels.groupby(["treatment", "level"], sort=False):
        mine = ok[(ok["treatment"] == treatment) & (ok["level"] == level)]
        every = requests[(requests["treatment"] == treatment) & (requests["level"] == level)]
        gaps = [g for lst in mine["itl_ms"] if isinstance(lst, list) for g in lst]
        row: dict[str, Any] = {
            "treatment": treatment,
            "level": level,
            "mode": block["mode"].iloc[0],
            "level_value": float(block["level_value"].iloc[0]),
            "cycles": int(block["cycle"].nunique()),
            "requests": int(block["requests"].fillna(0).sum()),
            "completed": int(block["completed"].fillna(0).sum()),
            # answered without usage: their tokens are the chunks' count (report.md says so)
            "usage_unknown": int((every["usage_status"] == "unknown").sum()),
        }
        samples = {"ttft": mine[TTFT_MS], "itl": gaps, "e2e": mine[E2E_MS]}
        for name in LATENCIES:
            for q in PERCENTILES:
                row[f"{name}_p{q}_ms"] = _pct(samples[name], q)
        for col in (OUTPUT_TOK_S, REQ_S, GOODPUT_REQ_S):
            row[col] = float(pd.to_numeric(block[col], errors="coerce").mean())
        queued = pd.to_numeric(block["queued"], errors="coerce")
        row["queued"] = int(queued.sum()) if queued.notna().any() else None
        slots = pd.to_numeric(block["total_slots"], errors="coerce").dropna()
        row["total_slots"] = int(slots.iloc[0]) if len(slots) else None
        row["lag_flagged"] = int(block["lag_flag"].notna().sum())
        row["client_lag_p99_ms"] = float(
            pd.to_numeric(block["client_lag_p99_ms"], errors="coerce").max()
        )
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    rank = {label: i for i, label in enumerate(order)}
    first = {t: i for i, t in enumerate(treatments)}
    out["_t"] = out["treatment"].map(lambda t: (first.get(t, len(first)), t))
    out["_r"] = out["level"].map(rank)
    out = out.sort_values(["_t", "_r"]).drop(columns=["_t", "_r"])
    return out.reset_index(drop=True)
