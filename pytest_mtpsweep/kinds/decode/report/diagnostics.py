"""The diagnostic sections: position trend, census, drift, truncation, host noise, groups.

report.html carries them all; report.md keeps the census and names where the rest are."""

from __future__ import annotations

from ....kindapi.report import Md
from ..analysis.runvalues import ENDPOINTS, STATEFUL_MIN_PCT_PER_POSITION, DecodeAnalysis
from .limits import CALIBRATION_DRIFT_PCT
from .textfmt import ci, dict_rows, num, pct, table_or_count, texts, titled

CENSUS_HEADERS = [
    "endpoint",
    "treatment",
    "subset",
    "prompts",
    "pairs",
    "baseline without treatment",
    "treatment without baseline",
    "resamples kept/requested",
]
CENSUS_COLUMNS = (
    "endpoint",
    "treatment",
    "subset",
    "n_prompts",
    "n_pairs",
    "gaps_baseline_only",
    "gaps_treatment_only",
)
POSITION_HEADERS = [
    "treatment",
    "endpoint",
    "measurements",
    "sessions",
    "per position",
    "95% CI",
    "stateful",
    "note",
]


@titled("Position within session")
def section_position(result: DecodeAnalysis) -> list[str]:
    out: list[str] = []
    t = result.position_trend
    if t.empty:
        return [
            *out,
            "Not available: no record carries a `position` (runs from before the field).",
            "",
        ]
    rows = [
        [
            *texts(r, "treatment", "endpoint", "n_obs", "n_sessions"),
            pct(r["slope_pct"]),
            ci(r["ci_low"], r["ci_high"]),
            Md("**stateful**") if bool(r["stateful"]) else "no",
            str(r["note"]),
        ]
        for r in dict_rows(t)
    ]
    flagged = sorted({str(r["treatment"]) for r in dict_rows(t) if bool(r["stateful"])})
    verdict = (
        f"Stateful: {Md.text(', '.join(flagged))} — their rate drifts with the measurement's place in "
        "the session, so the contrast depends on the prompt order."
        if flagged
        else "No treatment is stateful."
    )
    return [
        *out,
        "Trend of log rate on the 0-based position within its server session, per treatment, "
        "with a fixed effect per session and per prompt (prompts run in a different order in "
        "each session); change per position with a 95% t-interval. `stateful` when that "
        f"interval excludes 0 and the trend is at least {STATEFUL_MIN_PCT_PER_POSITION:g}% per "
        f"position. {verdict}",
        "",
        Md.table(POSITION_HEADERS, rows),
        "",
    ]


@titled("Census")
def section_census(result: DecodeAnalysis) -> list[str]:
    out: list[str] = []
    if not result.census.empty:
        rows = [
            [*texts(r, *CENSUS_COLUMNS), f"{r['boot_kept']}/{r['boot_requested']}"]
            for r in dict_rows(result.census)
        ]
        out += [table_or_count(CENSUS_HEADERS, rows, "census.csv", "census cells"), ""]
    if result.gaps.empty:
        out += ["Gaps: none in either direction.", ""]
    else:
        # Most gaps hit both endpoints alike; one line each keeps the list readable.
        keys = ["treatment", "direction", "prompt_id", "cycle", "run_id"]
        gaps = result.gaps.groupby(keys, as_index=False, sort=True)["endpoint"].agg(
            lambda e: "both" if len(set(e)) == len(ENDPOINTS) else ", ".join(sorted(e))
        )
        out += ["Gaps (a cell on one side of a pair with no partner):", ""]
        rows = [texts(r, *keys, "endpoint") for r in dict_rows(gaps)]
        out += [
            table_or_count(
                ["treatment", "direction", "prompt", "cycle", "run", "endpoint"],
                rows,
                "gaps.csv",
                "gaps",
            ),
            "",
        ]
    if result.exclusions.empty:
        out += ["Exclusions: none.", ""]
    else:
        rows = [texts(r, "reason", "n", "sessions") for r in dict_rows(result.exclusions)]
        out += [
            "Exclusions by reason (records or lines set aside):",
            "",
            table_or_count(["reason", "n", "sessions"], rows, "exclusions.csv", "reasons"),
            "",
        ]
    if not result.quarantined.empty:
        rows = [texts(r, "session", "n_records", "reason") for r in dict_rows(result.quarantined)]
        out += [
            "Quarantined sessions (excluded, counted above):",
            "",
            table_or_count(
                ["session", "records", "reason"], rows, "contrasts.json", "sessions (quarantined)"
            ),
            "",
        ]
    return out


