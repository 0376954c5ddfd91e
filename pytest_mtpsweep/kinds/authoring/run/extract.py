"""Taking the artefact out of a reply, as the cohort says: pure functions."""

from __future__ import annotations

import re

MODES = ("fenced", "whole")  # "fenced:<lang>" names a language: fenced:python
# A fence: three or more backticks, an optional info string, the body, the same fence again.
_FENCE = re.compile(
    r"^(?P<fence>`{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S
)
ALIASES = {"python": ("python", "py", "python3"), "py": ("python", "py", "python3")}


def check_mode(mode: str) -> str | None:
    """Why an extraction mode is not understood (None when it is)."""
    base, _, lang = mode.partition(":")
    if base not in MODES or (base == "whole" and lang) or (":" in mode and not lang):
        return f"extract {mode!r} is not one of fenced, fenced:<language>, whole"
    return None


_OPEN = re.compile(r"^(?P<fence>`{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*)\Z", re.M | re.S)


def _tag(info: str) -> str:
    words = info.strip().split()
    return words[0].lower() if words else ""


def blocks(reply: str) -> list[tuple[str, str]]:
    """Every fenced block of a reply: (language tag, body), in order.

    A block still open when the reply ends (cut off by max_tokens) runs to the end.
    """
    out = []
    end = 0
    for m in _FENCE.finditer(reply):
        out.append((_tag(m.group("info")), m.group("body")))
        end = m.end()
    tail = _OPEN.search(reply, end)
    if tail is not None:
        out.append((_tag(tail.group("info")), tail.group("body")))
    return out


def extract(reply: str, mode: str) -> str | None:
    """The artefact of a reply, or None when there is none.

    `fenced:<lang>`: the first block tagged with that language (or an alias: py for python),
    else the first untagged block; `fenced`: the first block; `whole`: the reply itself.
    """
    base, _, lang = mode.partition(":")
    if base == "whole":
        return reply.strip() + "\n" if reply.strip() else None
    found = blocks(reply)
    if not lang:
        return found[0][1] if found else None
    names = ALIASES.get(lang.lower(), (lang.lower(),))
    for tag, body in found:
        if tag in names:
            return body
    for tag, body in found:
        if not tag:
            return body
    return None


def describe_missing(mode: str) -> str:
    """What the model is told when its reply held no artefact."""
    base, _, lang = mode.partition(":")
    if base == "whole":
        return "the reply was empty"
    return (
        f"no ```{lang} code block was found in the reply"
        if lang
        else ("no fenced code block was found in the reply")
    )
