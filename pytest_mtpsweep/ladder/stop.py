"""`[stop]`: the sequential design, checked whole (its looks are counterbalanced cycle pairs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base.constants import INTERVAL
from ..base.errors import LadderError
from .fields import Spec
from .values import BOUNDS, MAX_CYCLES, SPENDINGS, STOP_RULES, StopRule, Treatment

STOP: Spec = {
    "rule": (str, True),
    "min_cycles": (int, False),
    "max_cycles": (int, False),
    "spending": (str, False),
    "width_pct": ((int, float), False),
    "cells": (list, False),
    "allow_early_looks": (bool, False),
}
MAX_CELLS = 256


def parse(
    raw: dict[str, Any], path: Path | str, treatments: tuple[Treatment, ...]
) -> StopRule | None:
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
    # The default first look is the smallest whose interval carries the session level: at 2
    # cycles it resamples prompts only, and with 5 % session offsets a null was called faster
    # or slower in 38.7 % of simulated runs (issue 43; bench/sequential_coverage.py).
    low = table.get("min_cycles", min(INTERVAL.session_cycles, top))
    if not (2 <= low <= top <= MAX_CYCLES and low % 2 == 0 and top % 2 == 0):
        raise LadderError(_cycles_error(table, path, low, top, cycles is not None))
    early = bool(table.get("allow_early_looks", False))
    if 2 <= low < INTERVAL.session_cycles and not early and "min_cycles" not in table:
        raise LadderError(
            f"{path}: the stop rule may run {top} cycles, fewer than the {INTERVAL.session_cycles} "
            "whose interval carries the session level (its default first look); set cycles "
            f"(or --cycles) to {INTERVAL.session_cycles} or more, or set stop.allow_early_looks = "
            "true to accept looks that speak for their sessions only."
        )
    if 2 <= low < INTERVAL.session_cycles and not early:
        raise LadderError(
            f"{path}: stop.min_cycles {low} looks before the {INTERVAL.session_cycles} cycles whose "
            "interval carries the session level, so a session offset can stop the run on a "
            f"false call; raise stop.min_cycles (and max_cycles) to {INTERVAL.session_cycles}, or "
            "set stop.allow_early_looks = true to accept looks that speak for their sessions only."
        )
    width = table.get("width_pct")
    if (rule == "width") != (width is not None):
        raise LadderError(
            f'{path}: stop.width_pct goes with rule = "width" and only with it; '
            + ("add width_pct (percent)." if width is None else "drop width_pct.")
        )
    if width is not None and not BOUNDS["stop.width_pct"].holds(width):
        raise LadderError(f"{path}: stop.width_pct is {width!r}; {BOUNDS['stop.width_pct'].fix}.")
    cells = _cells(table.get("cells"), path, raw.get("baseline"), treatments)
    return StopRule(rule, low, top, spending, None if width is None else float(width), cells, early)


def early_look_warning(stop: StopRule | None, arms: int = 1, sweep: bool = False) -> str | None:
    """What `mtpsweep lint` says of a design that opted in to looks before the session level:
    what those looks may claim. `arms`: the treatments beside the baseline (a sweep's values);
    a sweep borrows the session level from 1 df, a contrast table from INTERVAL.min_borrowed_df."""
    if stop is None or stop.min_cycles >= INTERVAL.session_cycles:
        return None
    head = (
        f"stop.allow_early_looks: the first look comes after cycle {stop.min_cycles}, before the "
        f"{INTERVAL.session_cycles} cycles whose own interval carries the session level"
    )
    df = (stop.min_cycles - 1) * (arms - 1)
    if df < (1 if sweep else INTERVAL.min_borrowed_df):
        return (
            f"{head}, and with {arms} treatment(s) beside the baseline the run's arms give it "
            f"{df} df, too few to borrow, so a look there speaks for its sessions only and a session offset can "
            f"stop the run on a false call; set stop.min_cycles = {INTERVAL.session_cycles} unless "
            "the sessions are known alike."
        )
    return (
        f"{head}; there every contrast borrows the session level from the run's {arms} arms "
        f"(their arm × cycle interaction, {df} df at the first "
        'look), so its drops ("surely not the best") and any statement a report there makes '
        "hold at that look's repeated level as long as the arms' sessions vary alike; an arm "
        f"whose own sessions are unusually noisy is seen only from cycle {INTERVAL.session_cycles}."
    )


def _cycles_error(
    table: dict[str, Any], path: Path | str, low: int, top: int, cycles_set: bool
) -> str:
    """The looks' bounds refused, naming only the fields the ladder (or --cycles) set."""
    first = f"stop.min_cycles {low}" if "min_cycles" in table else ""
    last = (
        f"stop.max_cycles {top}"
        if "max_cycles" in table
        else (f"cycles {top}" if cycles_set else "")
    )
    said = " and ".join(x for x in (first, last) if x)
    if first and last:
        bounds = f"with 2 <= min_cycles <= max_cycles <= {MAX_CYCLES}"
    elif first:
        bounds = f"from 2 to the most cycles the rule may run ({top})"
    else:  # the first look is the default: only the most cycles was set
        bounds = f"from {low} to {MAX_CYCLES}"
    fix = "them" if first and last else (first or last).split()[0]
    return (
        f"{path}: with [stop], {said} must be even, {bounds}: the rule looks after each "
        f"counterbalanced cycle pair and cycles are the most it may run; fix {fix}."
    )


def _cells(
    value: list[Any] | None, path: Path | str, baseline: Any, treatments: tuple[Treatment, ...]
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
