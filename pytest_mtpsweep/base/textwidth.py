"""Plain-text tables that fit the terminal: long cells shortened in the middle (the start and
the end of a path or a digest say the most), full values kept in the files beside them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

GAP = "  "
ELLIPSIS = "…"


def shorten_middle(text: str, width: int) -> str:
    """`text` in at most `width` characters, its middle replaced by an ellipsis if need be."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = width // 2  # the start gets the odd character: it usually says more
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def fit_widths(
    natural: Sequence[int], width: int | None, shrinkable: Mapping[int, int]
) -> list[int]:
    """Column widths whose sum (with gaps) fits `width`: the shrinkable columns give way in
    the order given, each down to its minimum before the next is touched. None: no limit."""
    widths = list(natural)
    if width is None:
        return widths
    excess = sum(widths) + len(GAP) * (len(widths) - 1) - width
    for i, low in shrinkable.items():
        if excess <= 0:
            break
        give = min(excess, max(widths[i] - low, 0))
        widths[i] -= give
        excess -= give
    return widths


def render(
    rows: Sequence[Sequence[str]],
    *,
    width: int | None = None,
    shrinkable: Mapping[int, int] | None = None,
    rule: bool = False,
) -> str:
    """Aligned columns; the first row is the header (a dashed rule under it if `rule`)."""
    if not rows:
        return ""
    n = len(rows[0])
    natural = [max(len(row[i]) for row in rows) for i in range(n)]
    widths = fit_widths(natural, width, shrinkable or {})
    lines = [
        GAP.join(shorten_middle(c, w).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    if rule:
        lines.insert(1, GAP.join("-" * w for w in widths))
    return "\n".join(lines)
