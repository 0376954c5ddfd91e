"""A report model onto disk: report.md and report.html beside each other, each written whole."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..errors import AnalysisError
from ..fileio import atomic_write_text
from .document import REPORT_HTML, page_title
from .model import Report
from .render_html import page
from .render_md import REPORT_MD, markdown


def write_report(report: Report, out_dir: Path, run_dir: Path | None = None) -> tuple[Path, Path]:
    """Write <out_dir>/report.md and report.html from one model; returns their paths. The
    page's title and subtitle come from `run_dir`'s plan when the model leaves them empty."""
    if run_dir is not None:
        report = dataclasses.replace(
            report,
            page_title=report.page_title or page_title(run_dir),
            subtitle=report.subtitle or str(run_dir),
        )
    md, html = out_dir / REPORT_MD, out_dir / REPORT_HTML
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(md, markdown(report))
        atomic_write_text(html, page(report, out_dir))
    except OSError as exc:
        raise AnalysisError(
            f"cannot write the report into {out_dir} ({exc.strerror}); make it writable or "
            "pass --out with a directory that is"
        ) from None
    return md, html
