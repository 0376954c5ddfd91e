"""Free text in report.md: what a user, a run or a model wrote, placed so it reads as text.

A question, a scope, a note, a treatment, subset or prompt name, a reply, an error reason or a
server's version string reaches report.md only through `Md.text` (prose), `Md.code` (a code
span), `Md.fence` (a fenced block) or `Md.table` (a cell not marked `Md`). Each keeps it on one
line (every line break, `\\u2028` included, becomes a space) and escapes what could make a
heading, a list, a table, a link, an HTML tag, emphasis or a fence, so a line of report.md that
starts a block is always the writer's own: report.html's builder finds sections by them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

# Python's \s is Unicode whitespace: \n, \r, \v, \f, \x1c-\x1f, \x85, \u2028, \u2029 among
# them, every character str.splitlines() (and so report.html's reader) splits a line at.
_SPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")
# Characters that shape inline Markdown wherever they stand. `]` only before `(` or `[` (a link
# or an image needs one), `<` only where an HTML tag or an autolink could open, `&` only where
# an entity could: elsewhere they are plain and are left as they are, "[+1.0, +2.0]" stays.
_INLINE = re.compile(r"[\\`*|~]|\](?=[(\[])|<(?=[A-Za-z/!?])|&(?=#|[A-Za-z0-9]+;)")
_ENTITIES = {"<": "&lt;", "&": "&amp;"}
# `_` is emphasis unless letters or digits stand on both sides (ngram_simple stays).
_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# What starts a block at the start of a line or of a list item: heading, quote, list, rule.
_LEADING = re.compile(r"[#>+=-]|\d{1,9}(?=[.)])")


def _one_line(value: object) -> str:
    return _SPACE.sub(" ", _CONTROL.sub("\ufffd", str(value))).strip()


def _escape(m: re.Match[str]) -> str:
    # `<` and `&` as entities: not every Markdown reader takes `\<` as an escape (Python-Markdown
    # does not), every one reads `&lt;` as the character
    return _ENTITIES.get(m[0], "\\" + m[0])


def _inline(value: object) -> str:
    escaped = _INLINE.sub(_escape, _one_line(value))
    return _UNDERSCORE.sub(r"\\_", escaped)


def _cell(value: object) -> str:
    if isinstance(value, Md):
        return re.sub(r"(?<!\\)\|", r"\|", value)  # a code span's `|` would split the row
    return _inline(value)


class Md(str):
    """Markdown the report's writer composed (bold, code spans): `Md.table` places it as it is.
    Its static methods make one from free text, escaped."""

    __slots__ = ()

    LONG_LIST_ROWS: ClassVar[int] = 20  # report.md lists no more rows; the rest is in a file

    @staticmethod
    def text(value: object) -> Md:
        """`value` as Markdown text on one line: it can start no block and shape no inline."""
        if isinstance(value, Md):
            return value  # escaped already, or the writer's own
        text = _inline(value)
        m = _LEADING.match(text)
        if m:
            # `1. x` needs its `.` escaped, a leading `#`, `-` or `>` the character itself
            at = m.end() if m[0][0].isdigit() else 0
            text = text[:at] + "\\" + text[at:]
        return Md(text)

    @staticmethod
    def code(value: object) -> Md:
        """`value` as a code span, on one line, its fence longer than any backtick run in it."""
        text = _one_line(value)
        fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
        pad = " " if text[:1] == "`" or text[-1:] == "`" or not text else ""
        return Md(f"{fence}{pad}{text}{pad}{fence}")

    @staticmethod
    def fence(text: str) -> list[str]:
        """`text` as a fenced block: the fence longer than any backtick run inside, so no line
        of it can close the block early."""
        longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
        fence = "`" * max(3, longest + 1)
        return [fence, *_CONTROL.sub("\ufffd", text).splitlines(), fence]

    @staticmethod
    def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
        """A pipe table: every cell is text (escaped) unless it is `Md`, the writer's markup."""
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
        return "\n".join(lines)
