"""`[stop]`: the sequential design, checked whole (its looks are counterbalanced cycle pairs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import LadderError
from .fields import Spec
from .model import MAX_CYCLES, SPENDINGS, STOP_RULES, StopRule, Treatment

STOP: Spec = {
    "rule": (str, True),
    "min_cycles": (int, False),
    "max_cycles": (int, False),
    "spending": (str, False),
    "width_pct": ((int, float), False),
    "cells": (list, False),
}
MAX_CELLS = 256


def parse(raw: dict[str, Any], path: Path, treatments: tuple[Treatment, ...]) -> StopRule | None:
    """The table (types already checked by `check_table`), or None for a fixed design."""
    table = raw.get("stop")
    if table is None:
        return None
    rule, spending = table["rule"], table.get("spending", SPENDINGS[0])
    if rule not in STOP_RULES:
        raise LadderError(
            f"{path}: field stop.rule is {rule!r}; use one of {', '.join(STOP_RULES)}."
        )
    if spending not in SPENDINGS:
        raise LadderError(
            f"{path}: field stop.spending is {spending!r}; use one of {', '.join(SPENDINGS)}."
        )
    cycles = raw.get("cycles")
    top = table.get("max_cycles", cycles if cycles is not None else 8)
    if cycles is not None and "max_cycles" in table and cycles != table["max_cycles"]:
        raise LadderError(
            f"{path}: cycles is {cycles} and stop.max_cycles is {table['max_cycles']}; with "
            "[stop] the cycles are the most the rule may run: give one of them."
        )
    low = table.get("min_cycles", 2)
    if not (2 <= low <= top <= MAX_CYCLES and low % 2 == 0 and top % 2 == 0):
        raise LadderError(
            f"{path}: stop.min_cycles {low} and max_cycles {top} must be even, with "
            f"2 <= min_cycles <= max_cycles <= {MAX_CYCLES} (the rule looks after each "
            "counterbalanced cycle pair); fix them."
        )
    width = table.get("width_pct")
    if (rule == "width") != (width is not None):
        raise LadderError(
            f'{path}: stop.width_pct goes with rule = "width" and only with it; '
            + ("add width_pct (percent)." if width is None else "drop width_pct.")
        )
    if width is not None and not (0 < width <= 1000):
        raise LadderError(
            f"{path}: stop.width_pct is {width!r}; use a half-width in percent, 0 < W <= 1000."
        )
    cells = _cells(table.get("cells"), path, raw.get("baseline"), treatments)
    return StopRule(rule, low, top, spending, None if width is None else float(width), cells)


def _cells(
    value: list[Any] | None, path: Path, baseline: Any, treatments: tuple[Treatment, ...]
) -> tuple[str, ...]:
    """The headline cells the rule waits for, "treatment:cell" each (empty: every one)."""
    if value is None:
        return ()
    keys = [t.key for t in treatments if t.key != baseline]
    example = f"{keys[0]}:structured" if keys else "treatment:subset"
    if not value or len(value) > MAX_CELLS:
        raise LadderError(
            f"{path}: field stop.cells has {len(value)} entries; list 1 to {MAX_CELLS} headline "
            f'cells the rule waits for, e.g. ["{example}"], or drop it to wait for every one.'
        )
    out = []
    for item in value:
        treatment, sep, cell = item.partition(":") if isinstance(item, str) else ("", "", "")
        if not sep or not cell or treatment not in keys:
            raise LadderError(
                f"{path}: stop.cells entry {item!r} is not a headline cell; write "
                f'"treatment:subset" (a level for a load ladder) with a treatment other than '
                f'the baseline ({", ".join(keys) or "none"}), e.g. "{example}".'
            )
        if item in out:
            raise LadderError(f"{path}: stop.cells names {item!r} twice; list it once.")
        out.append(item)
    return tuple(out)
