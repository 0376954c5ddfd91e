"""A result as its report model, and the terminal's headline table.

`report_model` is the one model report.md and report.html are rendered from: the question and
scope, the headline (its table, the forest plot), per device and the host rule, the
limitations, then every diagnostic and method section (the page's alone, report.md names where
each is), the pictures and the notes. `render_report` is report.md's text, `render_full` the
page's sections as Markdown (what the page says, for reading in a test or a terminal).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from ....kindapi.analysis import INTERVAL
from ....kindapi.report import Figure, Md, Report, Section, Table, Text
from ..analysis import devices, sweep
from ..analysis import hosteffect as hostrule
from ..analysis.mechanism import sweep_cells
from ..analysis.runvalues import ENDPOINT_LABELS, DecodeAnalysis
from . import page as page
from .diagnostics import (
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
from .findings import (
    conditional,
    section_acceptance,
    section_equivalence,
    section_limitations,
    section_question,
)
from .limits import anchor
from .method import section_crosschecks, section_method, section_tiebreak
from .textfmt import ci, dict_rows, flags, no_pairs_reason, num, pct, plain_table, texts, title
from .whysection import section_mechanism


def headline_table(result: DecodeAnalysis) -> str:
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
            *texts(r, "treatment", "subset", "endpoint"),
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


def _per_cycle_text(result: DecodeAnalysis) -> dict[tuple[str, str, str], str]:
    """'c1 +3.10%, c2 +2.95%' per (endpoint, treatment, subset), run-qualified when pooled."""
    out: dict[tuple[str, str, str], list[str]] = {}
    many = len(result.run_ids) > 1
    for r in dict_rows(result.per_cycle):
        where = f"{r['run_id']} c{r['cycle']}" if many else f"c{r['cycle']}"
        key = (str(r["endpoint"]), str(r["treatment"]), str(r["subset"]))
        out.setdefault(key, []).append(f"{where} {pct(r['pct_change'])}")
    return {k: ", ".join(v) for k, v in out.items()}


HEADLINE_HEADERS = (
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
    "interval",
)
FOREST_CAPTION = (
    "The published endpoint's change against the baseline: 95% (thin) and 90% (thick) "
    "intervals, one x axis for every subset; the grey band is the equivalence margin."
)


def _headline_table(result: DecodeAnalysis) -> Table:
    prompts_only = conditional(result)
    cycles = _per_cycle_text(result) if prompts_only else {}
    rows = []
    for r in dict_rows(result.published):
        row: list[object] = [
            *texts(r, "treatment", "subset", "endpoint"),
            pct(r["pct_change"]),
            ci(r["ci_low"], r["ci_high"]),
            ci(r["ci90_low"], r["ci90_high"]),
            Md(f"**{Md.text(r['decision'])}**"),
            num(r["mde_pct"]) + (" (underpowered)" if bool(r["underpowered"]) else ""),
            str(int(r["n_prompts"])),
            str(int(r["n_pairs"])),
            str(r["interval_method"]),
        ]
        if prompts_only:
            row.append(cycles.get((str(r["endpoint"]), str(r["treatment"]), str(r["subset"])), ""))
        rows.append((*row, str(r["note"])))
    headers = (*HEADLINE_HEADERS, *(("per cycle", "note") if prompts_only else ("note",)))
    return Table(headers, tuple(rows))


def _headline_lead(result: DecodeAnalysis) -> list[str]:
    """What the reader needs before the headline's figures: a switched endpoint, the look, the
    intervals' condition."""
    primary = result.settings.primary_endpoint
    out: list[str] = []
    if conditional(result):
        # First: a short design's figures hold for its sessions, and a reader must know that
        # before any figure (issue 43: a 2-cycle headline read as a general answer).
        n = len({int(c) for c in result.per_cycle["cycle"]}) if len(result.per_cycle) else 0
        out += [
            f"These figures speak only for the server sessions that were run ({n} cycle(s)): "
            f"with fewer than {INTERVAL.session_cycles} cycles the intervals are conditional on "
            "the server sessions that were run and leave a whole session's offset out (see "
            "Limitations); the per-cycle contrasts beside each figure show how far it moved "
            "between sessions.",
            "",
        ]
    switched = [r for r in dict_rows(result.published) if r["endpoint"] != primary]
    if switched:
        out += [
            f"Published on the {Md.text(switched[0]['endpoint'])} endpoint, not the "
            f"pre-registered {Md.text(primary)}: {Md.text(switched[0]['published_reason'])} (see "
            f"`report.html#{anchor('Endpoints and tie-break')}`).",
            "",
        ]
    if result.sequential is not None:
        out += [result.sequential.sentence(), ""]
    return out


def _headline(result: DecodeAnalysis, forest: bool) -> Section:
    """The headline: its lead, its table, and on the page the forest plot under it (forest.png,
    saved beside the report)."""
    lead = "\n".join(_headline_lead(result)).strip("\n")
    blocks: list[Text | Table | Figure] = [Text(lead)] if lead else []
    blocks.append(_headline_table(result))
    if forest:
        blocks.append(Figure("forest plot", FOREST_CAPTION, file=FOREST_PNG))
    return Section("Headline (published endpoint)", tuple(blocks), role="headline")


FOREST_PNG = "forest.png"
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


