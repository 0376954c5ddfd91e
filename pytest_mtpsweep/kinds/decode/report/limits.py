"""Limitations bullets for what report.html details: host noise, drift, position, cross-checks.

Each is one bullet that says what was seen (or "none seen") and names the report.html section
with the detail, so report.md names every limitation without carrying the diagnostic tables.
"""

from __future__ import annotations

from typing import Any

from ....kindapi.report import Md, Section
from ..analysis.runvalues import DecodeAnalysis
from .textfmt import dict_rows, finite, num, pct

# A session whose calibration rate moved more than this from its start to its end measured on
# a machine that changed under it (heat, frequency, another job); no ladder field sets it.
CALIBRATION_DRIFT_PCT = 10.0
HOST_NOISE = "Host noise"
DRIFT = "Drift"
POSITION = "Position within session"
CROSS_CHECKS = "Small-sample cross-checks"


def anchor(title: str) -> str:
    """A section's element id on the page, from its title: the model's own rule (`Section.id`)."""
    return Section(title, ()).id


def see(title: str) -> str:
    """Where report.html holds a section: `report.html#host-noise`."""
    return f"`report.html#{anchor(title)}`"


def host_noise(result: DecodeAnalysis) -> str:
    """Other processes' CPU use, throttling and calibration drift, in one bullet."""
    host, cal = result.host, result.calibration
    if host.empty and cal.empty:
        return (
            "**Host noise:** not recorded: no session recorded the host's load or a calibration, "
            "so other jobs, throttling and calibration drift cannot be ruled out."
        )
    found = []
    flagged = [r for r in dict_rows(host) if r["flagged"]]
    if flagged:
        named = Md.text(
            ", ".join(f"{r['session']} {num(r['other_cpu_pct'], 1)} %" for r in flagged)
        )
        found.append(
            f"{len(flagged)} of {len(host)} sessions ran while other processes used more of the "
            f"CPU than the ladder's host_noise_pct ({named})"
        )
    throttled = [r for r in dict_rows(host) if r["throttled"]]
    if throttled:
        named = Md.text(", ".join(f"{r['session']} ({r['throttled']})" for r in throttled))
        found.append(f"{len(throttled)} session(s) were throttled ({named})")
    moved = [
        r
        for r in dict_rows(cal)
        if finite(r["drift_pct"]) and abs(r["drift_pct"]) > CALIBRATION_DRIFT_PCT
    ]
    if moved:
        named = Md.text(", ".join(f"{r['session']} {pct(r['drift_pct'])}" for r in moved))
        found.append(
            f"{len(moved)} of {len(cal)} sessions' calibration moved more than "
            f"±{CALIBRATION_DRIFT_PCT:g}% from start to end ({named})"
        )
    if found:
        return (
            f"**Host noise:** {'; '.join(found)}. Those sessions' rates carry the machine's state "
            f"as much as the treatment's; see {see(HOST_NOISE)}."
        )
    most = max(dict_rows(host), key=lambda r: r["other_cpu_pct"], default=None)
    others = (
        f"no session's other processes used more of the CPU than the ladder's host_noise_pct "
        f"(the most: {num(most['other_cpu_pct'], 1)} %, {Md.text(most['session'])}), none was "
        "throttled"
        if most is not None
        else "no session recorded the host's load"
    )
    calibrated = (
        f"every calibration stayed within ±{CALIBRATION_DRIFT_PCT:g}%"
        if len(cal)
        else "no session recorded a calibration"
    )
    return f"**Host noise:** none seen: {others}; {calibrated} (see {see(HOST_NOISE)})."


def drift(result: DecodeAnalysis) -> str:
    """The odd- against even-cycle contrast, against the decision's margin."""
    keys = ["endpoint", "treatment", "subset"]
    table = result.drift.merge(result.published[keys], on=keys) if len(result.drift) else None
    if table is None or table.empty:
        return (
            "**Drift:** not estimable: it needs pairs in both an odd and an even cycle "
            f"(see {see(DRIFT)})."
        )
    margin = result.settings.margin_pct
    rows = [r for r in dict_rows(table) if finite(r["drift_pp"])]
    worst = max(rows, key=lambda r: abs(r["drift_pp"]), default=None)
    if worst is None:
        return f"**Drift:** not estimable in any published cell (see {see(DRIFT)})."
    where = (
        f"{Md.text(worst['treatment'])} {Md.text(worst['subset'])}: {num(worst['drift_pp'])} pp, odd cycles "
        f"{pct(worst['pct_odd_cycles'])}, even {pct(worst['pct_even_cycles'])}"
    )
    beyond = [r for r in rows if abs(r["drift_pp"]) > margin]
    if not beyond:
        return (
            f"**Drift:** none seen: half the odd- minus even-cycle contrast is within the "
            f"±{margin:g}% margin in every published cell (largest {where}; see {see(DRIFT)})."
        )
    return (
        f"**Drift:** the odd- and even-cycle contrasts differ: half their difference exceeds the "
        f"±{margin:g}% margin in {len(beyond)} of {len(rows)} published cells (largest {where}). "
        "That is drift or session-to-session noise; the counterbalanced cycle mean cancels a "
        "linear drift, not a step or a burst, and the per-cycle contrasts are in "
        f"`per_cycle.csv` (see {see(DRIFT)})."
    )


def position(result: DecodeAnalysis) -> str:
    """Whether a treatment's rate trends with its place in the session."""
    t = result.position_trend
    if t.empty:
        return (
            "**Position trend:** not estimable: no record carries a `position` (runs from "
            f"before the field); see {see(POSITION)}."
        )
    stateful = [r for r in dict_rows(t) if bool(r["stateful"])]
    if not stateful:
        return (
            "**Position trend:** none seen: no treatment's rate trends with its place in the "
            f"session (see {see(POSITION)})."
        )
    named = Md.text(
        ", ".join(
            f"{r['treatment']} {pct(r['slope_pct'])} per position ({r['endpoint']})"
            for r in stateful
        )
    )
    return (
        f"**Position trend:** stateful: {named}. The rate drifts with the measurement's place "
        f"in the session, so the contrast depends on the prompt order (see {see(POSITION)})."
    )


def cross_checks(result: DecodeAnalysis) -> str:
    """Whether the arithmetic mean, the percentile bootstrap or the sign-flip test disagree."""
    rows = dict_rows(result.published)
    sign = [r for r in rows if bool(r["sign_disagreement"])]
    signif = [r for r in rows if bool(r["significance_disagreement"])]
    if not sign and not signif:
        return (
            "**Cross-checks:** the arithmetic mean, the percentile bootstrap and the sign-flip "
            f"test agree with every published figure in sign and at 5% (see {see(CROSS_CHECKS)})."
        )

    def cells(disagree: list[dict[str, Any]]) -> str:
        return Md.text(", ".join(f"{r['treatment']} {r['subset']}" for r in disagree))

    parts = []
    if sign:
        parts.append(
            f"the arithmetic mean or the percentile bootstrap points another way than the "
            f"published figure in {len(sign)} ({cells(sign)})"
        )
    if signif:
        parts.append(
            f"the published interval and the sign-flip test's p<0.05 disagree in {len(signif)} "
            f"({cells(signif)})"
        )
    return (
        f"**Cross-checks disagree:** of {len(rows)} published cells, {'; '.join(parts)}: read "
        f"those figures as fragile (see {see(CROSS_CHECKS)})."
    )
