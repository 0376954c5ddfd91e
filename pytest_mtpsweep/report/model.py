"""The report model: what a kind's analysis returns, and what both report.md and report.html
are rendered from (inspect_ai's `EvalLog`, GuideLLM's one report object and its formatters).

A report is a title, the question and its scope, an opening, then sections in report.md's
order. A section says what it is to the page (`role`): the headline and the limitations open
the page, the pictures follow, the rest is detail, collapsed. A section whose `markdown` is
False is the page's only (every request, every cell); report.md names where it is. One whose
`page` is False is report.md's only (its list of where the page's detail is). No renderer
looks a section up by its heading, and none reads a file back but the PNGs a figure names.
report.md is written here (`Report.markdown()`), report.html by `render_html`.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Literal

from .document import EMPTY, Markup, anchor
from .mdtext import Md

REPORT_MD = "report.md"
Role = Literal["headline", "limitations", "pictures", "detail"]


@dataclass(frozen=True)
class Text:
    """Prose in report.md's Markdown subset; free text in it went through `Md.text`."""

    markdown: str

    @staticmethod
    def of(*lines: str) -> Text:
        """Lines of Markdown as one text block."""
        return Text("\n".join(lines))


@dataclass(frozen=True)
class Table:
    """Rows under headers. A cell is a value shown as text, or `mdtext.Md` (the writer's own
    bold or code span). With `facets` the page filters the rows by those columns; with
    `markdown_rows` report.md lists at most that many and counts the rest (0: counts them);
    with `markdown` False report.md leaves it out."""

    headers: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]
    id: str = ""  # the table's element id on the page
    lead: str = ""  # a line before the table (Markdown)
    facets: tuple[str, ...] = ()
    markdown_rows: int | None = None  # None: every row
    where: str = ""  # the file that holds every row, for report.md's count line
    markdown: bool = True  # report.md lists it; False: the page's only (a headline's grid)


@dataclass(frozen=True)
class Figure:
    """A picture: `file` in the analysis folder (report.md links it, the page inlines it), or
    `png` bytes drawn for the page alone (`file` empty)."""

    alt: str
    caption: str = ""
    file: str = ""
    png: bytes | None = field(default=None, repr=False)

    @staticmethod
    def can_draw() -> bool:
        """True when matplotlib's Figure can be imported (installed and not broken): without
        it (the `plots` extra) a kind draws nothing and the page says how to get pictures."""
        if importlib.util.find_spec("matplotlib") is None:
            return False
        try:
            import matplotlib.figure  # noqa: F401
        except Exception:  # a broken install must cost the plot, never the analysis
            return False
        return True


@dataclass(frozen=True)
class Page:
    """Page-only markup made with the escaping builder (a cell's turns, say); report.md shows
    `markdown` in its place (nothing when empty). `Page()` shows nothing on either."""

    markup: Markup = EMPTY
    markdown: str = ""


Block = Text | Table | Figure | Page


@dataclass(frozen=True)
class Section:
    """One heading's worth: its blocks, where it stands on the page, and whether report.md
    carries it."""

    title: str
    blocks: tuple[Block, ...]
    role: Role = "detail"
    anchor: str = ""  # its element id on the page (from the title when empty)
    markdown: bool = True  # report.md carries it; False: the page's only
    open: bool = False  # a detail section shown open on the page (the others are collapsed)
    page: bool = True  # the page carries it; False: report.md's only (where the page's detail is)

    @property
    def id(self) -> str:

        return self.anchor or anchor(self.title)


@dataclass(frozen=True)
class Report:
    """A kind's report: rendered by `markdown()` (report.md) and `render_html.page`."""

    title: str  # report.md's H1
    opening: tuple[Block, ...]  # question, scope, what the reader needs before the headline
    sections: tuple[Section, ...]
    page_title: str = ""  # the page's <title>/<h1> (the title when empty)
    subtitle: str = ""  # the page's line under its title (the run directory)
    empty_pictures: str = ""  # the page's note when its pictures sections hold no figure
    colophon: str = ""  # the closing line: which pytest-mtpsweep recorded and analysed the run

    def of(self, role: Role) -> tuple[Section, ...]:
        return tuple(s for s in self.sections if s.role == role)

    def markdown(self) -> str:
        """report.md's text: the title, the opening, then each section report.md carries, in
        the model's order (a section of the page's alone is not written: the kind's text points
        to it where the reader needs it)."""
        parts = [f"# {self.title}", *_blocks(self.opening)]
        parts += [section_markdown(s) for s in self.sections if s.markdown]
        if self.colophon:  # plan.json's version string is the run's: escaped as free text
            parts.append(Md.text(self.colophon))
        return "\n\n".join(parts) + "\n"


# report.md from the model. It lives beside the model so that `Report.markdown()` needs no
# import back into a renderer (the page's renderer, `render_html`, reads the model from above).


def _table(t: Table) -> str:
    rows = [list(r) for r in t.rows]
    lead = [t.lead] if t.lead else []
    limit = len(rows) if t.markdown_rows is None else t.markdown_rows
    if len(rows) <= limit:
        return "\n\n".join([*lead, Md.table(t.headers, rows)] if rows else lead)
    where = f" in `{t.where}` beside this report" if t.where else " on report.html"
    shown = [Md.table(t.headers, rows[:limit])] if limit else []
    first = f"the first {limit} above; " if limit else ""
    count = f"{len(rows)} rows: too many to list here; {first}every row{where}."
    return "\n\n".join([*lead, *shown, count])


def block_markdown(b: Block) -> str:
    """One block as Markdown ('' when report.md shows nothing of it)."""
    if isinstance(b, Text):
        return b.markdown.strip("\n")
    if isinstance(b, Table):
        return _table(b) if b.markdown else ""
    if isinstance(b, Figure):
        return f"![{Md.text(b.alt)}]({b.file})" if b.file else ""
    if isinstance(b, Page):
        return b.markdown.strip("\n")
    raise TypeError(f"a report block is Text, Table, Figure or Page, not {type(b).__name__}")


def _blocks(blocks: tuple[Block, ...]) -> list[str]:
    return [x for x in (block_markdown(b) for b in blocks) if x]


def section_markdown(s: Section) -> str:
    """One section as report.md writes it: its heading, then its blocks."""
    return "\n\n".join([f"## {s.title}", *_blocks(s.blocks)])
