"""The writer of a report model: report.md and report.html from one model, each file written
whole (a temporary file beside it, fsync'd, renamed over it). `AnalysisResult.save` writes the
rest of a result first, then calls it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..base.errors import AnalysisError
from ..base.fileio import atomic_write_text, folder_problem, tail_of
from .document import REPORT_HTML, page_title, versions
from .model import REPORT_MD, Report
from .render_html import page


def unwritable(out_dir: Path, exc: OSError) -> AnalysisError:
    return AnalysisError(
        f"cannot write the report into {out_dir} ({exc.strerror}); make it writable or "
        "pass --out with a directory that is"
    )


# report.md's closing line (`document.versions`): "Analysed by pytest-mtpsweep 0.3.0." or
# "...; analysed by pytest-mtpsweep ...": the mark of a folder an earlier analysis wrote
WRITTEN_BY = b"nalysed by pytest-mtpsweep "
AN_ANALYSIS = f"an analysis mtpsweep wrote (its {REPORT_MD})"


def written_here(out_dir: Path) -> bool:
    """Whether `out_dir` holds an analysis this tool wrote: a regular report.md (never a link)
    whose closing line names pytest-mtpsweep. `fileio.output_dir_problem`'s `looks_right`."""
    return WRITTEN_BY in tail_of(out_dir / REPORT_MD)


def check_target(out_dir: Path) -> None:
    """An AnalysisError when `out_dir` is no folder to write into (a link, which could point
    out of the run, a file, a FIFO, a device: `fileio.folder_problem`); every writer's check,
    the default folders a kind names itself included."""
    why = folder_problem(out_dir)
    if why is not None:
        raise AnalysisError(
            f"cannot write the analysis into {out_dir}: it {why}; move it aside, or pass --out "
            "with a new folder"
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
    check_target(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(md, report.markdown())
        atomic_write_text(html, page(report, out_dir))
    except OSError as exc:
        raise unwritable(out_dir, exc) from None
    return md, html
