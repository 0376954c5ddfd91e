"""plan.json's authoring fields read back: each within what an authoring ladder can set.

The run wrote them from its settings (`describe.plan_fields`); read back, a hand-edited value
(max_turns of 10**18, a token budget of -1, a baseline cohort the run has not) is refused in one
sentence naming the file, the field and the fix, before anything is analysed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...kindapi import RunReadError
from ...kindapi.records import PlanDoc
from .ladder import MAX_FEEDBACK_CHARS, MAX_REPEATS, MAX_TOKEN_BUDGET, MAX_TURNS

RESTORE = "restore plan.json from the run (no ladder could have set it)"


def _whole(value: Any, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def check_plan(plan: PlanDoc, where: str) -> None:
    """RunReadError naming `where` and the field when an authoring field is not one a ladder
    sets (a field a plan written before it existed lacks is not judged)."""
    f = plan.kind_fields
    rules: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
        ("repeats", lambda v: _whole(v, 1, MAX_REPEATS), f"1 to {MAX_REPEATS}"),
        ("max_turns", lambda v: _whole(v, 1, MAX_TURNS), f"1 to {MAX_TURNS}"),
        (
            "token_budget",
            lambda v: v is None or _whole(v, 1, MAX_TOKEN_BUDGET),
            f"null or 1 to {MAX_TOKEN_BUDGET:g} tokens",
        ),
        (
            "feedback_chars",
            lambda v: _whole(v, 80, MAX_FEEDBACK_CHARS),
            f"80 to {MAX_FEEDBACK_CHARS:,} characters",
        ),
        (
            "tasks",
            lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v),
            "a list of task ids",
        ),
        (
            "cohorts",
            lambda v: (
                isinstance(v, list)
                and all(isinstance(c, Mapping) and isinstance(c.get("name"), str) for c in v)
            ),
            "a list of {name, extract} objects",
        ),
        ("contrast", lambda v: isinstance(v, Mapping), "an object"),
    )
    for name, holds, want in rules:
        if name in f and not holds(f[name]):
            raise _bad(where, name, f[name], want)
    names = [c["name"] for c in f.get("cohorts") or []]
    base = f.get("baseline_cohort")
    if base is not None and names and base not in names:
        raise _bad(where, "baseline_cohort", base, f"one of its cohorts ({', '.join(names)})")


def _bad(where: str, name: str, value: Any, want: str) -> RunReadError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
    return RunReadError(f"{where}: `{name}` is {shown}, not {want}; {RESTORE}")
