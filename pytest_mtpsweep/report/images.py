"""Pictures on the report page: PNGs inline as data: URIs, drawn with matplotlib when present.

matplotlib stays optional (the `plots` extra): without it the page says how to get pictures.
A picture that fails to draw costs that picture, never the report.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from typing import Any

from .document import Markup

PLOTS_INSTALL = "pip install 'pytest-mtpsweep[plots]'"


def png(data: bytes, alt: str, caption: str = "") -> Markup:
    """A PNG's bytes as an inline picture with its caption."""
    uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return Markup.el(
        "figure",
        Markup.el("img", src=uri, alt=alt),
        Markup.el("figcaption", caption) if caption else None,
    )


def figure(draw: Callable[[], Any], alt: str, caption: str = "") -> Markup:
    """Draw a matplotlib Figure (None: nothing to draw) and inline it as a PNG."""
    try:
        fig = draw()
        if fig is None:
            return Markup("")
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=100)
    except Exception as exc:  # a picture must never cost the report
        return Markup.el("p", f"{alt}: not drawn ({type(exc).__name__}: {exc}).", class_="note")
    return png(buffer.getvalue(), alt, caption)


def missing(what: str = "Pictures") -> Markup:
    """The line shown instead of the pictures when matplotlib is not importable."""
    return Markup.el(
        "p",
        f"{what} need matplotlib, which is not importable here: {PLOTS_INSTALL}, then "
        "`mtpsweep analyse RUN` again.",
        class_="note",
    )
