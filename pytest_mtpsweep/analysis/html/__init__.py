"""The HTML report: one self-contained page per run, from sections each kind contributes.

A kind's section builder, `sections(run_dir) -> list[Section]`, reads what its analysis wrote;
`write_report_html(run_dir, sections)` writes <run>/analysis/report.html.
"""

from .document import (
    REPORT_HTML,
    Markup,
    Section,
    el,
    join,
    json_script,
    render_page,
    text,
    write_report_html,
)

__all__ = [
    "REPORT_HTML",
    "Markup",
    "Section",
    "el",
    "join",
    "json_script",
    "render_page",
    "text",
    "write_report_html",
]
