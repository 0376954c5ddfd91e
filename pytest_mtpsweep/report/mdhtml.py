"""report.md's Markdown, as the reports write it, onto the page through the escaping builder.

Only what the reports use: `#` headings, paragraphs, `-` and `1.` lists (one level of
nesting), pipe tables, fenced blocks, `**bold**`, `` `code` `` and the escapes free text is
written with (backslash, `&lt;`, `&amp;`). Everything else is text.
"""

from __future__ import annotations

import re
import string

from .document import Markup, text

_PUNCTUATION = frozenset(string.punctuation)
_ENTITIES = {"&lt;": "<", "&amp;": "&"}  # the two the writer escapes free text with
_FENCE = re.compile(r"`{3,}")
_ITEM = re.compile(r"(?P<indent> *)(?:[-*]|(?P<n>\d+)\.) (?P<body>.*)")
_HEADING = re.compile(r"(#{1,5}) (.*)")


def _closing_bold(source: str, start: int) -> int | None:
    """Where the `**` that closes a bold opened before `start` begins; escapes skipped."""
    k = start
    while k < len(source):
        if source[k] == "\\":
            k += 2
        elif source.startswith("**", k) and k > start:
            return k
        else:
            k += 1
    return None


def _code_end(source: str, start: int, run: int) -> re.Match[str] | None:
    """The backtick run of exactly `run` that closes a code span opened before `start`."""
    return re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(source, start)


def inline(source: str) -> Markup:
    """`**bold**`, `` `code` `` (a fence of any length) and backslash escapes in a line: what
    report.md's writer escapes free text with (report/mdtext.py); the rest is text."""
    parts: list[Markup] = []
    plain: list[str] = []
    i = 0
    while i < len(source):
        c = source[i]
        run = len(source) - i - len(source[i:].lstrip("`")) if c == "`" else 0
        close = _code_end(source, i + run, run) if run else None
        bold = _closing_bold(source, i + 2) if source.startswith("**", i) else None
        entity = next((e for e in _ENTITIES if source.startswith(e, i)), None)
        if c == "\\" and source[i + 1 : i + 2] in _PUNCTUATION:
            plain.append(source[i + 1])
            i += 2
        elif entity is not None:
            plain.append(_ENTITIES[entity])
            i += len(entity)
        elif close is not None:
            code = source[i + run : close.start()]
            if code.startswith(" ") and code.endswith(" ") and code.strip():
                code = code[1:-1]
            parts += [text("".join(plain)), Markup.el("code", code)]
            plain, i = [], close.end()
        elif bold is not None:
            parts += [text("".join(plain)), Markup.el("strong", inline(source[i + 2 : bold]))]
            plain, i = [], bold + 2
        else:
            plain.append(source[i : i + max(run, 1)])
            i += max(run, 1)
    parts.append(text("".join(plain)))
    return Markup.concat(parts)


def _cells(line: str) -> list[str]:
    """A table row's cells; a backslash-escaped pipe is a pipe inside a cell, as in GFM."""
    inner = line.strip()
    cells: list[str] = []
    cell: list[str] = []
    i, bounded = 0, False
    while i < len(inner):
        c, bounded = inner[i], False
        if c == "\\" and i + 1 < len(inner):
            cell.append("|" if inner[i + 1] == "|" else inner[i : i + 2])
            i += 2
            continue
        if c == "|":
            cells.append("".join(cell))
            cell, bounded = [], True
        else:
            cell.append(c)
        i += 1
    if not bounded:
        cells.append("".join(cell))
    return [c.strip() for c in (cells[1:] if inner.startswith("|") else cells)]


def _table(lines: list[str]) -> Markup:
    head = _cells(lines[0])
    rows = [_cells(line) for line in lines[2:]] if len(lines) > 1 else []
    built = Markup.el(
        "table",
        Markup.el("thead", Markup.el("tr", *(Markup.el("th", inline(h)) for h in head))),
        Markup.el(
            "tbody", *(Markup.el("tr", *(Markup.el("td", inline(c)) for c in row)) for row in rows)
        ),
    )
    return Markup.el("div", built, class_="scroll") if len(rows) > 25 else built


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
        rendered.append(Markup.el("li", inner, _list(nested) if nested else None))
    return Markup.el("ol" if ordered else "ul", *rendered)


def render(markdown: str) -> Markup:
    """Markdown blocks as page elements."""
    lines = markdown.splitlines()
    out: list[Markup] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif fence := _FENCE.match(line):
            # closed by a backtick run at least as long, alone on its line
            closing = re.compile(rf"`{{{len(fence[0])},}}\s*")
            end = next((j for j in range(i + 1, len(lines)) if closing.fullmatch(lines[j])), None)
            stop = len(lines) if end is None else end
            out.append(Markup.el("pre", Markup.el("code", "\n".join(lines[i + 1 : stop]))))
            i = stop + 1
        elif m := _HEADING.match(line):
            out.append(Markup.el(f"h{len(m[1]) + 1}", inline(m[2])))
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
            out.append(Markup.el("p", inline(" ".join(x.strip() for x in lines[i:j]))))
            i = j
    return Markup.concat(out)


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
