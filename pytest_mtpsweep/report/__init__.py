"""The report family: the report model a kind's analysis returns (`model`), its two renderers
(`Report.markdown()` → report.md, `render_html` → report.html, through the escaping builder
`document`), and the parts the page is made of (`mdhtml`, `tables`, `images`, `assets`);
`mdtext` escapes free text for report.md. `save.write_report` writes both files from one model.
"""

from .document import (
    REPORT_HTML,
    Markup,
    PageSection,
    json_script,
    render_page,
    text,
)

__all__ = [
    "REPORT_HTML",
    "Markup",
    "PageSection",
    "json_script",
    "render_page",
    "text",
]