@titled("Drift")
def section_drift(result: DecodeAnalysis) -> list[str]:
    out: list[str] = []
    published = result.published[["endpoint", "treatment", "subset"]]
    per_cycle = result.per_cycle.merge(published, on=["endpoint", "treatment", "subset"])
    if per_cycle.empty:
        out += ["Per-cycle contrasts: none.", ""]
    else:
        rows = [
            [
                *texts(r, "treatment", "subset", "endpoint", "run_id", "cycle", "n_pairs"),
                pct(r["pct_change"]),
            ]
            for r in dict_rows(per_cycle)
        ]
        out += [
            "Per-cycle contrasts (published endpoint):",
            "",
            table_or_count(
                ["treatment", "subset", "endpoint", "run", "cycle", "pairs", "change"],
                rows,
                "per_cycle.csv",
                "per-cycle contrasts",
            ),
            "",
        ]
    drift = result.drift.merge(published, on=["endpoint", "treatment", "subset"])
    if drift.empty:
        out += ["Drift estimate: not available (needs pairs in both an odd and an even cycle).", ""]
    else:
        rows = [
            [
                *texts(r, "treatment", "subset", "endpoint"),
                pct(r["pct_odd_cycles"]),
                pct(r["pct_even_cycles"]),
                num(r["drift_pp"]),
            ]
            for r in dict_rows(drift)
        ]
        out += [
            "Drift estimate = (odd-cycle contrast − even-cycle contrast) / 2, i.e. half the "
            "cycle-1 minus cycle-2 difference; the counterbalanced cycle mean cancels a "
            "linear drift of this size.",
            "",
            Md.table(
                ["treatment", "subset", "endpoint", "odd cycles", "even cycles", "drift pp"], rows
            ),
            "",
        ]
    return out


@titled("Truncated measurements")
def section_truncation(result: DecodeAnalysis) -> list[str]:
    out: list[str] = []
    t = result.truncated
    if t.empty:
        return [*out, "None: no analysed measurement hit the token cap.", ""]
    out.append(
        "These hit the token cap (finish_reason `length`). They are valid rate observations; "
        "a statement about content equivalence must exclude these prompts by name."
    )
    out.append("")
    if len(t) > Md.LONG_LIST_ROWS:
        # One line per measurement would bury the report; the prompts and counts say enough.
        counts = ", ".join(f"{Md.code(p)} ({len(f)})" for p, f in t.groupby("prompt_id", sort=True))
        out.append(
            f"{len(t)} measurements of {t['prompt_id'].nunique()} prompt(s), by prompt: "
            f"{counts}; one row each in `truncated.csv` beside this report."
        )
        return [*out, ""]
    for prompt, frame in t.groupby("prompt_id", sort=True):
        where = ", ".join(
            f"{r['treatment']} c{r['cycle']}" + (f" r{r['repeat']}" if r["repeat"] != 1 else "")
            for r in dict_rows(frame)
        )
        out.append(f"- {Md.code(prompt)}: {Md.text(where)}")
    return [*out, ""]


@titled("Comparability groups")
def section_groups(result: DecodeAnalysis) -> list[str]:
    out = [
        "Sessions pool only when all keyed fields are identical. The analysed group is the one "
        "holding the most valid baseline records (ties: most records, then earliest session); "
        "the others are reported, not analysed.",
        "",
    ]
    if not result.groups:
        return [*out, "No valid records, so no groups.", ""]
    for i, g in enumerate(result.groups, start=1):
        mark = "analysed" if g.chosen else "not analysed"
        out.append(
            f"{i}. **{mark}** — {g.n_records} valid records ({g.n_baseline_records} baseline), "
            f"treatments {Md.text(', '.join(g.treatments))}; sessions "
            f"{Md.text(', '.join(g.sessions))}"
        )
        out.append("   - " + Md.text("; ".join(f"{k} = {v}" for k, v in g.keyed)))
    return [*out, ""]


def degenerate_warning(result: DecodeAnalysis) -> str | None:
    """One plain sentence when rates were measured on degenerate text, else None."""
    t = result.degenerate
    if t.empty or int(t["n_degenerate"].sum()) == 0:
        return None
    bad, total = int(t["n_degenerate"].sum()), int(t["n_records"].sum())
    per = ", ".join(
        f"{r['treatment']} {int(r['n_degenerate'])}/{int(r['n_records'])}" for r in dict_rows(t)
    )
    return (
        f"Degenerate text: {bad} of {total} analysed measurements were not real answers (echo, "
        f"loops or chat-template control strings; {per}). Their decode rates describe degenerate "
        "text, not answers to the prompts, and every contrast below rests on them."
    )


