"""The row table: one line per server session, as users kept it by hand.

    # treatment cyc load s  mem MiB  alias  meas/ok/usable/fail  finish  degen  draft acc
      drift %  host %  props  n_ctx  released  note

Usable is valid and carrying a primary rate (what the pairing can use). The table fits the
terminal (long cells shortened in the middle); sessions.csv keeps every value whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base import textwidth
from .serveridentity import session_memory_mib

HEADER = (
    "#",
    "treatment",
    "cyc",
    "load s",
    "mem MiB",  # after load: GPU where NVML sees one, else the server's RSS
    "alias",
    "meas/ok/usable/fail",
    "finish",
    "degen",  # answers that were not real answers (echo, loops, control strings)
    "draft acc",
    "drift %",
    "host %",  # others' share of the CPU while the session measured; "!" over the threshold
    "props",
    "n_ctx",
    "released",
    "note",
)
# Columns that give way when the terminal is narrow, in this order and down to these widths;
# then the columns left out, in this order, while it still does not fit (sessions.csv has all).
SHRINKABLE = {"note": 16, "alias": 12, "finish": 18, "released": 8, "treatment": 9}
DROPPABLE = (
    "n_ctx",
    "props",
    "alias",
    "host %",
    "draft acc",
    "drift %",
    "load s",
    "mem MiB",
    "degen",
    "cyc",
)


def session_row(info: Mapping[str, Any]) -> dict[str, Any]:
    """The row of one closed session, from its session file's facts (also sessions.csv)."""
    mib, basis = session_memory_mib(info)
    return {
        "ordinal": info.get("ordinal"),
        "treatment": info.get("treatment"),
        "cycle": info.get("cycle"),
        "load_s": info.get("load_s"),
        "mem_after_load_mib": round(mib, 1) if mib else None,
        "mem_basis": basis if mib else None,
        "alias": info.get("alias", ""),
        "measured": info.get("measured", 0),
        "valid": info.get("valid", 0),
        "usable": info.get("usable", info.get("valid", 0)),
        "failed": info.get("failed", 0),
        "finish_reasons": info.get("finish_reasons") or {},
        "length_prompts": info.get("length_prompts", []),
        "degenerate": len(info.get("degenerate_prompts") or []),
        "draft_n": info.get("draft_n"),
        "draft_n_accepted": info.get("draft_n_accepted"),
        "calibration_drift_pct": (info.get("calibration") or {}).get("drift_pct"),
        "host_other_cpu_pct": (info.get("host") or {}).get("other_cpu_pct"),
        "host_flagged": bool((info.get("host") or {}).get("flagged")),
        "props_stable": info.get("props_stable"),
        "n_ctx": info.get("n_ctx"),
        "released": info.get("released"),
        "gpu_used_mib_after_release": info.get("gpu_used_mib_after_release"),
        "quarantined": info.get("quarantined") or "",
        "rerun": bool(info.get("rerun")),
        "host_spoiled": info.get("host_spoiled") or "",
        "error": info.get("error", ""),
    }


def _finish(row: Mapping[str, Any]) -> str:
    """`stop 14 / length 2 (prose_05, prose_07)`: the users named the few truncated prompts."""
    counts = row.get("finish_reasons") or {}
    prompts = list(row.get("length_prompts") or [])
    if not counts and prompts:
        counts = {"length": len(prompts)}
    if not counts:
        return "-"
    text = " / ".join(f"{reason} {n}" for reason, n in counts.items())
    if prompts and len(prompts) <= 3 and len(prompts) < sum(counts.values()):
        text += f" ({', '.join(prompts)})"
    return text


def _draft(row: Mapping[str, Any]) -> str:
    n, acc = row.get("draft_n"), row.get("draft_n_accepted")
    if not isinstance(n, int) or not isinstance(acc, int) or n <= 0:
        return "-"
    return f"{acc}/{n} {100 * acc / n:.0f}%"


def _host(row: Mapping[str, Any]) -> str:
    pct = row.get("host_other_cpu_pct")
    if pct is None:
        return "-"
    return f"{pct:.0f}" + ("!" if row.get("host_flagged") else "")


def _memory(row: Mapping[str, Any]) -> str:
    mib = row.get("mem_after_load_mib")
    return f"{mib:,.0f} {str(row.get('mem_basis') or '').upper()}".strip() if mib else "-"


def _released(row: Mapping[str, Any]) -> str:
    value = row.get("released")
    if isinstance(value, str):
        return "n/a"  # an attached server: not ours to release
    if not value:
        return "NO"
    after = row.get("gpu_used_mib_after_release")
    return f"yes, GPU {after:,} MiB after" if isinstance(after, int) else "yes"


def _props(value: Any) -> str:
    return "-" if value is None else ("stable" if value else "CHANGED")


def _note(row: Mapping[str, Any]) -> str:
    parts = [
        "re-run" if row.get("rerun") else "",
        "host busy" if row.get("host_flagged") and not row.get("host_spoiled") else "",
        "host spoiled, kept" if row.get("host_spoiled") else "",
        f"quarantined: {row['quarantined']}" if row.get("quarantined") else "",
        str(row.get("error") or ""),
    ]
    text = "; ".join(p for p in parts if p)
    return text.splitlines()[0] if text else ""


def _cells(r: Mapping[str, Any]) -> list[str]:
    drift = r.get("calibration_drift_pct")
    return [
        str(r["ordinal"]),
        str(r["treatment"]),
        str(r["cycle"]),
        "-" if r.get("load_s") is None else f"{r['load_s']:.1f}",
        _memory(r),
        str(r["alias"]),
        f"{r['measured']}/{r['valid']}/{r.get('usable', r['valid'])}/{r['failed']}",
        _finish(r),
        str(r.get("degenerate") or "-"),
        _draft(r),
        "-" if drift is None else f"{drift:+.1f}",
        _host(r),
        _props(r.get("props_stable")),
        "-" if r.get("n_ctx") is None else str(r["n_ctx"]),
        _released(r),
        _note(r),
    ]


def render(rows: Sequence[Mapping[str, Any]], width: int | None = None) -> str:
    """The table as aligned plain text in run order, fitted to `width` columns if given: long
    cells shortened in the middle, then the least needed columns left out (and said so)."""
    body = [_cells(r) for r in sorted(rows, key=lambda r: (r["ordinal"], bool(r.get("rerun"))))]
    table = [list(HEADER), *body]
    left_out: list[str] = []
    while True:
        keep = [i for i, h in enumerate(HEADER) if h not in left_out]
        shrink = {
            keep.index(HEADER.index(h)): w for h, w in SHRINKABLE.items() if h not in left_out
        }
        text = textwidth.render(
            [[row[i] for i in keep] for row in table], width=width, shrinkable=shrink
        )
        fits = width is None or max(len(line) for line in text.splitlines()) <= width
        more = [h for h in DROPPABLE if h not in left_out]
        if fits or not more:
            break
        left_out.append(more[0])
    if left_out:
        text += "\n" + textwidth.shorten_middle(
            f"(not shown at this width: {', '.join(left_out)}; sessions.csv has every column)",
            width or 10**6,
        )
    return text
