"""Server arguments a ladder may not carry: a `{placeholder}` nothing replaces, or a flag the
harness sets itself. `mtpsweep lint` lists them all; a run (pytest's collection, before any
session) refuses the first, so lint's checks are the run's.
"""

from __future__ import annotations

import re

from .fields import HARNESS_FLAGS
from .values import Ladder

PLACEHOLDERS = {"model": "the session's model path"}
_BRACES = re.compile(r"\{([^{}]*)\}")


def argument_problems(ladder: Ladder) -> list[str]:
    """Server arguments with a placeholder nothing replaces, or a flag the harness sets."""
    groups = [("server.args", ladder.server_args)]
    groups += [(f"treatment {t.key!r} args", t.args) for t in ladder.treatments]
    out: list[str] = []
    for where, args in groups:
        for arg in args:
            for name in _BRACES.findall(arg):
                if name not in PLACEHOLDERS:
                    known = ", ".join(f"{{{k}}} ({v})" for k, v in PLACEHOLDERS.items())
                    out.append(
                        f"{ladder.path}: {where}: {arg!r} names {{{name}}}, which nothing "
                        f"replaces; only {known} is replaced."
                    )
            flag = arg.split("=", 1)[0]
            if flag in HARNESS_FLAGS:
                hint = (
                    " (a draft model is -md {model} or a path)" if flag in ("-m", "--model") else ""
                )
                out.append(
                    f"{ladder.path}: {where}: {flag} is set by the harness from "
                    f"{HARNESS_FLAGS[flag]}; remove it from the arguments{hint}."
                )
    return out
