"""Tables for the report page, and filters over any list of items (table rows, cells).

A filterable list carries its facets as JSON data beside it (`Markup.facets`); the page's script
builds one select per facet and a text search from that data, so no value is ever markup.
"""

from __future__ import annotations

from collections.abc import Sequence

from .document import Markup, cell_text

LONG_TABLE_ROWS = 25  # more rows than this scroll inside their own box


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    try:
        float(str(value).replace("%", "").replace("+", ""))
    except ValueError:
        return False
    return True


def _row(cells: Sequence[object], **attrs: object) -> Markup:
    return Markup.el(
        "tr",
        *(
            Markup.el("td", cell_text(c), class_="num" if _is_number(c) else None)
            if not isinstance(c, Markup)
            else Markup.el("td", c)
            for c in cells
        ),
        **attrs,
    )


def table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], *, table_id: str | None = None
) -> Markup:
    """A plain table; a cell may be Markup (made by the builder) or any value, shown as text."""
    head = Markup.el("thead", Markup.el("tr", *(Markup.el("th", h) for h in headers)))
    built = Markup.el("table", head, Markup.el("tbody", *(_row(r) for r in rows)), id=table_id)
    return Markup.el("div", built, class_="scroll") if len(rows) > LONG_TABLE_ROWS else built


def filterable(
    container_id: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    facet_columns: Sequence[str],
) -> Markup:
    """A table with a select per facet column and a text search over its rows."""
    index = [headers.index(c) for c in facet_columns]
    head = Markup.el("thead", Markup.el("tr", *(Markup.el("th", h) for h in headers)))
    body = Markup.el("tbody", *(_row(r, data_i=i) for i, r in enumerate(rows)))
    built = Markup.el("div", Markup.el("table", head, body), class_="scroll", id=container_id)
    return Markup.concat(
        [Markup.facets(container_id, facet_columns, [[r[i] for i in index] for r in rows]), built]
    )
