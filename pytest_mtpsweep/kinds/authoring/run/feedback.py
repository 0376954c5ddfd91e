"""What goes back to the model after a failed check: `check: <error>`, trimmed; pure."""

from __future__ import annotations

import re

from ..sandbox import Check

# pytest's own machinery in a traceback says nothing about the artefact; nor does the harness's
# proxy that forwards each call to it (`mtpsweep_proxy.py`, in the grader).
_OWN_FRAME = re.compile(
    r"/(_pytest|pluggy)/|<frozen importlib|importlib/__init__\.py|^mtpsweep_\w+\.py:\d+"
)
_NOISE = re.compile(
    r"(/_pytest/|/pluggy/|<frozen importlib|importlib/__init__\.py|^mtpsweep_\w+\.py:\d+"
    r"|^\s*\?\?\?\s*$|^Hint: make sure your test modules|^Traceback:$"
    r"|^\s*\^+\s*$|^!{5,}|^[.FEsx]+\s*(\[\s*\d+%\])?$|^\d+ (failed|error|passed).* in [\d.]+s)"
)
_HEADER = re.compile(r"^(=+|_+) .* (=+|_+)$")


def clean(output: str) -> str:
    """pytest's output without its progress, banners and own frames."""
    lines = []
    skip_next = False
    for raw in output.splitlines():
        line = raw.removeprefix("INTERNALERROR> ")
        if skip_next and not _OWN_FRAME.search(line):  # the source under one of pytest's frames
            skip_next = line.lstrip().startswith(("^", "~"))
            continue
        if _NOISE.search(line):
            skip_next = bool(_OWN_FRAME.search(line))
            continue
        if _HEADER.match(line.strip()) and "ERROR collecting" not in line:
            continue
        lines.append(line.rstrip())
    return "\n".join(line for line in lines if line).strip()


def first_line(check: Check) -> str:
    """One line saying what went wrong (for the records and the census)."""
    if check.reason:
        return check.reason
    for line in check.output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")) and " - " in line:
            return line.split(" - ", 1)[1].strip()
    errors = [ln[1:].strip() for ln in check.output.splitlines() if ln.startswith("E ")]
    named = [e for e in errors if re.match(r"^\w+(Error|Exception|Exit)\b", e)]
    lines = named or errors or clean(check.output).splitlines()
    return lines[-1][:300] if lines else ""


def message(check: Check, limit: int) -> str:
    """The checker's message for the model, at most `limit` characters (head kept)."""
    text = clean(check.output)
    if check.reason:
        text = f"the check was stopped: {check.reason}\n{text}".strip()
    return trim(text, limit)


def trim(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 12].rstrip() + "\n[trimmed]"
