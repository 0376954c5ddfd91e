"""The one writer of an analysis: a result or a report model onto disk, each file written whole
(a temporary file beside it, fsync'd, renamed over it), the report last."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import AnalysisError
from ..base.fileio import atomic_write_bytes, atomic_write_text, json_safe
from .document import REPORT_HTML, page_title, versions
from .model import Report
from .render_html import page
from .render_md import REPORT_MD, markdown

if TYPE_CHECKING:
    from .analysisresult import AnalysisResult, FigureData


def _cannot(out_dir: Path, exc: OSError) -> AnalysisError:
    return AnalysisError(
        f"cannot write the report into {out_dir} ({exc.strerror}); make it writable or "
        "pass --out with a directory that is"
    )


def finished(report: Report, run_dir: Path | None = None) -> Report:
    """A kind's model as `write_report` writes it: the page's title and subtitle from
    `run_dir`'s plan where the model leaves them empty, and the closing line naming the
    versions that recorded and analysed the run (the writer's to add, as no kind knows them)."""
    if run_dir is not None:
        report = dataclasses.replace(
            report,
            page_title=report.page_title or page_title(run_dir),
            subtitle=report.subtitle or str(run_dir),
        )
    return dataclasses.replace(report, colophon=report.colophon or versions(run_dir))


def write_report(report: Report, out_dir: Path, run_dir: Path | None = None) -> tuple[Path, Path]:
    """Write <out_dir>/report.md and report.html from one model, `finished`; returns their
    paths."""
    report = finished(report, run_dir)
    md, html = out_dir / REPORT_MD, out_dir / REPORT_HTML
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(md, markdown(report))
        atomic_write_text(html, page(report, out_dir))
    except OSError as exc:
        raise _cannot(out_dir, exc) from None
    return md, html


def png_of(figure: FigureData) -> bytes | None:
    """The figure drawn from its data as PNG bytes (None: nothing to draw)."""
    fig = figure.draw(figure.data)
    if fig is None:
        return None
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=figure.dpi)
    return buffer.getvalue()


def save_result(result: AnalysisResult, out_dir: Path, run_dir: Path | None = None) -> Path:
    """Save every part of a result into `out_dir`: the tables as CSV, the documents as JSON,
    the figures drawn, stale files removed, then report.md and report.html (the page inlines
    the figures it names). Returns report.md's path; an AnalysisError when it cannot write."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, frame in result.tables.items():
            atomic_write_text(out_dir / name, frame.to_csv(index=False))
        for name, doc in result.documents.items():
            text = json.dumps(json_safe(doc), indent=2, allow_nan=False) + "\n"
            atomic_write_text(out_dir / name, text)
        for figure in result.figures:
            png = png_of(figure)
            if png is not None:
                atomic_write_bytes(out_dir / figure.name, png)
            else:
                (out_dir / figure.name).unlink(missing_ok=True)
        for name in result.stale:
            (out_dir / name).unlink(missing_ok=True)
    except OSError as exc:
        raise _cannot(out_dir, exc) from None
    return write_report(result.report, out_dir, run_dir)[0]