def _preamble(result: DecodeAnalysis) -> list[str]:
    s = result.settings
    lines = [*section_question(result)]
    lines += [
        f"Baseline {Md.code(s.baseline)}; {s.boot} resamples, seed {s.seed}; margin ±{s.margin_pct:g}%;"
        f" tie-break {s.tiebreak_pp:g} pp; pre-registered endpoint {s.primary_endpoint} "
        f"({ENDPOINT_LABELS[s.primary_endpoint]}).",
        "",
    ]
    if s.exploratory:
        lines += [
            f"**Secondary, exploratory:** the baseline {Md.code(s.baseline)} is not the "
            f"pre-registered baseline {Md.code(s.registered_baseline)}.",
            "",
        ]
    if len(result.run_ids) > 1:
        runs = Md.text(", ".join(result.run_ids))
        lines += [f"Pooled runs (--pool, keyed fields identical): {runs}.", ""]
    reason = no_pairs_reason(result)
    if reason is not None:
        lines += [f"**{Md.text(reason)}**", ""]
    return lines


def _as(
    s: Section | None,
    role: Literal["headline", "limitations", "detail"] = "detail",
    *,
    markdown: bool = True,
    anchor: str = "",
) -> Section | None:
    """A writer's section placed: its role on the page, whether report.md carries it."""
    if s is None:
        return None
    return dataclasses.replace(s, role=role, markdown=markdown, anchor=anchor or s.anchor)


def _with(s: Section | None, extra: Table | None) -> Section | None:
    """`s` with a table of the page's alone after its text."""
    if s is None or extra is None:
        return s
    return dataclasses.replace(s, blocks=(*s.blocks, extra))


def _plot(result: DecodeAnalysis, drawn: bool) -> Section:
    """report.md's line on the forest plot; on the page only where it says why none is drawn
    (a drawn one is under the headline)."""
    if no_pairs_reason(result) is not None:
        plot = "Forest plot: not drawn, there are no contrasts."
    elif result.plot_available:
        plot = "Forest plot: `forest.png` (published endpoint, 95% and 90% intervals)."
    else:
        plot = "Forest plot: skipped, matplotlib is not importable (install the `plots` extra)."
    return Section("Plot", (Text.of(plot),), role="pictures", page=not drawn)


def _pointers(titles: list[str]) -> Section:
    """report.md's own: one line per section only report.html carries, with its anchor and the
    file with its rows."""
    lines = [
        "Diagnostics and method, each a collapsed section of `report.html` beside this file "
        "(every limitation they show is named above):",
        "",
        *(f"- {t}: `report.html#{anchor(t)}`; {DETAIL_FILES.get(t, 'text only')}" for t in titles),
    ]
    return Section(DETAIL[3:], (Text.of(*lines),), page=False)


def report_model(result: DecodeAnalysis, parts: page.PageParts | None = None) -> Report:
    """The report: what report.md and report.html are both rendered from. `parts` is what the
    edge drew for the page (none: the model report.md needs, the same text)."""
    parts = parts or page.PageParts()
    paired = no_pairs_reason(result) is None
    found: list[Section | None] = []
    if paired:
        found += [
            sweep.section(result.sweep, sweep_cells(result.mechanism)),
            _headline(result, parts.forest),
            _as(devices.render(result.per_device, result.settings.primary_endpoint), "headline"),
            _as(
                hostrule.section(result.host_rule, result.published),
                "headline",
                anchor=anchor(hostrule.TITLE),
            ),
        ]
    found.append(_as(section_limitations(result), "limitations"))
    detail: list[tuple[Section, bool, Table | None]] = []
    if paired:
        detail += [
            (section_tiebreak(result), False, None),
            (section_crosschecks(result), False, None),
        ]
    detail += [
        (section_equivalence(result), False, page.equivalence_cells(result)),
        (section_acceptance(result), True, None),
        (section_mechanism(result), True, None),
        (section_census(result), True, page.gap_cells(result)),
    ]
    if paired:
        detail += [(section_drift(result), False, None), (section_position(result), False, None)]
    detail += [(section_truncation(result), False, page.truncated_cells(result))]
    for writer in (
        section_degenerate,
        section_interval_basis,
        section_host,
        section_groups,
        section_method,
    ):
        detail.append((writer(result), False, None))
    for written, kept, extra in detail:
        found.append(_with(_as(written, markdown=kept), extra))
    sections = [s for s in found if s is not None]
    moved = [s.title for s in sections if not s.markdown]
    if moved:
        sections.append(_pointers(moved))
    sections += [*parts.pictures, _plot(result, parts.forest)]
    if result.notes:
        sections.append(Section("Notes", (Text.of(*(f"- {Md.text(n)}" for n in result.notes)),)))
    opening = "\n".join(_preamble(result)).strip("\n")
    return Report(
        title=f"mtpsweep analysis: {Md.text(title(result))}",
        opening=(Text(opening),),
        sections=tuple(sections),
    )


def render_report(result: DecodeAnalysis) -> str:
    """report.md, a findings document: question, scope, headline, limitations, the tables that
    decide (draft acceptance, census), and one line per detail section naming where it is."""
    return report_model(result).markdown()


def render_full(result: DecodeAnalysis) -> str:
    """Every section the page shows, report.md's and the detail's, in report order, as
    Markdown (the page's own record tables and pictures aside)."""
    report = report_model(result)
    shown = tuple(dataclasses.replace(s, markdown=True) for s in report.sections if s.page)
    return dataclasses.replace(report, sections=shown).markdown()
