"""Text renderings of a result: the terminal headline table, report.md, the compare view."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from pytest_mtpsweep.analysis.model import (
    ENDPOINT_LABELS,
    ENDPOINTS,
    MDE_MULTIPLIER,
    POOLED,
    AnalysisResult,
)

COMPARE_LABEL = "secondary, descriptive: different runs"


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
    # Plain dicts: iterrows builds a Series per row, which dominated the report's run time.
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict(orient="records")]


def _flags(row: Mapping[str, Any]) -> str:
    flags = []
    if bool(row["underpowered"]):
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


def _section_headline(result: AnalysisResult) -> list[str]:
    rows = [
        [
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
            f"{int(r['boot_kept'])}/{int(r['boot_requested'])}",
            str(r["note"]),
        ]
        for r in _rows(result.published)
    ]
    headers = [
        "treatment",
        "subset",
        "published endpoint",
        "change",
        "95% CI",
        "90% CI",
        "decision",
        "MDE %",
        "prompts",
        "pairs",
        "resamples kept",
        "note",
    ]
    return ["## Headline (published endpoint)", "", _md_table(headers, rows), ""]


def _section_tiebreak(result: AnalysisResult) -> list[str]:
    pct = {
        (r["endpoint"], r["treatment"], r["subset"]): r["pct_change"]
        for r in _rows(result.contrasts)
    }
    rows = [
        [
            str(row["treatment"]),
            str(row["subset"]),
            *(_pct(pct.get((e, row["treatment"], row["subset"]))) for e in ENDPOINTS),
            _num(row["divergence_pp"]),
            str(row["endpoint"]),
            str(row["published_reason"]),
        ]
        for row in _rows(result.published)
    ]
    s = result.settings
    return [
        "## Endpoints and tie-break",
        "",
        f"Pre-registered endpoint: {s.primary_endpoint}. Rule: where the two endpoints differ "
        f"by more than {s.tiebreak_pp:g} pp in a cell, that cell publishes the interval-basis "
        "figure.",
        "",
        _md_table(
            ["treatment", "subset", "primary", "interval", "divergence pp", "published", "why"],
            rows,
        ),
        "",
    ]


def _section_crosschecks(result: AnalysisResult) -> list[str]:
    rows = [
        [
            str(r["treatment"]),
            str(r["subset"]),
            str(r["endpoint"]),
            _pct(r["pct_change"]),
            _pct(r["arith_pct_change"]),
            _ci(r["t_ci_low"], r["t_ci_high"]),
            f"{_num(r['perm_p'], 4)} ({r['perm_method']})",
            "yes" if bool(r["sign_disagreement"]) else "no",
            "yes" if bool(r["significance_disagreement"]) else "no",
        ]
        for r in _rows(result.contrasts)
    ]
    return [
        "## Small-sample cross-checks",
        "",
        "Geometric (bootstrap point) and arithmetic mean percent change, a t-interval on the "
        "per-prompt log ratios, and a sign-flip permutation p-value (exact over all 2^n sign "
        "patterns up to 16 prompts, Monte Carlo above). A sign disagreement means the "
        "geometric and arithmetic means, or the bootstrap and t-intervals, point different ways.",
        "",
        _md_table(
            [
                "treatment",
                "subset",
                "endpoint",
                "geometric",
                "arithmetic",
                "t 95% CI",
                "sign-flip p",
                "sign disagreement",
                "bootstrap vs p<0.05 disagree",
            ],
            rows,
        ),
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


def _section_method(result: AnalysisResult) -> list[str]:
    s = result.settings
    n_t, n_s = len(result.treatments), len(result.subsets) + (len(result.subsets) >= 2)
    total = n_t * n_s * len(ENDPOINTS)
    return [
        "## Method and multiplicity",
        "",
        "Each treatment is paired with the baseline within (prompt, cycle) after averaging "
        "repeats; a prompt's cluster value is the mean over its cycles of log(treatment / "
        f"baseline). Prompts are resampled with replacement within each subset ({s.boot} "
        f"resamples, seed {s.seed}), one index matrix per subset shared by every treatment and "
        "both endpoints; pooled is the equal-weight mean of the subset estimates inside each "
        "resample. Percent change = 100·expm1(mean log ratio); intervals are percentiles of "
        "the kept resamples (a resample is dropped when it draws no prompt with a pair).",
        "",
        f"Decision (margin ±{s.margin_pct:g}%): `equivalent` when the 90% interval lies inside "
        "±margin; otherwise `faster` when the 95% interval is above 0, `slower` when below 0, "
        "else `inconclusive` (also when a subset has fewer than 2 prompts). `underpowered` "
        f"when MDE = {MDE_MULTIPLIER:g} × bootstrap SE (in percent) exceeds the margin: the "
        "true effect a two-sided 5% test would catch with 80% power.",
        "",
        f"Multiplicity: {n_t} treatment(s) × {n_s} subset cell(s) × {len(ENDPOINTS)} endpoints "
        f"= {total} intervals; no correction for multiplicity is applied, so each interval "
        "describes its own bootstrap distribution and is not a joint 95% guarantee.",
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
