"""What report.html shows and report.md does not: every compared cell, every truncated
measurement and every gap as a filterable table, and the pictures the edge drew.

Pure: the rows come from the result the analysis holds (the very frames its CSVs were written
from), never from the files; each cell reads as the CSV beside the report has it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ....kindapi.report import Section, Table
from ..analysis.runvalues import DecodeAnalysis
from .textfmt import dict_rows

TRUNCATED_HEADERS = (
    "prompt_id",
    "subset",
    "treatment",
    "cycle",
    "repeat",
    "run_id",
    "session",
    "completion_tokens",
)


@dataclass(frozen=True)
class PageParts:
    """What the page shows beside the analysis: whether forest.png is saved beside the report
    (the page inlines it) and the Pictures sections drawn from the records."""

    forest: bool = False
    pictures: tuple[Section, ...] = ()


def _as_csv(value: object) -> object:
    # as pandas writes the cell: a missing value is empty
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _cells(
    what: str, table_id: str, frame: pd.DataFrame | None, facets: Sequence[str]
) -> Table | None:
    """Every row of `frame` as a table the page filters by `facets` (None when it has none);
    the page's alone (report.md points at the CSV)."""
    if frame is None or frame.empty:
        return None
    headers = [str(c) for c in frame.columns]
    rows = [[_as_csv(r[c]) for c in headers] for r in dict_rows(frame)]
    shown = [c for c in facets if c in headers]
    return _page_table(f"{what}, {len(rows)} rows:", table_id, headers, rows, shown)


def _page_table(
    lead: str,
    table_id: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    facets: Sequence[str],
) -> Table:
    return Table(
        tuple(headers),
        tuple(tuple(r) for r in rows),
        id=table_id,
        lead=lead,
        facets=tuple(facets),
        markdown=False,
    )


def equivalence_cells(result: DecodeAnalysis) -> Table | None:
    pairs = result.equivalence.pairs if result.equivalence is not None else None
    return _cells(
        "Every compared (prompt, cycle) cell",
        "equivalence-cells",
        pairs,
        ("treatment", "subset", "verdict", "truncated"),
    )


def gap_cells(result: DecodeAnalysis) -> Table | None:
    return _cells("Every gap", "gap-cells", result.gaps, ("endpoint", "treatment", "direction"))


def truncated_cells(result: DecodeAnalysis) -> Table | None:
    t = result.truncated
    if t.empty:
        return None
    rows = [[r.get(c) for c in TRUNCATED_HEADERS] for r in dict_rows(t)]
    lead = f"Every truncated measurement, {len(rows)} rows:"
    return _page_table(lead, "truncated-cells", TRUNCATED_HEADERS, rows, ("treatment", "subset"))
