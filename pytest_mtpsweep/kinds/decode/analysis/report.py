"""Text renderings of a result: the terminal headline table, report.md (the findings) and
the full section set report.html shows (the findings and every diagnostic and method section).
"""

from __future__ import annotations

from ....analysis.stats import MIN_CYCLES_FOR_SESSION
from ....report.document import anchor
from ....report.mdtext import Md, md_code, md_text
from . import devices, hostrule
from .model import ENDPOINT_LABELS, AnalysisResult
from .report_diagnostics import (
    degenerate_warning,
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
from .report_method import section_crosschecks, section_method, section_tiebreak
from .textfmt import (
    ci,
    dict_rows,
    flags,
    md_table,
    no_pairs_reason,
    num,
    pct,
    plain_table,
    title,
)


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
    primary = result.settings.primary_endpoint
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
            Md(f"**{md_text(r['decision'])}**"),
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
    switched = [r for r in dict_rows(result.published) if r["endpoint"] != primary]
    if switched:
        out += [
            f"Published on the {md_text(switched[0]['endpoint'])} endpoint, not the "
            f"pre-registered {md_text(primary)}: {md_text(switched[0]['published_reason'])} (see "
            f"`report.html#{anchor('Endpoints and tie-break')}`).",
            "",
        ]
    if result.sequential is not None:
        out += [result.sequential.sentence(), ""]
    if prompts_only:
        out += [
            f"With fewer than {MIN_CYCLES_FOR_SESSION} cycles these intervals are conditional on "
            "the server sessions that were run (see Limitations); the per-cycle contrasts "
            "beside each figure show how far it moved between sessions.",
            "",
        ]
    return [*out, md_table(headers, rows), ""]


DETAIL = "## Detail in report.html"
# Where each section that only report.html carries keeps its rows (report.md names it).
DETAIL_FILES = {
    "Endpoints and tie-break": "rows in `contrasts.csv` (`published`, `divergence_pp`)",
    "Small-sample cross-checks": "rows in `contrasts.csv` (`arith_pct_change`, `boot_ci_*`, "
    "`perm_p`)",
    "Content equivalence": "rows in `equivalence.csv`",
    "Drift": "rows in `per_cycle.csv` and `contrasts.json` (`drift`)",
    "Position within session": "rows in `position_trend.csv`",
    "Truncated measurements": "rows in `truncated.csv`",
    "What the model wrote": "rows in `contrasts.json` (`degenerate`)",
    "Interval endpoint basis": "rows in `contrasts.json` (`interval_basis`)",
    "Host noise": "rows in `contrasts.json` (`host`, `calibration`)",
    "Comparability groups": "rows in `contrasts.json` (`groups`)",
    "Method and multiplicity": "text only",
}


def _preamble(result: AnalysisResult) -> list[str]:
    s = result.settings
    lines = [f"# mtpsweep analysis: {md_text(title(result))}", "", *section_question(result)]
    lines += [
        f"Baseline {md_code(s.baseline)}; {s.boot} resamples, seed {s.seed}; margin ±{s.margin_pct:g}%;"
        f" tie-break {s.tiebreak_pp:g} pp; pre-registered endpoint {s.primary_endpoint} "
        f"({ENDPOINT_LABELS[s.primary_endpoint]}).",
        "",
    ]
    if s.exploratory:
        lines += [
            f"**Secondary, exploratory:** the baseline {md_code(s.baseline)} is not the "
            f"pre-registered baseline {md_code(s.registered_baseline)}.",
            "",
        ]
    if len(result.run_ids) > 1:
        runs = md_text(", ".join(result.run_ids))
        lines += [f"Pooled runs (--pool, keyed fields identical): {runs}.", ""]
    reason = no_pairs_reason(result)
    if reason is not None:
        lines += [f"**{md_text(reason)}**", ""]
    return lines


def _parts(result: AnalysisResult) -> list[tuple[list[str], bool]]:
    """Every section in report order, each marked True when report.md carries it."""
    reason = no_pairs_reason(result)
    parts: list[tuple[list[str], bool]] = [(_preamble(result), True)]
    if reason is None:
        parts += [(_section_headline(result), True)]
        parts += [(devices.render(result.per_device, result.settings.primary_endpoint), True)]
        parts += [(hostrule.section(result.host_rule, result.published), True)]
    parts += [(section_limitations(result), True)]
    if reason is None:
        parts += [(section_tiebreak(result), False), (section_crosschecks(result), False)]
    parts += [(section_equivalence(result), False)]
    parts += [(section_acceptance(result), True), (section_census(result), True)]
    if reason is None:
        parts += [(section_drift(result), False), (section_position(result), False)]
    for detail in (section_truncation, section_degenerate, section_interval_basis, section_host,
                   section_groups, section_method):  # fmt: skip
        parts += [(detail(result), False)]
    if reason is not None:
        plot = "Forest plot: not drawn, there are no contrasts."
    elif result.plot_available:
        plot = "Forest plot: `forest.png` (published endpoint, 95% and 90% intervals)."
    else:
        plot = "Forest plot: skipped, matplotlib is not importable (install the `plots` extra)."
    parts += [(["## Plot", "", plot, ""], True)]
    if result.notes:
        parts += [(["## Notes", "", *(f"- {md_text(n)}" for n in result.notes), ""], True)]
    return parts


def _pointers(titles: list[str]) -> list[str]:
    """One line per section only report.html carries: its anchor and the file with its rows."""
    return [
        DETAIL,
        "",
        "Diagnostics and method, each a collapsed section of `report.html` beside this file "
        "(every limitation they show is named above):",
        "",
        *(f"- {t}: `report.html#{anchor(t)}`; {DETAIL_FILES.get(t, 'text only')}"
          for t in titles),
        "",
    ]  # fmt: skip


def render_report(result: AnalysisResult) -> str:
    """report.md, a findings document: question, scope, headline, limitations, the tables that
    decide (draft acceptance, census), and one line per detail section naming where it is."""
    lines: list[str] = []
    moved: list[str] = []
    for part, kept in _parts(result):
        if kept:
            if part[:1] == ["## Plot"] and moved:
                lines += _pointers(moved)
            lines += part
        elif part:
            moved.append(part[0].removeprefix("## "))
    return "\n".join(lines)


def render_full(result: AnalysisResult) -> str:
    """Every section, report.md's and the detail's, in report order: what report.html shows."""
    return "\n".join(line for part, _ in _parts(result) for line in part)
