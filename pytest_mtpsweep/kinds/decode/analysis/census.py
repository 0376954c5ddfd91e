"""Record-level diagnostics: exclusions, truncation, calibration drift, quarantine."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ....kindapi.records import recordlines as rl
from .runvalues import ENDPOINTS, QuarantinedSession

EXCLUSION_SUMMARY_COLUMNS: tuple[str, ...] = ("reason", "n", "sessions")
TRUNCATED_COLUMNS: tuple[str, ...] = (
    "prompt_id",
    "subset",
    "treatment",
    "cycle",
    "repeat",
    "run_id",
    "session",
    "completion_tokens",
)
CALIBRATION_COLUMNS: tuple[str, ...] = (
    "run_id",
    "session",
    "ordinal",
    "treatment",
    "cycle",
    "start_tps",
    "end_tps",
    "drift_pct",
)
QUARANTINE_COLUMNS: tuple[str, ...] = ("run_id", "session", "n_records", "reason")
QUARANTINED = "quarantined session"
OTHER_GROUP = "other comparability group"


def invalid_exclusions(records: pd.DataFrame) -> pd.DataFrame:
    """One exclusion per invalid record, its reason taken from the record."""
    bad = records[~records["valid"]]
    reasons = bad["reason"].fillna("no reason given").astype(str)
    return pd.DataFrame(
        {"run_id": bad["run_id"], "session": bad["session"], "reason": "invalid: " + reasons}
    )


def missing_rate_exclusions(records: pd.DataFrame) -> pd.DataFrame:
    """One exclusion per valid record and endpoint whose rate is missing or not positive."""
    frames = []
    for endpoint in ENDPOINTS:
        lacking = records[~np.isfinite(records[f"rate_{endpoint}"].to_numpy(dtype=np.float64))]
        frames.append(
            pd.DataFrame(
                {
                    "run_id": lacking["run_id"],
                    "session": lacking["session"],
                    "reason": f"no usable {endpoint} rate (that endpoint only)",
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def quarantine_exclusions(quarantined: Sequence[QuarantinedSession]) -> pd.DataFrame:
    """One exclusion per record of a quarantined session."""
    rows = [
        {"run_id": q.run_id, "session": q.session, "reason": QUARANTINED}
        for q in quarantined
        for _ in range(q.n_records)
    ]
    return pd.DataFrame(rows, columns=["run_id", "session", "reason"])


def summarise_exclusions(events: Sequence[pd.DataFrame], *, qualify: bool) -> pd.DataFrame:
    """Exclusions counted by reason, with the sessions each reason touched."""
    frames = [e for e in events if not e.empty]
    if not frames:
        return pd.DataFrame(columns=list(EXCLUSION_SUMMARY_COLUMNS))
    every = pd.concat(frames, ignore_index=True)
    label = every["run_id"] + "/" + every["session"] if qualify else every["session"]
    every = every.assign(label=label.astype(str))
    summary = every.groupby("reason", as_index=False, sort=True).agg(
        n=("label", "size"), sessions=("label", lambda s: ", ".join(sorted(set(s))))
    )
    return summary.sort_values(["n", "reason"], ascending=[False, True]).reset_index(drop=True)


def truncated(records: pd.DataFrame) -> pd.DataFrame:
    """Measurements cut by the token cap (finish_reason "length"), listed by prompt."""
    cut = records[records["finish_reason"] == "length"]
    ordered = cut.sort_values(["subset", "prompt_id", "treatment", "run_id", "cycle", "repeat"])
    return ordered[list(TRUNCATED_COLUMNS)].reset_index(drop=True)


DEGENERATE_COLUMNS: tuple[str, ...] = ("treatment", "n_records", "n_degenerate", "examples")


def degenerate(records: pd.DataFrame) -> pd.DataFrame:
    """Per treatment, how many analysed records held degenerate text, and a few of the reasons."""
    rows = []
    for treatment, frame in records.groupby("treatment", sort=True):
        bad = frame[frame["degenerate"] != ""]
        examples = "; ".join(
            f"{p}: {why}"
            for p, why in zip(bad["prompt_id"][:3], bad["degenerate"][:3], strict=True)
        )
        rows.append(
            {
                "treatment": str(treatment),
                "n_records": len(frame),
                "n_degenerate": len(bad),
                "examples": examples,
            }
        )
    return pd.DataFrame(rows, columns=list(DEGENERATE_COLUMNS))


INTERVAL_BASIS_COLUMNS: tuple[str, ...] = ("treatment", "n_records", "n_inter_chunk")


def interval_basis(records: pd.DataFrame) -> pd.DataFrame:
    """Per treatment, how many analysed records had an interval rate from inter-chunk timing
    (no server `timings` in the stream) rather than the server's own decode interval."""
    rows = [
        {
            "treatment": str(treatment),
            "n_records": len(frame),
            "n_inter_chunk": int((frame["interval_basis"] == "inter_chunk").sum()),
        }
        for treatment, frame in records.groupby("treatment", sort=True)
    ]
    return pd.DataFrame(rows, columns=list(INTERVAL_BASIS_COLUMNS))


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


