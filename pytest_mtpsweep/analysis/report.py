"""Text renderings of a result: the terminal headline table and report.md."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..constants import MIN_BOOT
from . import devices
from .model import (
    ENDPOINT_LABELS,
    ENDPOINTS,
    MDE_POWER,
    MIN_CYCLES_FOR_SESSION,
    MIN_PROMPTS_FOR_DECISION,
    AnalysisResult,
)
from .report_diagnostics import (
    degenerate_warning,
    interval_fallback_warning,
    section_census,
    section_degenerate,
    section_drift,
    section_groups,
    section_host,
    section_interval_basis,
    section_position,
    section_truncation,
)
from .report_findings import (
    conditional,
    section_acceptance,
    section_equivalence,
    section_limitations,
    section_question,
)
from .stats import PROMPTS_ONLY, WITH_SESSION
from .textfmt import (
    ci,
    dict_rows,
    finite,
    flags,
    md_table,
    no_pairs_reason,
    num,
    pct,
    plain_table,
    title,
)

TIEBREAK_HEADERS = ["treatment", "subset", "primary", "interval", "divergence pp",
                    "beyond tie-break", "published", "why"]  # fmt: skip


def headline_table(result: AnalysisResult) -> str:
    """A compact plain-text table of the published figures, for a terminal summary."""
    s = result.settings
    head = (
        f"mtpsweep analysis {title(result)}: vs baseline {s.baseline!r}, "
        f"boot {s.boot} (seed {s.seed}), margin ±{s.margin_pct:g}%"
    )
    warning = degenerate_warning(result)
    if warning:
        head = f"{head}\n{warning}"
    reason = no_pairs_reason(result)
    if reason is not None:
        return f"{head}\n{reason}"
    rows = [
        [
            str(r["treatment"]),
            str(r["subset"]),
            str(r["endpoint"]),
            pct(r["pct_change"]),
            ci(r["ci_low"], r["ci_high"]),
            str(r["decision"]),
            f"{int(r['n_prompts'])}/{int(r['n_pairs'])}",
            flags(r),
        ]
        for r in dict_rows(result.published)
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
    return f"{head}\n{plain_table(headers, rows)}"


def _per_cycle_text(result: AnalysisResult) -> dict[tuple[str, str, str], str]:
    """'c1 +3.10%, c2 +2.95%' per (endpoint, treatment, subset), run-qualified when pooled."""
    out: dict[tuple[str, str, str], list[str]] = {}
    many = len(result.run_ids) > 1
    for r in dict_rows(result.per_cycle):
        where = f"{r['run_id']} c{r['cycle']}" if many else f"c{r['cycle']}"
        key = (str(r["endpoint"]), str(r["treatment"]), str(r["subset"]))
        out.setdefault(key, []).append(f"{where} {pct(r['pct_change'])}")
    return {k: ", ".join(v) for k, v in out.items()}


def _section_headline(result: AnalysisResult) -> list[str]:
    prompts_only = conditional(result)
    cycles = _per_cycle_text(result) if prompts_only else {}
    rows = []
    for r in dict_rows(result.published):
        row = [
            str(r["treatment"]),
            str(r["subset"]),
            str(r["endpoint"]),
            pct(r["pct_change"]),
            ci(r["ci_low"], r["ci_high"]),
            ci(r["ci90_low"], r["ci90_high"]),
            f"**{r['decision']}**",
            num(r["mde_pct"]) + (" (underpowered)" if bool(r["underpowered"]) else ""),
            str(int(r["n_prompts"])),
            str(int(r["n_pairs"])),
            str(r["interval_method"]),
        ]
        if prompts_only:
            row.append(cycles.get((str(r["endpoint"]), str(r["treatment"]), str(r["subset"])), ""))
        rows.append([*row, str(r["note"])])
    headers = ["treatment", "subset", "published endpoint", "change", "95% CI", "90% CI",
               "decision", "MDE %", "prompts", "pairs", "interval"]  # fmt: skip
    headers += ["per cycle", "note"] if prompts_only else ["note"]
    out = ["## Headline (published endpoint)", ""]
    if prompts_only:
        out += [
            f"With fewer than {MIN_CYCLES_FOR_SESSION} cycles these intervals are conditional on "
            "the server sessions that were run (see Limitations); the per-cycle contrasts "
            "beside each figure show how far it moved between sessions.",
            "",
        ]
    return [*out, md_table(headers, rows), ""]


def _section_tiebreak(result: AnalysisResult) -> list[str]:
    s = result.settings
    pct_of = {
        (r["endpoint"], r["treatment"], r["subset"]): r["pct_change"]
        for r in dict_rows(result.contrasts)
    }
    rows = []
    for row in dict_rows(result.published):
        div = row["divergence_pp"]
        rows.append(
            [
                str(row["treatment"]),
                str(row["subset"]),
                *(pct(pct_of.get((e, row["treatment"], row["subset"]))) for e in ENDPOINTS),
                num(div),
                "**yes**" if finite(div) and div > s.tiebreak_pp else "no",
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
        md_table(TIEBREAK_HEADERS, rows),
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
            pct(r["pct_change"]),
            pct(r["arith_pct_change"]),
            ci(r["boot_ci_low"], r["boot_ci_high"]),
            f"{num(r['perm_p'], 4)} ({r['perm_method']})",
            num(_min_p(r), 4),
            "yes" if bool(r["sign_disagreement"]) else "no",
            "yes" if bool(r["significance_disagreement"]) else "no",
        ]
        for r in dict_rows(result.contrasts)
    ]
    blind = sorted({int(r["n_prompts"]) for r in dict_rows(result.contrasts) if _min_p(r) >= 0.05})
    out = [
        "## Small-sample cross-checks",
        "",
        "Geometric (the published point) and arithmetic mean percent change, the percentile "
        "cluster bootstrap 95% interval (published before the bootstrap-t interval; it "
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
    return [*out, md_table(headers, rows), ""]


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
        "Columns: `interval_method`, `se_pct` (100·SE), `df`, `session_se_pct` "
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
    """report.md for one analysis: question, headline, limitations, then the detail."""
    s = result.settings
    lines = [f"# mtpsweep analysis: {title(result)}", "", *section_question(result)]
    lines += [
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
    fallback = interval_fallback_warning(result)  # degenerate text: under Limitations
    if fallback:
        lines += [f"**{fallback}**", ""]
    reason = no_pairs_reason(result)
    if reason is not None:
        lines += [f"**{reason}**", ""]
    else:
        lines += _section_headline(result)
        lines += devices.render(result.per_device, result.settings.primary_endpoint)
    lines += section_limitations(result)
    if reason is None:
        lines += _section_tiebreak(result)
        lines += _section_crosschecks(result)
    lines += section_equivalence(result)
    lines += section_acceptance(result)
    lines += section_census(result)
    if reason is None:
        lines += section_drift(result)
        lines += section_position(result)
    lines += section_truncation(result)
    lines += section_degenerate(result)
    lines += section_interval_basis(result)
    lines += section_host(result)
    lines += section_groups(result)
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
