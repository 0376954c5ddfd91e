"""The door's report: the model a kind's report is made of (`Report`, its sections and
blocks), the Markdown and page helpers its text is written with (`Md`, `Markup`), and
`AnalysisResult`, whose `save` writes a result's files and report.md and report.html from its
one model."""

from __future__ import annotations

from ..report.analysisresult import AnalysisResult, FigureData
from ..report.document import Markup
from ..report.mdtext import Md
from ..report.model import Figure, Page, Report, Section, Table, Text

__all__ = [  # noqa: RUF022 -- grouped as docs/architecture/10-front-door.md lists them
    # the model
    "Report",
    "Section",
    "Text",
    "Table",
    "Figure",
    "Page",
    "AnalysisResult",
    "FigureData",
    # Markdown and page helpers
    "Md",
    "Markup",
]
