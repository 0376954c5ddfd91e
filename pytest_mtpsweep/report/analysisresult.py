"""What a kind's analysis returns: one value, computed without writing a byte.

`AnalysisResult` holds the tables (a file name -> a DataFrame, written as CSV), JSON documents,
the figures as the data they are drawn from (drawn only when saved), the report model that
report.md and report.html are rendered from, the headline cells whose `Decision` the stop rule
reads, and the lines and headline properties the terminal and JUnit show. `report.save.
save_result` is the one writer of a result; the analysis itself stays pure, so a stop rule's
look computes its cells, its record goes into stop.json, and only then is the result saved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .model import Report

if TYPE_CHECKING:
    from ..analysis.sequential import CellState


@dataclass(frozen=True)
class FigureData:
    """A picture as data: the file it is saved as, what it is drawn from, and the pure function
    that draws it (a matplotlib Figure, or None when the data hold nothing to draw)."""

    name: str
    data: Any = field(repr=False)
    draw: Callable[[Any], Any] = field(repr=False)
    dpi: int = 110


@dataclass(frozen=True)
class AnalysisResult:
    """One analysis of a run directory, kind-neutral (see the module's docstring)."""

    report: Report
    cells: tuple[CellState, ...] = ()  # what a stop rule looks at
    tables: Mapping[str, Any] = field(default_factory=dict, repr=False)  # name.csv -> DataFrame
    documents: Mapping[str, Any] = field(default_factory=dict, repr=False)  # name.json -> JSON
    figures: tuple[FigureData, ...] = ()
    lines: tuple[str, ...] = ()  # the terminal's summary
    headline: Mapping[str, str] = field(default_factory=dict)  # JUnit properties
    # files an earlier analysis may have left that this one has not (a picture not drawn now
    # would contradict the report): removed when the result is saved
    stale: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        """Every file name saving this result writes (report.md and report.html aside)."""
        return (*self.tables, *self.documents, *(f.name for f in self.figures))
