"""The probe kind's report: the medians into the report model, which the package's renderers
write as report.md and report.html. The template's `report`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_mtpsweep.kindapi.records import RunReader
from pytest_mtpsweep.kindapi.report import Report, Section, Table, md_text, text


def report(run_dir: Path, rows: Sequence[tuple[str, int, float]], unreadable: int) -> Report:
    """The probe's report model: its question, one headline table, its limitations, and the
    medians as a record table the page filters by target."""
    plan = RunReader(run_dir).plan
    headline = Table(("target", "GETs", "median ms"),
                     tuple((t, n, f"{m * 1000:.2f}") for t, n, m in rows), id="probe-medians")  # fmt: skip
    every = Table(("target", "GETs", "median s"), tuple(rows), id="targets", facets=("target",))
    limits = (
        [f"- {unreadable} record line(s) could not be read and were left out."]
        if unreadable
        else []
    )
    limits.append("- One GET at a time: a median of a path's latency, not a load test.")
    return Report(
        title=f"Probe report: {md_text(run_dir.name)}",
        opening=(text(f"Question: {md_text(plan.question)}"),),
        sections=(
            Section("Headline", (headline,), role="headline"),
            Section("Limitations", (text(*limits),), role="limitations"),
            Section("Every target", (every,), markdown=False),
        ),
    )
