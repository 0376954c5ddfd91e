"""report.md's Markdown, as the reports write it, onto the page through the escaping builder.

Only what the reports use: `#` headings, paragraphs, `-` and `1.` lists (one level of
nesting), pipe tables, fenced blocks, `**bold**` and `` `code` ``. Everything else is text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .document import Markup, el, join, text

_INLINE = re.compile(r"\*\*(?P<bold>.+?)\*\*|`(?P<code>[^`]+)`")
_ITEM = re.compile(r"(?P<indent> *)(?:[-*]|(?P<n>\d+)\.) (?P<body>.*)")
_PIPE = re.compile(r"(?<!\\)\|")
_HEADING = re.compile(r"(#{1,5}) (.*)")


@dataclass(frozen=True)
class Document:
    """A report split at its `## ` headings: title, what precedes the first, and the rest."""

    title: str
    preamble: str
    sections: tuple[tuple[str, str], ...]

    def section(self, name: str) -> str | None:
        """The body of the first section whose heading starts with `name`."""
        return next((body for title, body in self.sections if title.startswith(name)), None)


def split(markdown: str) -> Document:
    """A report's title, preamble and `## ` sections."""
    title, preamble = "", list[str]()
    sections: list[tuple[str, list[str]]] = []
    current: list[str] = preamble
    for line in markdown.splitlines():
        if line.startswith("# ") and not title and not sections:
            title = line[2:].strip()
        elif line.startswith("## "):
            current = []
            sections.append((line[3:].strip(), current))
        else:
            current.append(line)
    return Document(
        title, "\n".join(preamble).strip(), tuple((t, "\n".join(b).strip()) for t, b in sections)
    )


def inline(source: str) -> Markup:
    """`**bold**` and `` `code` `` in a line; the rest is text."""
    parts, end = [], 0
    for m in _INLINE.finditer(source):
        parts.append(text(source[end : m.start()]))
        bold = m.group("bold")
        parts.append(el("strong", inline(bold)) if bold is not None else el("code", m["code"]))
        end = m.end()
    parts.append(text(source[end:]))
    return join(parts)


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|") for c in _PIPE.split(inner)]


def _table(lines: list[str]) -> Markup:
    head = _cells(lines[0])
    rows = [_cells(line) for line in lines[2:]] if len(lines) > 1 else []
    built = el(
        "table",
        el("thead", el("tr", *(el("th", inline(h)) for h in head))),
        el("tbody", *(el("tr", *(el("td", inline(c)) for c in row)) for row in rows)),
    )
    return el("div", built, class_="scroll") if len(rows) > 25 else built


def _list(lines: list[str]) -> Markup:
    """Items at the first line's indent; deeper items nest under the one before them."""
    items: list[tuple[str, list[str]]] = []
    first = _ITEM.match(lines[0])
    ordered = bool(first and first["n"])
    base = len(lines[0]) - len(lines[0].lstrip(" "))
    for line in lines:
        m = _ITEM.match(line)
        depth = len(line) - len(line.lstrip(" "))
        if m and depth <= base:
            items.append((m["body"], []))
        elif items:
            items[-1][1].append(line)
    rendered = []
    for body, rest in items:
        nested = [r for r in rest if _ITEM.match(r)]
        more = " ".join(r.strip() for r in rest if not _ITEM.match(r))
        inner = inline(f"{body} {more}".strip())
        rendered.append(el("li", inner, _list(nested) if nested else None))
    return el("ol" if ordered else "ul", *rendered)


def render(markdown: str) -> Markup:
    """Markdown blocks as page elements."""
    lines = markdown.splitlines()
    out: list[Markup] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
            stop = len(lines) if end is None else end
            out.append(el("pre", el("code", "\n".join(lines[i + 1 : stop]))))
            i = stop + 1
        elif m := _HEADING.match(line):
            out.append(el(f"h{len(m[1]) + 1}", inline(m[2])))
            i += 1
        elif line.lstrip().startswith("|"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            out.append(_table(lines[i:j]))
            i = j
        elif first := _ITEM.match(line):
            j = i + 1
            while (
                j < len(lines)
                and lines[j].strip()
                and (lines[j].startswith(" ") or _same_kind(first, _ITEM.match(lines[j])))
            ):
                j += 1
            out.append(_list(lines[i:j]))
            i = j
        else:
            j = i + 1
            while j < len(lines) and lines[j].strip() and not _starts_block(lines[j]):
                j += 1
            out.append(el("p", inline(" ".join(x.strip() for x in lines[i:j]))))
            i = j
    return join(out)


def _same_kind(first: re.Match[str], other: re.Match[str] | None) -> bool:
    """Another item of the same list: bullets continue bullets, numbers numbers."""
    return other is not None and not other["indent"] and bool(first["n"]) == bool(other["n"])


def _starts_block(line: str) -> bool:
    return bool(
        line.startswith("```")
        or _HEADING.match(line)
        or line.lstrip().startswith("|")
        or _ITEM.match(line)
    )
