"""The decode kind's sections of report.html, from its analysis and what the analysis wrote.

The text is the analysis' full section set (`render_full`), of which report.md is the findings
part, so the page and the file cannot disagree: question, scope and headline with the forest
plot, then Limitations, then the pictures drawn from the records, then every other section
collapsed (the diagnostics and the method that report.md only points at), the long per-cell
lists (content equivalence, truncation, gaps) as filterable tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import schema
from ...report import images, write_report_html
from ...report import mdhtml as md
from ...report.document import Markup, PageSection, anchor, el, join
from ...report.tables import filterable
from ...state.runread import RunReader, read_table
from . import html_plots

if TYPE_CHECKING:
    from .analysis.model import AnalysisResult

# shown above, not again below
FIRST = ("Headline", "Per device", "Host rule", "Limitations", "Plot")
TRUNCATED_HEADERS = ("prompt_id", "subset", "treatment", "cycle", "repeat", "run_id", "session",
                     "completion_tokens")  # fmt: skip


def _csv(path: Path) -> tuple[list[str], list[list[str]]]:
    found = read_table(path)
    return list(found.headers), [list(row) for row in found.rows]


def _endpoint(data: Mapping[str, Any]) -> str:
    """The endpoint most published cells use (the tie-break can publish the interval one)."""
    published = [r["endpoint"] for r in data.get("contrasts", []) if r.get("published")]
    if published:
        return str(Counter(published).most_common(1)[0][0])
    return str(data.get("settings", {}).get("primary_endpoint") or "primary")


def _headline(doc: md.Document, forest: Path) -> Markup:
    parts = [md.render(doc.preamble)]
    for name in ("Headline", "Per device", "Host rule"):
        body = doc.section(name)
        title = next((t for t, _ in doc.sections if t.startswith(name)), name)
        if body is not None:
            # the host rule's section is linked from Limitations (report.html#host-rule)
            parts.append(
                el("h3", title, id=anchor(name)) if name == "Host rule" else el("h3", title)
            )
            parts.append(md.render(body))
    if forest.is_file():
        parts.append(
            images.png(
                forest.read_bytes(),
                "forest plot",
                "The published endpoint's change against the baseline: 95% (thin) and 90% "
                "(thick) intervals, one x axis for every subset; the grey band is the "
                "equivalence margin.",
            )
        )
    return el("div", join(parts), id="headline")


def _run_dirs(run_dir: Path, data: Mapping[str, Any]) -> list[Path]:
    named = [Path(p) for p in data.get("run_dirs", [])]
    found = [p for p in named if (p / schema.RECORDS_DIR).is_dir()]
    return found if len(found) == len(named) and found else [run_dir]


def _chosen(frame: Any, data: Mapping[str, Any]) -> Any:
    """The records of the analysed comparability group (all of them if names do not match)."""
    group = next((g for g in data.get("groups", []) if g.get("chosen")), None)
    sessions = set(group.get("sessions", [])) if group else set()
    mine = frame["session"].isin(sessions)
    return frame[mine] if mine.any() else frame


def _pictures(run_dir: Path, data: Mapping[str, Any], drawn: bool, doc: md.Document) -> Markup:
    # The analysis decided whether to draw (forest.png is there); the other pictures follow it.
    if not drawn:
        why = md.render(doc.section("Plot") or "")
        return join([why, images.missing()]) if not images.available() else why
    frame = html_plots.records(_run_dirs(run_dir, data))
    settings = data.get("settings", {})
    baseline = str(settings.get("baseline", ""))
    treatments = [str(t) for t in data.get("treatments", [])]
    endpoint = _endpoint(data)
    margin = float(settings.get("margin_pct") or 0.0)
    order = [baseline, *treatments]
    chosen = _chosen(frame, data)
    acceptance = images.figure(
        lambda: html_plots.acceptance_figure(data.get("acceptance", [])),
        "draft acceptance",
        "Drafted tokens the target model accepted, summed over the analysed measurements.",
    )
    pictures = [
        el("h3", "Each prompt, each cycle"),
        images.figure(
            lambda: html_plots.paired_figure(chosen, baseline, treatments, endpoint, margin),
            "paired dot plot",
            f"Each prompt's change against {baseline} ({endpoint} endpoint), one mark per cycle "
            "and a bar for the prompt's mean over its cycles; every panel shares the x axis. "
            "Marks far from their bar are the session-to-session spread the intervals carry.",
        ),
        el("h3", "Session timeline"),
        images.figure(
            lambda: html_plots.timeline_figure(frame, order, endpoint),
            "session timeline",
            "Every valid measurement's rate against wall time, coloured by treatment: a drift "
            "or a burst of host load shows as a slope or a dip shared across treatments.",
        ),
        el("h3", "Draft acceptance"),
        acceptance if acceptance.html else el("p", "No treatment drafted tokens.", class_="note"),
    ]
    return join(pictures)


def _equivalence(out: Path, data: Mapping[str, Any], doc: md.Document) -> Markup:
    parts = [md.render(doc.section("Content equivalence") or "")]
    headers, rows = _csv(out / "equivalence.csv")
    if rows:
        facets = [c for c in ("treatment", "subset", "verdict", "truncated") if c in headers]
        parts.append(el("p", f"Every compared (prompt, cycle) cell, {len(rows)} rows:"))
        parts.append(filterable("equivalence-cells", headers, rows, facets))
    return join(parts)


def _truncated(data: Mapping[str, Any], doc: md.Document) -> Markup:
    parts = [md.render(doc.section("Truncated measurements") or "")]
    rows = [[r.get(c) for c in TRUNCATED_HEADERS] for r in data.get("truncated", [])]
    if rows:
        parts.append(el("p", f"Every truncated measurement, {len(rows)} rows:"))
        parts.append(
            filterable("truncated-cells", TRUNCATED_HEADERS, rows, ("treatment", "subset"))
        )
    return join(parts)


def _census(out: Path, doc: md.Document) -> Markup:
    parts = [md.render(doc.section("Census") or "")]
    headers, rows = _csv(out / "gaps.csv")
    if rows:
        facets = [c for c in ("endpoint", "treatment", "direction") if c in headers]
        parts.append(el("p", f"Every gap, {len(rows)} rows:"))
        parts.append(filterable("gap-cells", headers, rows, facets))
    return join(parts)


def sections(run_dir: Path, full: str, analysis_dir: Path | None = None) -> list[PageSection]:
    """report.html's sections for a decode run: `full` is the analysis' whole section set
    (report.md's and the detail's), the files are those in <run>/analysis (or `analysis_dir`)."""
    out = analysis_dir or run_dir / schema.ANALYSIS_DIR
    doc = md.split(full)
    data = RunReader(run_dir).document(out / "contrasts.json", "analysis file")
    forest = out / "forest.png"
    built = {
        "Content equivalence": lambda: _equivalence(out, data, doc),
        "Truncated measurements": lambda: _truncated(data, doc),
        "Census": lambda: _census(out, doc),
    }
    head = [
        PageSection("Question and headline", _headline(doc, forest), anchor="question"),
        PageSection(
            "Limitations", md.render(doc.section("Limitations") or ""), anchor="limitations"
        ),
        PageSection("Pictures", _pictures(run_dir, data, forest.is_file(), doc), anchor="pictures"),
    ]
    detail = [
        PageSection(title, built[title]() if title in built else md.render(body), open=False)
        for title, body in doc.sections
        if not title.startswith(FIRST)
    ]
    return [*head, *detail]


def write(result: AnalysisResult) -> AnalysisResult:
    """report.html beside the report.md an analysis wrote; the result names it among its files."""
    import dataclasses

    from ...errors import AnalysisError
    from .analysis.report import render_full

    out, run_dir = Path(str(result.out_dir)), Path(result.run_dirs[0])
    try:
        page = write_report_html(run_dir, sections(run_dir, render_full(result), out), out)
    except OSError as exc:
        raise AnalysisError(
            f"cannot write {out}/report.html ({exc.strerror}); pass --out with a writable directory"
        ) from None
    return dataclasses.replace(result, written=(*result.written, str(page)))