@titled("What the model wrote")
def section_degenerate(result: DecodeAnalysis) -> list[str]:
    out: list[str] = []
    t = result.degenerate
    if t.empty:
        return [*out, "No analysed measurements.", ""]
    table = Md.table(
        ["treatment", "measurements", "degenerate", "examples"],
        [texts(r, "treatment", "n_records", "n_degenerate", "examples") for r in dict_rows(t)],
    )
    lead = (
        "Each answer was checked after its stream ended for echo of the prompt, repeated lines "
        "or sentences, and chat-template control strings."
    )
    return [*out, lead, "", table, ""]


@titled("Host noise")
def section_host(result: DecodeAnalysis) -> list[str]:
    out: list[str] = []
    t = result.host
    if t.empty:
        return [*out, "No session recorded the host's load.", "", *_calibration(result)]
    flagged = [str(r["session"]) for r in dict_rows(t) if r["flagged"]]
    lead = (
        "CPU used by processes other than the server and the harness while each session "
        "measured, in % of all cores; a session above the ladder's host_noise_pct is flagged."
    )
    verdict = (
        f"**Flagged: {Md.text(', '.join(flagged))}** — another job competed for the CPU; their rates "
        "are not comparable with the others'."
        if flagged
        else "No session was flagged."
    )
    table = table_or_count(
        ["session", "treatment", "cycle", "others' CPU %", "load (1 min)", "throttled", "flagged"],
        [
            [
                *texts(r, "session", "treatment", "cycle"),
                num(r["other_cpu_pct"], 1),
                num(r["load_avg_end"]),
                str(r["throttled"] or "-"),
                "yes" if r["flagged"] else "no",
            ]
            for r in dict_rows(t)
        ],
        "contrasts.json",
        "sessions (host)",
    )
    return [*out, lead, "", verdict, "", table, "", *_calibration(result)]


def _calibration(result: DecodeAnalysis) -> list[str]:
    """Each session's calibration rate at its start and its end: the rig's own drift."""
    out: list[str] = []
    if result.calibration.empty:
        out += ["Calibration drift: no session recorded a calibration.", ""]
    else:
        rows = [
            [
                *texts(r, "session", "treatment", "cycle"),
                num(r["start_tps"]),
                num(r["end_tps"]),
                pct(r["drift_pct"]),
            ]
            for r in dict_rows(result.calibration)
        ]
        out += [
            "Per-session calibration drift (the calibration rate at the session's start and its "
            f"end; a move beyond ±{CALIBRATION_DRIFT_PCT:g}% is named under Limitations):",
            "",
            table_or_count(
                ["session", "treatment", "cycle", "start tps", "end tps", "drift"],
                rows,
                "contrasts.json",
                "sessions (calibration)",
            ),
            "",
        ]
    return out


def interval_fallback_warning(result: DecodeAnalysis) -> str | None:
    """One plain sentence when any analysed interval rate came from inter-chunk timing."""
    t = result.interval_basis
    if t.empty or int(t["n_inter_chunk"].sum()) == 0:
        return None
    used = Md.text(
        ", ".join(
            f"{r['treatment']} {int(r['n_inter_chunk'])}/{int(r['n_records'])}"
            for r in dict_rows(t)
            if int(r["n_inter_chunk"])
        )
    )
    return (
        f"Interval endpoint on inter-chunk timing ({used}): the server sent no `timings`, so the "
        "interval rate counts one token per streamed chunk; a server that coalesces several "
        "tokens into one chunk (speculative decoding emits each step's accepted drafts "
        "together) is undercounted, so the interval endpoint understates such a treatment's "
        "rate. The primary endpoint counts `usage.completion_tokens` and is not affected."
    )


@titled("Interval endpoint basis")
def section_interval_basis(result: DecodeAnalysis) -> list[str]:
    out: list[str] = []
    t = result.interval_basis
    if t.empty:
        return [*out, "No analysed measurements.", ""]
    warning = interval_fallback_warning(result)
    lead = warning or (
        "Every analysed interval rate is the server's own decode interval (`timings`)."
    )
    table = Md.table(
        ["treatment", "measurements", "inter-chunk"],
        [texts(r, "treatment", "n_records", "n_inter_chunk") for r in dict_rows(t)],
    )
    return [*out, lead, "", table, ""]
