"""The HTML report's page: an escaping builder, sections, and the self-contained page.

Every string a run holds (a model's reply, a server's error, a ladder's names) reaches the page
through `text`, an attribute of `Markup.el`, or `json_script`, and each of them escapes it. `Markup`
is made only by these builders, so no caller can put a string on the page as markup. The page
needs nothing from the network: styles, scripts and pictures are inline, and its
Content-Security-Policy forbids every request (a report is mailed around and opened from disk).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._version import __version__
from ..base.fileio import json_safe
from ..state.runread import RunReader
from .assets import ERRORS_JS, PAGE_CSS, PAGE_JS

REPORT_HTML = "report.html"
_TAG = re.compile(r"[a-z][a-z0-9]*\Z")
_ATTRIBUTE = re.compile(r"[a-z][a-z0-9-]*\Z")
_VOID = frozenset({"br", "hr", "img", "input", "wbr"})
# Elements that run code, fetch or restyle: only the page skeleton below writes them.
_REFUSED = frozenset(
    {
        "script",
        "style",
        "link",
        "meta",
        "base",
        "iframe",
        "object",
        "embed",
        "form",
        "svg",
        "math",
        "template",
    }
)
# A URL attribute may point inside the page or hold an inline picture, nothing else.
_URL_PREFIXES = {"href": ("#",), "src": ("data:image/png;base64,",)}
# Inside <script type="application/json"> these could end the element or break a parser.
_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


@dataclass(frozen=True)
class Markup:
    """HTML that is safe to place as it is: made only by this module's builders."""

    html: str

    def __add__(self, other: Markup) -> Markup:
        return Markup(self.html + other.html)

    @staticmethod
    def el(tag: str, *children: Markup | str | None, **attrs: object) -> Markup:
        """An element; `class_="x"` and `data_cell="y"` become class and data-cell.

        Strings among the children are escaped; an attribute that is None or False is left out.
        """
        if not _TAG.match(tag) or tag in _REFUSED:
            raise ValueError(f"element <{tag}> is not built by the report's page")
        opened = f"<{tag}" + "".join(
            _attribute(k, v) for k, v in attrs.items() if v is not None and v is not False
        )
        if tag in _VOID:
            if any(c is not None for c in children):
                raise ValueError(f"<{tag}> holds no children")
            return Markup(opened + ">")
        inner = "".join(
            c.html if isinstance(c, Markup) else html.escape(c) for c in children if c is not None
        )
        return Markup(f"{opened}>{inner}</{tag}>")

    @staticmethod
    def concat(parts: Iterable[Markup], sep: Markup | None = None) -> Markup:
        """The pieces one after another, `sep` between them."""
        return Markup((sep.html if sep is not None else "").join(p.html for p in parts))

    @staticmethod
    def facets(
        container_id: str, keys: Sequence[str], values: Sequence[Sequence[object]]
    ) -> Markup:
        """The facets of the items of `container_id` (item i carries data-i="i"), as data for
        the page's script: one select per key, a text search; no value is ever markup."""
        rows = [[cell_text(v) for v in row] for row in values]
        payload = {"keys": list(keys), "rows": rows}
        return json_script(payload, class_="facets", data_for=container_id)


EMPTY = Markup("")


@dataclass(frozen=True)
class PageSection:
    """One part of the report: a title and a body, shown open or collapsed."""

    title: str
    body: Markup
    open: bool = True
    anchor: str = ""  # the element id (from the title when empty)

    @property
    def id(self) -> str:
        return self.anchor or anchor(self.title)


def cell_text(value: object) -> str:
    """How a value reads in a cell: NaN and None as '-', floats to 4 significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def anchor(title: str) -> str:
    """A section's element id from its title: report.md links to `report.html#<anchor>`."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def text(value: object) -> Markup:
    """A string as text, never markup."""
    return Markup(html.escape(str(value), quote=True))


def _attribute(name: str, value: object) -> str:
    name = name.rstrip("_").replace("_", "-")
    if not _ATTRIBUTE.match(name) or name.startswith("on"):
        raise ValueError(f"attribute {name!r} is not allowed on the report's page")
    if value is True:
        return f" {name}"
    string = str(value)
    if name in _URL_PREFIXES and not string.startswith(_URL_PREFIXES[name]):
        raise ValueError(f"{name}={string[:40]!r} is not allowed: in-page links, inline PNGs only")
    return f' {name}="{html.escape(string, quote=True)}"'


def json_script(data: Any, **attrs: object) -> Markup:
    """Data for the page's script: JSON in <script type="application/json">, never run."""
    payload = json.dumps(json_safe(data), ensure_ascii=False, allow_nan=False)
    opened = '<script type="application/json"' + "".join(
        _attribute(k, v) for k, v in attrs.items() if v is not None and v is not False
    )
    return Markup(f"{opened}>{payload.translate(_JSON_ESCAPES)}</script>")


def _hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


# No request of any kind (fetch, image, font, frame, form); pictures are data: URIs. The two
# scripts are allowed by their hashes ('unsafe-inline' is only the fallback of browsers that
# predate hashes), so a string that escaped the escaping still could not run.
CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    f"script-src 'unsafe-inline' {_hash(ERRORS_JS)} {_hash(PAGE_JS)}; "
    "base-uri 'none'; form-action 'none'"
)


def render_page(
    title: str, sections: Sequence[PageSection], subtitle: str = "", colophon: str = ""
) -> str:
    """The whole page: head (policy, style), the error box, contents, sections, script."""
    contents = Markup.concat(
        (Markup.el("a", s.title, href=f"#{s.id}") for s in sections), Markup(" · ")
    )
    body = Markup.concat(
        Markup.el(
            "details",
            Markup.el("summary", Markup.el("h2", s.title)),
            Markup.el("div", s.body, class_="body"),
            class_="section",
            id=s.id,
            open=s.open,
        )
        for s in sections
    )
    header = Markup.el(
        "header",
        Markup.el("h1", title),
        Markup.el("p", subtitle) if subtitle else None,
        Markup.el("nav", contents),
    )
    footer = Markup.el(
        "footer",
        f"{colophon or versions(None)} One self-contained file; it loads nothing from the "
        "network and runs no code but its own.",
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(CSP)}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{text(title).html}</title>\n<style>{PAGE_CSS}</style></head>\n"
        f'<body><div id="js-errors" hidden></div><script>{ERRORS_JS}</script>\n'
        f"{header.html}\n<main>{body.html}</main>\n{footer.html}\n"
        f"<script>{PAGE_JS}</script></body></html>\n"
    )


def versions(run_dir: Path | None) -> str:
    """The sentence naming the pytest-mtpsweep that recorded the run (plan.json's
    harness_version) and the one that analysed it, for a reader to match against
    `mtpsweep --version`."""

    analysed = f"pytest-mtpsweep {__version__}"
    if run_dir is None:
        return f"Analysed by {analysed}."
    recorded = RunReader(run_dir).plan.harness_version
    if not recorded:
        return f"Analysed by {analysed}; the run's plan names no harness version."
    if recorded == __version__:
        return f"Recorded and analysed by {analysed}."
    return f"Recorded by pytest-mtpsweep {recorded}; analysed by {analysed}."


def page_title(run_dir: Path) -> str:
    """`mtpsweep: <ladder>/<run>` from the run's plan."""
    read = RunReader(run_dir)
    run, ladder = read.run_id, read.plan.ladder
    return f"mtpsweep: {ladder}/{run}" if ladder else f"mtpsweep: {run}"
