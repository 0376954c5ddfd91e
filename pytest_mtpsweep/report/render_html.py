"""report.html from the report model, through the escaping builder: the question and the
headline, the limitations, the pictures, then every detail section collapsed.

Every string of the model reaches the page as text, or as Markdown rendered by `mdhtml` (whose
free text `mdtext` escaped); the only markup taken as it is is a `Page` block's, which only the
builder makes. A figure's PNG is inlined from its bytes or its file in the analysis folder.
"""

from __future__ import annotations

from pathlib import Path

from . import images, mdhtml
from .document import Markup, PageSection, render_page
from .mdtext import Md
from .model import Block, Figure, Page, Report, Role, Section, Table, Text
from .pagetables import filterable, table


def _cell(value: object) -> object:
    return mdhtml.inline(value) if isinstance(value, Md) else value


def _table(t: Table) -> Markup:
    rows = [[_cell(c) for c in r] for r in t.rows]
    lead = Markup.el("p", mdhtml.inline(t.lead)) if t.lead else None
    if t.facets:
        built = filterable(t.id or "rows", t.headers, rows, t.facets)
    else:
        built = table(t.headers, rows, table_id=t.id or None)
    return Markup.concat([lead or Markup(""), built])


def _figure(f: Figure, out_dir: Path) -> Markup:
    data = f.png
    if data is None and f.file:
        try:
            data = (out_dir / f.file).read_bytes()
        except OSError as exc:
            return Markup.el(
                "p", f"{f.alt}: {f.file} cannot be read ({exc.strerror}).", class_="note"
            )
    if data is None:
        return Markup.el("p", f"{f.alt}: not drawn.", class_="note")
    return images.png(data, f.alt, f.caption)


def block(b: Block, out_dir: Path) -> Markup:
    if isinstance(b, Text):
        return mdhtml.render(b.markdown)
    if isinstance(b, Table):
        return _table(b)
    if isinstance(b, Figure):
        return _figure(b, out_dir)
    if isinstance(b, Page):
        return b.markup
    raise TypeError(f"a report block is Text, Table, Figure or Page, not {type(b).__name__}")


def _blocks(blocks: tuple[Block, ...], out_dir: Path) -> Markup:
    return Markup.concat(block(b, out_dir) for b in blocks)


def _titled(sections: tuple[Section, ...], out_dir: Path, first_bare: bool) -> Markup:
    """Sections one after another under h3 titles (the first without one when `first_bare`);
    a section's own anchor becomes its title's id."""
    parts = []
    for i, s in enumerate(sections):
        if not (first_bare and i == 0):
            parts.append(Markup.el("h3", s.title, id=s.anchor or None))
        parts.append(_blocks(s.blocks, out_dir))
    return Markup.concat(parts)


def _pictures(shown: tuple[Section, ...], out_dir: Path, note: str) -> Markup:
    if any(isinstance(b, Figure) for s in shown for b in s.blocks):
        return _titled(shown, out_dir, first_bare=len(shown) == 1)
    body = _titled(shown, out_dir, first_bare=True)
    if not Figure.can_draw():
        return Markup.concat([body, images.missing()])
    return Markup.concat([body, Markup.el("p", note, class_="note")]) if note else body


def _shown(report: Report, role: Role) -> tuple[Section, ...]:
    """The sections of a role the page carries (report.md's own are left out)."""
    return tuple(s for s in report.of(role) if s.page)


def sections(report: Report, out_dir: Path) -> list[PageSection]:
    """The page's sections, in the order every kind's page has them."""
    headline = Markup.el(
        "div",
        _blocks(report.opening, out_dir),
        _titled(_shown(report, "headline"), out_dir, first_bare=False),
        id="headline",
    )
    limits = _shown(report, "limitations")
    out = [
        PageSection("Question and headline", headline, anchor="question"),
        PageSection("Limitations", _titled(limits, out_dir, True), anchor="limitations"),
    ]
    pictures = _shown(report, "pictures")
    if pictures:  # a kind that draws nothing has no Pictures section
        body = _pictures(pictures, out_dir, report.empty_pictures)
        out.append(PageSection("Pictures", body, anchor="pictures"))
    out += [
        PageSection(s.title, _blocks(s.blocks, out_dir), open=s.open, anchor=s.anchor)
        for s in _shown(report, "detail")
    ]
    return out


def page(report: Report, out_dir: Path) -> str:
    """report.html's text; PNG files are read from `out_dir`."""
    title = report.page_title or report.title
    return render_page(
        title, sections(report, out_dir), subtitle=report.subtitle, colophon=report.colophon
    )
