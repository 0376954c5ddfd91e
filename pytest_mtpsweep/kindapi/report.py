"""The door's report: the model a kind's report is made of (`Report`, its sections and
blocks), the Markdown and page helpers its text is written with, and `save_result`, which
writes a result's files and report.md and report.html from its one model."""

from __future__ import annotations

from ..report.analysisresult import AnalysisResult, FigureData
from ..report.document import Markup, el, join
from ..report.images import available
from ..report.mdtext import LONG_LIST_ROWS, Md, md_code, md_table, md_text
from ..report.model import Block, Figure, Page, Report, Role, Section, Table, Text, text
from ..report.pagetables import facets
from ..report.render_md import markdown
from ..report.save import save_result

__all__ = [  # noqa: RUF022 -- grouped as docs/architecture/10-front-door.md lists them
    # the model
    "Report",
    "Section",
    "Block",
    "Text",
    "text",
    "Table",
    "Figure",
    "Page",
    "Role",
    "AnalysisResult",
    "FigureData",
    # writing it
    "save_result",
    "markdown",
    "available",
    # Markdown and page helpers
    "Md",
    "md_text",
    "md_code",
    "md_table",
    "LONG_LIST_ROWS",
    "Markup",
    "el",
    "join",
    "facets",
]
