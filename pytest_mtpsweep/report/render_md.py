"""report.md from the report model: the title, the opening, then each section report.md carries,
in the model's order (a section of the page's alone is not written: the kind's text points to
it where the reader needs it)."""

from __future__ import annotations

from .mdtext import md_table, md_text
from .model import Block, Figure, Page, Report, Section, Table, Text

REPORT_MD = "report.md"


def _table(t: Table) -> str:
    rows = [list(r) for r in t.rows]
    lead = [t.lead] if t.lead else []
    limit = len(rows) if t.markdown_rows is None else t.markdown_rows
    if len(rows) <= limit:
        return "\n\n".join([*lead, md_table(t.headers, rows)] if rows else lead)
    where = f" in `{t.where}` beside this report" if t.where else " on report.html"
    shown = [md_table(t.headers, rows[:limit])] if limit else []
    first = f"the first {limit} above; " if limit else ""
    count = f"{len(rows)} rows: too many to list here; {first}every row{where}."
    return "\n\n".join([*lead, *shown, count])


def block(b: Block) -> str:
    """One block as Markdown ('' when report.md shows nothing of it)."""
    if isinstance(b, Text):
        return b.markdown.strip("\n")
    if isinstance(b, Table):
        return _table(b) if b.markdown else ""
    if isinstance(b, Figure):
        return f"![{md_text(b.alt)}]({b.file})" if b.file else ""
    if isinstance(b, Page):
        return b.markdown.strip("\n")
    raise TypeError(f"a report block is Text, Table, Figure or Page, not {type(b).__name__}")


def _blocks(blocks: tuple[Block, ...]) -> list[str]:
    return [x for x in (block(b) for b in blocks) if x]


def section(s: Section) -> str:
    return "\n\n".join([f"## {s.title}", *_blocks(s.blocks)])


def markdown(report: Report) -> str:
    """report.md's text."""
    parts = [f"# {report.title}", *_blocks(report.opening)]
    parts += [section(s) for s in report.sections if s.markdown]
    if report.colophon:  # plan.json's version string is the run's: escaped as free text
        parts.append(md_text(report.colophon))
    return "\n\n".join(parts) + "\n"