SessionFacts = Sequence[tuple[str, Mapping[str, Any]]]  # (run id, a session file), per session


def _per_session(
    sessions: SessionFacts,
    key: str,
    columns: Sequence[str],
    row: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]],
) -> pd.DataFrame:
    """One row per session whose file holds a `key` table: its run and session, then what `row`
    reads from the file and that table; sorted by run and session."""
    rows = []
    for run_id, facts in sessions:
        part = facts.get(key)
        if isinstance(part, Mapping):
            session = str(facts.get("session", ""))
            rows.append({"run_id": run_id, "session": session, **row(facts, part)})
    frame = pd.DataFrame(rows, columns=list(columns))
    return frame.sort_values(["run_id", "session"]).reset_index(drop=True)


# The session facts these tables read, bounded (recordlines' RANGES): a session file holding a
# value no run writes (a negative load time, a rate of 1e308) is set aside and named.
SESSION_TYPES: rl.Types = {
    "ordinal": rl.COUNT,
    "cycle": rl.COUNT,
    "duration_s": rl.SECONDS,
    "load_s": rl.SECONDS,
    "calibration": rl.OBJECT,
    "calibration.start_tps": rl.RATE,
    "calibration.end_tps": rl.RATE,
    "host": rl.OBJECT,
    "host.span_s": rl.SECONDS,
    "host.flagged": rl.BOOL,
}


def calibration(sessions: SessionFacts) -> pd.DataFrame:
    """Per-session calibration drift, for the sessions that recorded one."""

    def row(facts: Mapping[str, Any], cal: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "ordinal": facts.get("ordinal"),
            "treatment": facts.get("treatment"),
            "cycle": facts.get("cycle"),
            "start_tps": _number(cal.get("start_tps")),
            "end_tps": _number(cal.get("end_tps")),
            "drift_pct": _number(cal.get("drift_pct")),
        }

    return _per_session(sessions, "calibration", CALIBRATION_COLUMNS, row)


HOST_COLUMNS: tuple[str, ...] = (
    "run_id",
    "session",
    "treatment",
    "cycle",
    "other_cpu_pct",
    "load_avg_end",
    "throttled",
    "flagged",
)


def host_noise(sessions: SessionFacts) -> pd.DataFrame:
    """Per session: what others used of the machine while it measured, and whether it was flagged."""

    def row(facts: Mapping[str, Any], h: Mapping[str, Any]) -> dict[str, Any]:
        load = h.get("load_avg_end")
        throttled = h.get("throttled")
        return {
            "treatment": facts.get("treatment"),
            "cycle": facts.get("cycle"),
            "other_cpu_pct": _number(h.get("other_cpu_pct")),
            "load_avg_end": _number(load[0]) if isinstance(load, list) and load else math.nan,
            "throttled": ", ".join(f"{k} {v}" for k, v in throttled.items())
            if isinstance(throttled, Mapping)
            else "",
            "flagged": bool(h.get("flagged")),
        }

    return _per_session(sessions, "host", HOST_COLUMNS, row)


def quarantine_table(quarantined: Sequence[QuarantinedSession]) -> pd.DataFrame:
    """The quarantined sessions with their reasons."""
    rows = [
        {"run_id": q.run_id, "session": q.session, "n_records": q.n_records, "reason": q.reason}
        for q in quarantined
    ]
    return pd.DataFrame(rows, columns=list(QUARANTINE_COLUMNS))


def all_exclusions(
    parse_excluded: pd.DataFrame,
    quarantined: Sequence[Any],
    records: pd.DataFrame,
    analysed: pd.DataFrame,
    elsewhere: pd.DataFrame,
    multi: bool,
) -> pd.DataFrame:
    """Every record set aside, with why: unreadable, quarantined, invalid, in another
    comparability group, or without a rate."""
    return summarise_exclusions(
        [
            parse_excluded,
            quarantine_exclusions(quarantined),
            invalid_exclusions(records),
            elsewhere[["run_id", "session"]].assign(reason=OTHER_GROUP),
            missing_rate_exclusions(analysed),
        ],
        qualify=multi,
    )
