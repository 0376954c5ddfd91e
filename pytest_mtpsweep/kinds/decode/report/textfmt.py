"""Plain-text and Markdown formatting shared by the report, the headline and compare."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from ....kindapi.analysis import INTERVAL
from ....kindapi.report import Md, Section, Text
from ..analysis.runvalues import DecodeAnalysis

Writer = Callable[[DecodeAnalysis], list[str]]


def table_or_count(
    headers: Sequence[str], rows: Sequence[Sequence[str]], where: str, what: str
) -> str:
    """The Markdown table, or, past Md.LONG_LIST_ROWS, one line: how many rows and where they are."""
    if len(rows) <= Md.LONG_LIST_ROWS:
        return Md.table(headers, rows)
    return (
        f"{len(rows)} {what}: too many to list here; one row each in `{where}` beside this report."
    )


def md_section(title: str, lines: Sequence[str]) -> Section:
    """A report section: its title, and its Markdown lines as one text block."""
    body = "\n".join(lines).strip("\n")
    return Section(title, (Text(body),) if body else ())


def titled(title: str) -> Callable[[Writer], Callable[[DecodeAnalysis], Section]]:
    """A section writer's lines under their title: the writer says what, this says where."""

    def wrap(writer: Writer) -> Callable[[DecodeAnalysis], Section]:
        def section(result: DecodeAnalysis) -> Section:
            return md_section(title, writer(result))

        section.__doc__, section.__name__ = writer.__doc__, writer.__name__
        return section

    return wrap


def pct(value: Any) -> str:
    return f"{value:+.2f}%" if finite(value) else "n/a"


def num(value: Any, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if finite(value) else "n/a"


def finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def ci(low: Any, high: Any) -> str:
    if not (finite(low) and finite(high)):
        return "n/a"
    return f"[{low:+.2f}, {high:+.2f}]"


def dict_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    # Plain dicts from column lists: iterrows builds a Series per row and to_dict boxes every
    # cell, which dominated the report's run time.
    names = [str(c) for c in frame.columns]
    columns = [frame[c].tolist() for c in frame.columns]
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def texts(row: Mapping[str, Any], *keys: str) -> list[str]:
    """The row's values under `keys`, in that order, as a table's cells show them."""
    return [str(row[k]) for k in keys]


def flags(row: Mapping[str, Any]) -> str:
    flags = []
    if row["decision"] == "insufficient":
        flags.append(f"fewer than {INTERVAL.min_prompts} prompts")
    elif bool(row["underpowered"]):
        flags.append("underpowered")
    if int(row["n_pairs"]) > 0 and not bool(row["counterbalanced"]):
        flags.append("order-confounded")
    if bool(row["sign_disagreement"]):
        flags.append("cross-checks disagree on sign")
    return ", ".join(flags)


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def no_pairs_reason(result: DecodeAnalysis) -> str | None:
    """Why a result has nothing to contrast, or None when it has pairs."""
    base = result.settings.baseline
    if not result.treatments:
        return (
            f"No contrasts: no treatment other than the baseline {base!r} was selected or "
            "recorded (for example only the baseline was selected with -k), so there is "
            "nothing to pair."
        )
    if not result.has_pairs:
        return (
            f"No treatment-baseline pairs: no (prompt, cycle) holds a valid measurement of both "
            f"a treatment and the baseline {base!r}; the gaps and exclusions below say why."
        )
    return None


def title(result: DecodeAnalysis) -> str:
    runs = " + ".join(result.run_ids)
    return f"{result.ladder}/{runs}" if result.ladder else runs
