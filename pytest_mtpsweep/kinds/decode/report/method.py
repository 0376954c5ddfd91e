"""report.html's method detail: the endpoints' tie-break, the small-sample cross-checks, and
the method with its multiplicity (report.md names where they are, not what they say)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ....kindapi import BOOT
from ....kindapi import analysis as stats
from ....kindapi.report import Md
from ..analysis.contraststats import MDE_POWER
from ..analysis.runvalues import ENDPOINTS, DecodeAnalysis
from ..analysis.tiebreak import SERVER_CLOCK_AGREE_PP
from .textfmt import ci, dict_rows, finite, num, pct, texts, titled

TIEBREAK_HEADERS = [
    "treatment",
    "subset",
    "primary",
    "interval",
    "divergence pp",
    "beyond tie-break",
    "published",
    "why",
]


@titled("Endpoints and tie-break")
def section_tiebreak(result: DecodeAnalysis) -> list[str]:
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
                Md("**yes**") if finite(div) and div > s.tiebreak_pp else "no",
                str(row["endpoint"]),
                str(row["published_reason"]),
            ]
        )
    return [
        f"Pre-registered endpoint: {s.primary_endpoint}. Rule: if the two endpoints differ by "
        f"more than {s.tiebreak_pp:g} pp in ANY treatment × subset cell, the interval-basis "
        "figure is published for the whole headline (a cell where one endpoint has no pairs "
        "publishes the other); the server's clock is preferred only where the two agree within "
        f"{SERVER_CLOCK_AGREE_PP:g} pp in every cell, and past that the client's primary figure "
        "is published, whatever was registered.",
        "",
        Md.table(TIEBREAK_HEADERS, rows),
        "",
    ]


def _min_p(row: Mapping[str, Any]) -> float:
    # The smallest p an exact sign-flip test can give: both all-plus and all-minus patterns.
    n = int(row["n_prompts"])
    return 2.0 ** (1 - n) if row["perm_method"] == "exact" and n > 0 else math.nan


@titled("Small-sample cross-checks")
def section_crosschecks(result: DecodeAnalysis) -> list[str]:
    rows = [
        [
            *texts(r, "treatment", "subset", "endpoint"),
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
    headers = [
        "treatment",
        "subset",
        "endpoint",
        "geometric",
        "arithmetic",
        "bootstrap 95% CI",
        "sign-flip p",
        "min attainable p",
        "sign disagreement",
        "interval vs p<0.05 disagree",
    ]
    return [*out, Md.table(headers, rows), ""]


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


@titled("Method and multiplicity")
def section_method(result: DecodeAnalysis) -> list[str]:
    s = result.settings
    n_t, n_s = len(result.treatments), len(result.subsets) + (len(result.subsets) >= 2)
    total = n_t * n_s * len(ENDPOINTS)
    return [
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
        "subset shared by every treatment and both endpoints), the latter capped at "
        f"{stats.INTERVAL.boot_t_max_factor:g}× the t quantile. Why: the percentile bootstrap, published "
        "before, under-covers at these sizes; the t quantile alone under-covers a skewed prompt "
        "effect; the larger of the two held coverage in every case measured, and the interval "
        "is never narrower than the t-interval. The cap: resamples that repeat a few "
        "near-identical prompts have an SE* near 0, so tight prompts with one outlier drive the "
        "bootstrap-t quantile into the hundreds; capped, it cost at most 0.003 of coverage in "
        f"any cell measured. {MEASURED_COVERAGE}",
        "",
        f"Session level (`interval_method` {stats.Spread.WITH_SESSION}): with "
        f"{stats.INTERVAL.session_cycles} or more cycles every (treatment, cycle) server session "
        "may carry its own offset. The "
        "log ratios are then read as y[p,c] = μ + a_p + b_c + e_pc, b_c shared by the subsets "
        "of a cycle; the session variance of the mean (var of the cycle means over the cycles, "
        "less the residual mean square's share, truncated at 0) is added to SE² and the df "
        "comes from Satterthwaite over every mean square used, floored at the fewest df of a "
        "positive term (prompts - 1, cycles - 1), so no interval is wider than its data allow. "
        "With fewer cycles "
        f"(`{stats.Spread.PROMPTS_ONLY}`) the intervals are conditional on the sessions that were run.",
        "",
        f"Decision (margin ±{s.margin_pct:g}%): `equivalent` when the 90% interval lies inside "
        "±margin; otherwise `faster` when the 95% interval is above 0, `slower` when below 0, "
        f"else `inconclusive`; `insufficient` when a subset has fewer than "
        f"{stats.INTERVAL.min_prompts} prompts (pooled: when any subset has), where neither "
        "the exact sign-flip test nor the interval can be trusted. `underpowered` marks a cell "
        "without a decision whose MDE exceeds the margin: MDE = 100·expm1((t(0.975, df) + "
        f"t({MDE_POWER:g}, df))·SE), the true change a two-sided 5% test detects with "
        f"{MDE_POWER:.0%} power.",
        "",
        "Columns: `interval_method`, `se_pct` (100·SE), `df`, `session_se_pct` "
        "(what the session level adds to SE in quadrature, percent), `boot_ci_low` / "
        "`boot_ci_high` (the percentile bootstrap, a cross-check now); `t_ci_low` / "
        "`t_ci_high` are gone (the published interval is t-based); `--boot` must be "
        f"{BOOT.min} or more.",
        "",
        f"Multiplicity: {n_t} treatment(s) × {n_s} subset cell(s) × {len(ENDPOINTS)} endpoints "
        f"= {total} intervals; no correction for multiplicity is applied, so each interval "
        "covers its own contrast and is not a joint 95% guarantee.",
        "",
    ]
