"""The row table: one line per server session, as users kept it by hand."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

HEADER = (
    "#",
    "treatment",
    "cyc",
    "load s",
    "mem MiB",
    "alias",
    "meas/ok/fail",
    "length",
    "degen",
    "drift %",
    "host %",
    "released",
    "note",
)


def session_row(info: Mapping[str, Any]) -> dict[str, Any]:
    """The row of one closed session, from its session file's facts (also sessions.csv)."""
    rss = info.get("rss_after_load_bytes")
    return {
        "ordinal": info.get("ordinal"),
        "treatment": info.get("treatment"),
        "cycle": info.get("cycle"),
        "load_s": info.get("load_s"),
        "mem_after_load_mib": round(rss / 2**20, 1) if rss else None,
        "alias": info.get("alias", ""),
        "measured": info.get("measured", 0),
        "valid": info.get("valid", 0),
        "failed": info.get("failed", 0),
        "length_prompts": info.get("length_prompts", []),
        "degenerate": len(info.get("degenerate_prompts") or []),
        "calibration_drift_pct": (info.get("calibration") or {}).get("drift_pct"),
        "host_other_cpu_pct": (info.get("host") or {}).get("other_cpu_pct"),
        "host_flagged": bool((info.get("host") or {}).get("flagged")),
        "released": info.get("released"),
        "quarantined": info.get("quarantined") or "",
        "rerun": bool(info.get("rerun")),
        "error": info.get("error", ""),
    }


def _length(prompts: Sequence[str]) -> str:
    # The users named the few truncated prompts; a list of sixteen says less than its count.
    if not prompts:
        return "-"
    return ",".join(prompts) if len(prompts) <= 3 else f"{len(prompts)} prompts"


def _host(row: Mapping[str, Any]) -> str:
    pct = row.get("host_other_cpu_pct")
    if pct is None:
        return "-"
    return f"{pct:.0f}" + ("!" if row.get("host_flagged") else "")


def _released(value: Any) -> str:
    if isinstance(value, str):
        return "n/a"  # an attached server: not ours to release
    return "yes" if value else "NO"


def _note(row: Mapping[str, Any]) -> str:
    parts = [
        "re-run" if row.get("rerun") else "",
        "host busy" if row.get("host_flagged") else "",
        f"quarantined: {row['quarantined']}" if row.get("quarantined") else "",
        str(row.get("error") or ""),
    ]
    text = "; ".join(p for p in parts if p)
    return text.splitlines()[0] if text else ""


def render(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table as aligned plain text, in run order."""
    body = [
        [
            str(r["ordinal"]),
            str(r["treatment"]),
            str(r["cycle"]),
            "-" if r.get("load_s") is None else f"{r['load_s']:.1f}",
            f"{r['mem_after_load_mib']:.0f}" if r.get("mem_after_load_mib") else "-",
            str(r["alias"]),
            f"{r['measured']}/{r['valid']}/{r['failed']}",
            _length(r["length_prompts"]),
            str(r.get("degenerate") or "-"),
            "-" if r.get("calibration_drift_pct") is None else f"{r['calibration_drift_pct']:+.1f}",
            _host(r),
            _released(r["released"]),
            _note(r),
        ]
        for r in sorted(rows, key=lambda r: (r["ordinal"], bool(r.get("rerun"))))
    ]
    table = [list(HEADER), *body]
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADER))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table
    )
