"""Text renderings of a result: the terminal headline table, report.md, the compare view."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from pytest_mtpsweep.analysis.model import (
    ENDPOINT_LABELS,
    ENDPOINTS,
    MDE_POWER,
    MIN_BOOT,
    MIN_CYCLES_FOR_SESSION,
    MIN_PROMPTS_FOR_DECISION,
    POOLED,
    STATEFUL_MIN_PCT_PER_POSITION,
    AnalysisResult,
)
from pytest_mtpsweep.analysis.stats import PROMPTS_ONLY, WITH_SESSION

COMPARE_LABEL = "secondary, descriptive: different runs"
TIEBREAK_HEADERS = ["treatment", "subset", "primary", "interval", "divergence pp",
                    "beyond tie-break", "published", "why"]  # fmt: skip
POSITION_HEADERS = ["treatment", "endpoint", "measurements", "sessions", "per position",
                    "95% CI", "stateful", "note"]  # fmt: skip


def _pct(value: Any) -> str:
    return f"{value:+.2f}%" if _finite(value) else "n/a"


def _num(value: Any, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if _finite(value) else "n/a"


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _ci(low: Any, high: Any) -> str:
    if not (_finite(low) and _finite(high)):
        return "n/a"
    return f"[{low:+.2f}, {high:+.2f}]"


def _rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    # Plain dicts from column lists: iterrows builds a Series per row and to_dict boxes every
    # cell, which dominated the report's run time.
    names = [str(c) for c in frame.columns]
    columns = [frame[c].tolist() for c in frame.columns]
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def _flags(row: Mapping[str, Any]) -> str:
    flags = []
    if row["decision"] == "insufficient":
        flags.append(f"fewer than {MIN_PROMPTS_FOR_DECISION} prompts")
    elif bool(row["underpowered"]):
        flags.append("underpowered")
    if int(row["n_pairs"]) > 0 and not bool(row["counterbalanced"]):
        flags.append("order-confounded")
    if bool(row["sign_disagreement"]):
        flags.append("cross-checks disagree on sign")
    return ", ".join(flags)


def _plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def esc(cell: str) -> str:
        return cell.replace("|", "\\|")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def no_pairs_reason(result: AnalysisResult) -> str | None:
    """Why a result has nothing to contrast, or None when it has pairs."""
    base = result.settings.baseline
    if not result.treatments:
        return (
            f"No contrasts: no treatment other than the baseline {base!r} was selected or "
            "recorded (for example only the baseline was selected with -k), so there is "
            "nothing to pair."
        )
    if not result.has_pairs:
        return (
            f"No treatment-baseline pairs: no (prompt, cycle) holds a valid measurement of both "
            f"a treatment and the baseline {base!r}; the gaps and exclusions below say why."
        )
    return None


def _title(result: AnalysisResult) -> str:
    runs = " + ".join(result.run_ids)
    return f"{result.ladder}/{runs}" if result.ladder else runs


def headline_table(result: AnalysisResult) -> str:
    """A compact plain-text table of the published figures, for a terminal summary."""
    s = result.settings
    head = (
        f"mtpsweep analysis {_title(result)}: vs baseline {s.baseline!r}, "
        f"boot {s.boot} (seed {s.seed}), margin ±{s.margin_pct:g}%"
    )
    reason = no_pairs_reason(result)
    if reason is not None:
        return f"{head}\n{reason}"
    rows = [
        [
            str(r["treatment"]),
            str(r["subset"]),
            str(r["endpoint"]),
            _pct(r["pct_change"]),
            _ci(r["ci_low"], r["ci_high"]),
            str(r["decision"]),
            f"{int(r['n_prompts'])}/{int(r['n_pairs'])}",
            _flags(r),
        ]
        for r in _rows(result.published)
    ]
    headers = [
        "treatment",
        "subset",
        "endpoint",
        "change",
        "95% CI",
        "decision",
        "prompts/pairs",
        "flags",
    ]
    return f"{head}\n{_plain_table(headers, rows)}"


def _per_cycle_text(result: AnalysisResult) -> dict[tuple[str, str, str], str]:
    """'c1 +3.10%, c2 +2.95%' per (endpoint, treatment, subset), run-qualified when pooled."""
    out: dict[tuple[str, str, str], list[str]] = {}
    many = len(result.run_ids) > 1
    for r in _rows(result.per_cycle):
        where = f"{r['run_id']} c{r['cycle']}" if many else f"c{r['cycle']}"
        key = (str(r["endpoint"]), str(r["treatment"]), str(r["subset"]))
        out.setdefault(key, []).append(f"{where} {_pct(r['pct_change'])}")
    return {k: ", ".join(v) for k, v in out.items()}


def _conditional(result: AnalysisResult) -> bool:
    """True when some published interval leaves the session level out (too few cycles)."""
    methods = set(result.published["interval_method"]) if not result.contrasts.empty else set()
    return PROMPTS_ONLY in methods


def _section_headline(result: AnalysisResult) -> list[str]:
    conditional = _conditional(result)
    cycles = _per_cycle_text(result) if conditional else {}
    rows = []
    for r in _rows(result.published):
        row = [
            str(r["treatment"]),
            str(r["subset"]),
            str(r["endpoint"]),
            _pct(r["pct_change"]),
            _ci(r["ci_low"], r["ci_high"]),
            _ci(r["ci90_low"], r["ci90_high"]),
            f"**{r['decision']}**",
            _num(r["mde_pct"]) + (" (underpowered)" if bool(r["underpowered"]) else ""),
            str(int(r["n_prompts"])),
            str(int(r["n_pairs"])),
            str(r["interval_method"]),
        ]
        if conditional:
            row.append(cycles.get((str(r["endpoint"]), str(r["treatment"]), str(r["subset"])), ""))
        rows.append([*row, str(r["note"])])
    headers = ["treatment", "subset", "published endpoint", "change", "95% CI", "90% CI",
               "decision", "MDE %", "prompts", "pairs", "interval"]  # fmt: skip
    headers += ["per cycle", "note"] if conditional else ["note"]
    out = ["## Headline (published endpoint)", ""]
    if conditional:
        out += [
            f"With fewer than {MIN_CYCLES_FOR_SESSION} cycles the intervals are conditional on "
            "the server sessions that were run: they resample prompts only, so an offset "
            "shared by a whole session is not in them; the per-cycle contrasts beside each "
            "figure show how far it moved between sessions.",
            "",
        ]
    return [*out, _md_table(headers, rows), ""]


def _section_tiebreak(result: AnalysisResult) -> list[str]:
    s = result.settings
    pct = {
        (r["endpoint"], r["treatment"], r["subset"]): r["pct_change"]
        for r in _rows(result.contrasts)
    }
    rows = []
    for row in _rows(result.published):
        div = row["divergence_pp"]
        rows.append(
            [
                str(row["treatment"]),
                str(row["subset"]),
                *(_pct(pct.get((e, row["treatment"], row["subset"]))) for e in ENDPOINTS),
                _num(div),
                "**yes**" if _finite(div) and div > s.tiebreak_pp else "no",
                str(row["endpoint"]),
                str(row["published_reason"]),
            ]
        )
    return [
        "## Endpoints and tie-break",
        "",
        f"Pre-registered endpoint: {s.primary_endpoint}. Rule: if the two endpoints differ by "
        f"more than {s.tiebreak_pp:g} pp in ANY treatment × subset cell, the interval-basis "
        "figure is published for the whole headline (a cell where one endpoint has no pairs "
        "publishes the other).",
        "",
        _md_table(TIEBREAK_HEADERS, rows),
        "",
    ]


def _min_p(row: Mapping[str, Any]) -> float:
    # The smallest p an exact sign-flip test can give: both all-plus and all-minus patterns.
    n = int(row["n_prompts"])
    return 2.0 ** (1 - n) if row["perm_method"] == "exact" and n > 0 else math.nan


def _section_crosschecks(result: AnalysisResult) -> list[str]:
    rows = [
        [
            str(r["treatment"]),
            str(r["subset"]),
            str(r["endpoint"]),
            _pct(r["pct_change"]),
            _pct(r["arith_pct_change"]),
            _ci(r["boot_ci_low"], r["boot_ci_high"]),
            f"{_num(r['perm_p'], 4)} ({r['perm_method']})",
            _num(_min_p(r), 4),
            "yes" if bool(r["sign_disagreement"]) else "no",
            "yes" if bool(r["significance_disagreement"]) else "no",
        ]
        for r in _rows(result.contrasts)
    ]
    blind = sorted({int(r["n_prompts"]) for r in _rows(result.contrasts) if _min_p(r) >= 0.05})
    out = [
        "## Small-sample cross-checks",
        "",
        "Geometric (the published point) and arithmetic mean percent change, the percentile "
        "cluster bootstrap 95% interval (the published interval before issue 13; it "
        "under-covers at these sizes, see Method), and a sign-flip permutation p-value (exact "
        "over all 2^n sign patterns up to 16 prompts, Monte Carlo above). A sign disagreement "
        "means the geometric and arithmetic means, or the published and bootstrap intervals, "
        "point different ways.",
        "",
    ]
    if blind:
        out += [
            f"At {', '.join(str(n) for n in blind)} prompt(s) the exact sign-flip test cannot "
            "reject at 5%: its smallest attainable p-value, 2^(1−n), is 0.05 or more, so "
            "'p<0.05 disagrees' there only restates the sample size.",
            "",
        ]
    headers = ["treatment", "subset", "endpoint", "geometric", "arithmetic", "bootstrap 95% CI",
               "sign-flip p", "min attainable p", "sign disagreement",
               "interval vs p<0.05 disagree"]  # fmt: skip
    return [*out, _md_table(headers, rows), ""]


def _section_position(result: AnalysisResult) -> list[str]:
    out = ["## Position within session", ""]
    t = result.position_trend
    if t.empty:
        return [
            *out,
            "Not available: no record carries a `position` (runs from before the field).",
            "",
        ]
    rows = [
        [
            str(r["treatment"]),
            str(r["endpoint"]),
            str(r["n_obs"]),
            str(r["n_sessions"]),
            _pct(r["slope_pct"]),
            _ci(r["ci_low"], r["ci_high"]),
            "**stateful**" if bool(r["stateful"]) else "no",
            str(r["note"]),
        ]
        for r in _rows(t)
    ]
    flagged = sorted({str(r["treatment"]) for r in _rows(t) if bool(r["stateful"])})
    verdict = (
        f"Stateful: {', '.join(flagged)} — their rate drifts with the measurement's place in "
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
        _md_table(POSITION_HEADERS, rows),
        "",
    ]


def _section_census(result: AnalysisResult) -> list[str]:
    out = ["## Census", ""]
    if not result.census.empty:
        rows = [
            [
                str(r["endpoint"]),
                str(r["treatment"]),
                str(r["subset"]),
                str(r["n_prompts"]),
                str(r["n_pairs"]),
                str(r["gaps_baseline_only"]),
                str(r["gaps_treatment_only"]),
                f"{r['boot_kept']}/{r['boot_requested']}",
            ]
            for r in _rows(result.census)
        ]
        out += [
            _md_table(
                [
                    "endpoint",
                    "treatment",
                    "subset",
                    "prompts",
                    "pairs",
                    "baseline without treatment",
                    "treatment without baseline",
                    "resamples kept/requested",
                ],
                rows,
            ),
            "",
        ]
    if result.gaps.empty:
        out += ["Gaps: none in either direction.", ""]
    else:
        # Most gaps hit both endpoints alike; one line each keeps the list readable.
        keys = ["treatment", "direction", "prompt_id", "cycle", "run_id"]
        gaps = result.gaps.groupby(keys, as_index=False, sort=True)["endpoint"].agg(
            lambda e: "both" if len(set(e)) == len(ENDPOINTS) else ", ".join(sorted(e))
        )
        out += ["Gaps (a cell on one side of a pair with no partner):", ""]
        rows = [
            [
                str(r["treatment"]),
                str(r["direction"]),
                str(r["prompt_id"]),
                str(r["cycle"]),
                str(r["run_id"]),
                str(r["endpoint"]),
            ]
            for r in _rows(gaps)
        ]
        out += [
            _md_table(["treatment", "direction", "prompt", "cycle", "run", "endpoint"], rows),
            "",
        ]
    if result.exclusions.empty:
        out += ["Exclusions: none.", ""]
    else:
        rows = [
            [str(r["reason"]), str(r["n"]), str(r["sessions"])] for r in _rows(result.exclusions)
        ]
        out += [
            "Exclusions by reason (records or lines set aside):",
            "",
            _md_table(["reason", "n", "sessions"], rows),
            "",
        ]
    if not result.quarantined.empty:
        rows = [
            [str(r["session"]), str(r["n_records"]), str(r["reason"])]
            for r in _rows(result.quarantined)
        ]
        out += [
            "Quarantined sessions (excluded, counted above):",
            "",
            _md_table(["session", "records", "reason"], rows),
            "",
        ]
    return out


def _section_drift(result: AnalysisResult) -> list[str]:
    out = ["## Drift", ""]
    published = result.published[["endpoint", "treatment", "subset"]]
    per_cycle = result.per_cycle.merge(published, on=["endpoint", "treatment", "subset"])
    if per_cycle.empty:
        out += ["Per-cycle contrasts: none.", ""]
    else:
        rows = [
            [
                str(r["treatment"]),
                str(r["subset"]),
                str(r["endpoint"]),
                str(r["run_id"]),
                str(r["cycle"]),
                str(r["n_pairs"]),
                _pct(r["pct_change"]),
            ]
            for r in _rows(per_cycle)
        ]
        out += [
            "Per-cycle contrasts (published endpoint):",
            "",
            _md_table(["treatment", "subset", "endpoint", "run", "cycle", "pairs", "change"], rows),
            "",
        ]
    drift = result.drift.merge(published, on=["endpoint", "treatment", "subset"])
    if drift.empty:
        out += ["Drift estimate: not available (needs pairs in both an odd and an even cycle).", ""]
    else:
        rows = [
            [
                str(r["treatment"]),
                str(r["subset"]),
                str(r["endpoint"]),
                _pct(r["pct_odd_cycles"]),
                _pct(r["pct_even_cycles"]),
                _num(r["drift_pp"]),
            ]
            for r in _rows(drift)
        ]
        out += [
            "Drift estimate = (odd-cycle contrast − even-cycle contrast) / 2, i.e. half the "
            "cycle-1 minus cycle-2 difference; the counterbalanced cycle mean cancels a "
            "linear drift of this size.",
            "",
            _md_table(
                ["treatment", "subset", "endpoint", "odd cycles", "even cycles", "drift pp"], rows
            ),
            "",
        ]
    if result.calibration.empty:
        out += ["Calibration drift: no session recorded a calibration.", ""]
    else:
        rows = [
            [
                str(r["session"]),
                str(r["treatment"]),
                str(r["cycle"]),
                _num(r["start_tps"]),
                _num(r["end_tps"]),
                _pct(r["drift_pct"]),
            ]
            for r in _rows(result.calibration)
        ]
        out += [
            "Per-session calibration drift:",
            "",
            _md_table(["session", "treatment", "cycle", "start tps", "end tps", "drift"], rows),
            "",
        ]
    return out


def _section_truncation(result: AnalysisResult) -> list[str]:
    out = ["## Truncated measurements", ""]
    t = result.truncated
    if t.empty:
        return [*out, "None: no analysed measurement hit the token cap.", ""]
    out.append(
        "These hit the token cap (finish_reason `length`). They are valid rate observations; "
        "a statement about content equivalence must exclude these prompts by name."
    )
    out.append("")
    for prompt, frame in t.groupby("prompt_id", sort=True):
        where = ", ".join(
            f"{r['treatment']} c{r['cycle']}" + (f" r{r['repeat']}" if r["repeat"] != 1 else "")
            for r in _rows(frame)
        )
        out.append(f"- `{prompt}`: {where}")
    return [*out, ""]


def _section_groups(result: AnalysisResult) -> list[str]:
    out = [
        "## Comparability groups",
        "",
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
            f"treatments {', '.join(g.treatments)}; sessions {', '.join(g.sessions)}"
        )
        out.append("   - " + "; ".join(f"{k} = {v}" for k, v in g.keyed))
    return [*out, ""]


# From bench/coverage.py (tests/test_analysis_coverage.py checks a few cells in CI).
MEASURED_COVERAGE = (
    "Measured coverage of this 95% interval (bench/coverage.py: 600 replications a cell, "
    "2,000 resamples, prompt-effect sd 0.10, noise sd 0.05, 2 cycles): 0.94–0.99 at 4, 6, 8, "
    "12 and 16 prompts per subset under normal, skewed (centred exponential) and t(3) prompt "
    "effects, lowest 0.938; Student's t quantile alone 0.91–0.97 (0.913 skewed), the "
    "percentile bootstrap 0.77–0.94. With no true effect at 8 prompts, 2.8–5.4% of cells "
    "were called faster or slower (percentile bootstrap: 10.8–12.1%). With 4 or 6 cycles and "
    "a session sd of 0.02–0.05 the session-level interval covered 0.94–0.99; with 2 cycles "
    "and a session sd of 0.05 the prompts-only interval covered as little as 0.58 (pooled, "
    "16 prompts)."
)


def _section_method(result: AnalysisResult) -> list[str]:
    s = result.settings
    n_t, n_s = len(result.treatments), len(result.subsets) + (len(result.subsets) >= 2)
    total = n_t * n_s * len(ENDPOINTS)
    return [
        "## Method and multiplicity",
        "",
        "Each treatment is paired with the baseline within (prompt, cycle) after averaging "
        "repeats; a prompt's cluster value is the mean over its cycles of log(treatment / "
        "baseline); a subset's estimate is the mean over its prompts, pooled is the "
        "equal-weight mean of the subset estimates. Percent change = 100·expm1(mean log ratio).",
        "",
        "Published 95% and 90% intervals (`ci_low`/`ci_high`, `ci90_low`/`ci90_high`): mean ± "
        "q·SE on the log scale. SE is the t-interval's, from the per-prompt log ratios "
        "(Welch–Satterthwaite df for pooled). q is the larger of Student's t quantile and the "
        "symmetric bootstrap-t quantile (the quantile of |mean* − mean| / SE* over "
        f"{s.boot} prompt resamples within each subset, seed {s.seed}, one index matrix per "
        "subset shared by every treatment and both endpoints). Why: the percentile bootstrap, "
        "published before, under-covers at these sizes; the t quantile alone under-covers a "
        "skewed prompt effect; the larger of the two held coverage in every case measured, and "
        f"the interval is never narrower than the t-interval. {MEASURED_COVERAGE}",
        "",
        f"Session level (`interval_method` {WITH_SESSION}): with {MIN_CYCLES_FOR_SESSION} or "
        "more cycles every (treatment, cycle) server session may carry its own offset. The "
        "log ratios are then read as y[p,c] = μ + a_p + b_c + e_pc, b_c shared by the subsets "
        "of a cycle; the session variance of the mean (var of the cycle means over the cycles, "
        "less the residual mean square's share, truncated at 0) is added to SE² and the df "
        "comes from Satterthwaite over every mean square used. With fewer cycles "
        f"(`{PROMPTS_ONLY}`) the intervals are conditional on the sessions that were run.",
        "",
        f"Decision (margin ±{s.margin_pct:g}%): `equivalent` when the 90% interval lies inside "
        "±margin; otherwise `faster` when the 95% interval is above 0, `slower` when below 0, "
        f"else `inconclusive`; `insufficient` when a subset has fewer than "
        f"{MIN_PROMPTS_FOR_DECISION} prompts (pooled: when any subset has), where neither the "
        "exact sign-flip test nor the interval can be trusted. `underpowered` marks a cell "
        "without a decision whose MDE exceeds the margin: MDE = 100·expm1((t(0.975, df) + "
        f"t({MDE_POWER:g}, df))·SE), the true change a two-sided 5% test detects with "
        f"{MDE_POWER:.0%} power.",
        "",
        "Columns (issue 13): `interval_method`, `se_pct` (100·SE), `df`, `session_se_pct` "
        "(what the session level adds to SE in quadrature, percent), `boot_ci_low` / "
        "`boot_ci_high` (the percentile bootstrap, a cross-check now); `t_ci_low` / "
        "`t_ci_high` are gone (the published interval is t-based); `--boot` must be "
        f"{MIN_BOOT} or more.",
        "",
        f"Multiplicity: {n_t} treatment(s) × {n_s} subset cell(s) × {len(ENDPOINTS)} endpoints "
        f"= {total} intervals; no correction for multiplicity is applied, so each interval "
        "covers its own contrast and is not a joint 95% guarantee.",
        "",
    ]


def render_report(result: AnalysisResult) -> str:
    """report.md for one analysis."""
    s = result.settings
    lines = [
        f"# mtpsweep analysis: {_title(result)}",
        "",
        f"Baseline `{s.baseline}`; {s.boot} resamples, seed {s.seed}; margin ±{s.margin_pct:g}%;"
        f" tie-break {s.tiebreak_pp:g} pp; pre-registered endpoint {s.primary_endpoint} "
        f"({ENDPOINT_LABELS[s.primary_endpoint]}).",
        "",
    ]
    if s.exploratory:
        lines += [
            f"**Secondary, exploratory:** the baseline `{s.baseline}` is not the pre-registered "
            f"baseline `{s.registered_baseline}`.",
            "",
        ]
    if len(result.run_ids) > 1:
        lines += [f"Pooled runs (--pool, keyed fields identical): {', '.join(result.run_ids)}.", ""]
    reason = no_pairs_reason(result)
    if reason is not None:
        lines += [f"**{reason}**", ""]
    else:
        lines += _section_headline(result)
        lines += _section_tiebreak(result)
        lines += _section_crosschecks(result)
    lines += _section_census(result)
    if reason is None:
        lines += _section_drift(result)
        lines += _section_position(result)
    lines += _section_truncation(result)
    lines += _section_groups(result)
    lines += _section_method(result)
    if reason is not None:
        plot = "Forest plot: not drawn, there are no contrasts."
    elif result.plot_available:
        plot = "Forest plot: `forest.png` (published endpoint, 95% and 90% intervals)."
    else:
        plot = "Forest plot: skipped, matplotlib is not importable (install the `plots` extra)."
    lines += ["## Plot", "", plot, ""]
    if result.notes:
        lines += ["## Notes", "", *(f"- {n}" for n in result.notes), ""]
    return "\n".join(lines)


def compare_table(results: Sequence[AnalysisResult]) -> str:
    """A descriptive side-by-side of each run's own published contrasts; nothing is pooled."""
    head = (
        f"{COMPARE_LABEL.capitalize()}. Each run was analysed separately against its own "
        "baseline; no interval here compares the runs, and evening, restart and cohort effects "
        "between them are uncontrolled."
    )
    keys: list[tuple[str, str]] = []
    for r in results:
        for row in _rows(r.published):
            if (row["treatment"], row["subset"]) not in keys:
                keys.append((str(row["treatment"]), str(row["subset"])))
    order = {POOLED: 2, "prose": 0, "structured": 1}
    keys.sort(key=lambda k: (k[0], order.get(k[1], 1.5), k[1]))
    headers = ["treatment", "subset"] + [
        f"{r.run_ids[0]} (vs {r.settings.baseline})" for r in results
    ]
    rows = []
    for key in keys:
        cells = []
        for r in results:
            pub = r.published.set_index(["treatment", "subset"])
            if key in pub.index:
                row = pub.loc[key]
                cells.append(
                    f"{_pct(row['pct_change'])} {_ci(row['ci_low'], row['ci_high'])} "
                    f"{row['decision']} ({row['endpoint']}, n={int(row['n_prompts'])})"
                )
            else:
                cells.append("-")
        rows.append([key[0], key[1], *cells])
    if not rows:
        return f"{head}\nNeither run has contrasts to show."
    return f"{head}\n{_plain_table(headers, rows)}"
