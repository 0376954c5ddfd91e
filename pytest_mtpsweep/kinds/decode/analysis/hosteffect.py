"""The host rule's effect on a run: which sessions it set aside and re-ran, which it kept
flagged, and the headline with the spoiled attempts in place of their re-runs.

The protocol applies the rule (protocol/hostrule.py); this reads what it left: plan.json's
`host_rule`, quarantine reasons that start "host spoiled", session files' `host_spoiled`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

import pandas as pd

from ....kindapi.records import schema
from ....kindapi.report import Md, Section
from ..report.textfmt import ci, dict_rows, md_section, pct
from .runvalues import HostRuleEffect, QuarantinedSession, RunData

TITLE = "Host rule"
HEADERS = (
    "treatment",
    "subset",
    "endpoint",
    "with the re-runs (published)",
    "with the spoiled attempts",
)
HEADERS = (
    "treatment",
    "subset",
    "endpoint",
    "with the re-runs (published)",
    "with the spoiled attempts",
)
SENSITIVITY_COLUMNS = (
    "treatment",
    "subset",
    "endpoint",
    "pct_change",
    "ci_low",
    "ci_high",
    "decision",
)


def _session_of(q: QuarantinedSession) -> str:
    name = q.facts.get("session")
    return str(name) if name else re.sub(r"\.\d+$", "", q.session)


def _host_held(run: RunData) -> list[QuarantinedSession]:
    return [q for q in run.quarantined if q.reason.startswith(schema.HOST_SPOILED)]


def effect(runs: Sequence[RunData]) -> HostRuleEffect:
    """The rule's thresholds and what it did, from what the runs left (no analysis yet)."""
    rule = next((r.plan.host_rule for r in runs if r.plan.host_rule is not None), None)
    if rule is None:
        return HostRuleEffect()
    rerun = tuple((_session_of(q), q.reason) for run in runs for q in _host_held(run))
    kept: list[tuple[str, str]] = []
    missing: dict[str, str] = {}
    for run in runs:
        for facts in run.sessions:
            name = str(facts.get("session", ""))
            first = facts.get("host_spoiled_first")
            if isinstance(first, Mapping) and first.get("host_spoiled"):
                kept.append((f"{name} (first attempt)", str(first["host_spoiled"])))
            if facts.get("host_spoiled"):
                kept.append((name, str(facts["host_spoiled"])))
            verdict = facts.get("host_rule")
            gaps = verdict.get("not_available") if isinstance(verdict, Mapping) else None
            for criterion, why in (gaps or {}).items():
                missing.setdefault(str(criterion), str(why))
    return HostRuleEffect(
        recorded=True,
        why_not="" if rule.applied else (rule.why or "not applied"),
        thresholds=dict(rule.thresholds),
        rerun=rerun,
        kept=tuple(kept),
        not_available=tuple(sorted(missing.items())),
    )


def with_originals(runs: Sequence[RunData]) -> list[RunData] | None:
    """The runs with each re-run session's records and facts replaced by its spoiled first
    attempt's (None when no session was re-run for the host)."""
    out, changed = [], False
    for run in runs:
        held = {_session_of(q): q for q in _host_held(run) if q.lines}
        present = {f.session for f in run.record_files if f.lines}
        held = {name: q for name, q in held.items() if name in present}
        if not held:
            out.append(run)
            continue
        changed = True
        files = tuple(
            dataclasses.replace(f, lines=held[f.session].lines) if f.session in held else f
            for f in run.record_files
        )
        sessions = tuple(
            {"session": s.get("session"), **held[str(s.get("session"))].facts}
            if str(s.get("session")) in held
            else s
            for s in run.sessions
        )
        quarantined = tuple(q for q in run.quarantined if q not in held.values())
        out.append(
            dataclasses.replace(run, record_files=files, sessions=sessions, quarantined=quarantined)
        )
    return out if changed else None


def sensitivity_rows(published: pd.DataFrame) -> pd.DataFrame:
    return published[list(SENSITIVITY_COLUMNS)].reset_index(drop=True)


def limitation(e: HostRuleEffect) -> str | None:
    """The Limitations bullet (None for a run from before the rule)."""
    if not e.recorded:
        return None
    if e.why_not:
        return (
            f"**Host rule:** {Md.text(e.why_not)}: sessions the host spoiled (other load, memory or CPU "
            "stalls, page faults, calibration drift) were averaged in, not re-run."
        )
    rule = ", ".join(
        f"{Md.text(k)} > {v if isinstance(v, int) else f'{v:g}'}"
        for k, v in e.thresholds.items()
        if isinstance(v, int | float)
    )
    parts = []
    if e.rerun:
        named = Md.text("; ".join(f"{s}: {_why(r)}" for s, r in e.rerun))
        parts.append(
            f"{len(e.rerun)} session(s) were set aside and re-run for the host ({named}); the "
            f"headline uses the re-runs, `report.html#host-rule` shows it with the spoiled "
            "attempts instead"
        )
    if e.kept:
        named = Md.text("; ".join(f"{s}: {_why(r)}" for s, r in e.kept))
        parts.append(
            f"{len(e.kept)} session attempt(s) the host spoiled were kept and are averaged in, "
            f"flagged host_spoiled ({named})"
        )
    said = "; ".join(parts) if parts else "no session was spoiled by the host"
    gaps = ""
    if e.not_available:
        gaps = "; not applied for want of the witness: " + Md.text(
            "; ".join(f"{c}, {w.removeprefix('not available: ')}" for c, w in e.not_available)
        )
    return f"**Host rule** ({rule}): {said}{gaps}."


def _why(reason: str) -> str:
    return reason.removeprefix(f"{schema.HOST_SPOILED}: ")


def section(e: HostRuleEffect, published: pd.DataFrame) -> Section | None:
    """The headline with and without the re-runs in place of the spoiled attempts (None when no
    session was re-run for the host)."""
    if e.with_originals is None or not e.rerun:
        return None
    theirs = {(r["treatment"], r["subset"], r["endpoint"]): r for r in dict_rows(e.with_originals)}
    rows = []
    for r in dict_rows(sensitivity_rows(published)):
        o = theirs.get((r["treatment"], r["subset"], r["endpoint"]))
        rows.append(
            [
                str(r["treatment"]),
                str(r["subset"]),
                str(r["endpoint"]),
                f"{pct(r['pct_change'])} {ci(r['ci_low'], r['ci_high'])} {r['decision']}",
                f"{pct(o['pct_change'])} {ci(o['ci_low'], o['ci_high'])} {o['decision']}"
                if o
                else "n/a",
            ]
        )
    names = Md.text(", ".join(s for s, _ in e.rerun))
    return md_section(
        TITLE,
        [
            f"The host rule set aside and re-ran {len(e.rerun)} session(s) ({names}). The "
            "published headline uses the re-runs; beside it, the same analysis with the spoiled "
            "first attempts in their place (95% CI):",
            "",
            Md.table(HEADERS, rows),
        ],
    )
