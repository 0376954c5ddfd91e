"""What a kind's analysis returns: one value, computed without writing a byte.

`AnalysisResult` holds the tables (a file name -> a DataFrame, written as CSV), JSON documents,
the figures as the data they are drawn from (drawn only when saved), the report model that
report.md and report.html are rendered from, the headline cells whose `Decision` the stop rule
reads, and the lines and headline properties the terminal and JUnit show. `AnalysisResult.
save` is the one writer of a result; the analysis itself stays pure, so a stop rule's
look computes its cells, its record goes into stop.json, and only then is the result saved.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.fileio import atomic_write_bytes, atomic_write_text, json_safe
from .model import Report
from .save import check_target, unwritable, write_report

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

    def png(self) -> bytes | None:
        """The figure drawn from its data as PNG bytes (None: nothing to draw)."""
        fig = self.draw(self.data)
        if fig is None:
            return None
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=self.dpi)
        return buffer.getvalue()


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

    def save(self, out_dir: Path, run_dir: Path | None = None) -> Path:
        """Save every part into `out_dir`: the tables as CSV, the documents as JSON, the figures
        drawn, stale files removed, then report.md and report.html (the page inlines the figures
        it names). Returns report.md's path; an AnalysisError when it cannot write."""
        check_target(out_dir)
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            for name, frame in self.tables.items():
                atomic_write_text(out_dir / name, frame.to_csv(index=False))
            for name, doc in self.documents.items():
                text = json.dumps(json_safe(doc), indent=2, allow_nan=False) + "\n"
                atomic_write_text(out_dir / name, text)
            for figure in self.figures:
                png = figure.png()
                if png is not None:
                    atomic_write_bytes(out_dir / figure.name, png)
                else:
                    (out_dir / figure.name).unlink(missing_ok=True)
            for name in self.stale:
                (out_dir / name).unlink(missing_ok=True)
        except OSError as exc:
            raise unwritable(out_dir, exc) from None
        return write_report(self.report, out_dir, run_dir)[0]
