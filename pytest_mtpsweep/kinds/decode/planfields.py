"""plan.json's decode fields read back: each within what a decode ladder can set.

The run wrote them from its settings (`DecodeRun.plan_fields`); read back, a hand-edited value
(repeats of 10**18, a prompt list that is no list) is refused in one sentence naming the file,
the field and the fix, before anything is analysed. The analysis block's settings are the
protocol's to bound (`ladder.model.BOUNDS`, checked when plan.json is parsed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...kindapi import RunReadError
from ...kindapi.records import PlanDoc
from .ladder import MAX_REPEATS

RESTORE = "restore plan.json from the run (no ladder could have set it)"


def check_plan(plan: PlanDoc, where: str) -> None:
    """RunReadError naming `where` and the field when a decode field is not one a ladder sets."""
    f = plan.kind_fields
    repeats = f.get("repeats")
    if repeats is not None and (type(repeats) is not int or not 1 <= repeats <= MAX_REPEATS):
        raise _bad(where, "repeats", repeats, f"a whole number from 1 to {MAX_REPEATS}")
    if "cache_prompt" in f and not isinstance(f["cache_prompt"], bool):
        raise _bad(where, "cache_prompt", f["cache_prompt"], "true or false")
    prompts = f.get("prompts")
    if prompts is not None and not (
        isinstance(prompts, list)
        and all(
            isinstance(p, Mapping)
            and isinstance(p.get("id"), str)
            and isinstance(p.get("subset"), str)
            for p in prompts
        )
    ):
        raise _bad(where, "prompts", prompts, "a list of {id, subset} objects")
    order = f.get("prompt_order")
    if order is not None and not (
        isinstance(order, Mapping)
        and all(isinstance(v, list) and all(isinstance(i, str) for i in v) for v in order.values())
    ):
        raise _bad(where, "prompt_order", order, "each cycle's list of prompt ids")


def _bad(where: str, name: str, value: Any, want: str) -> RunReadError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
    return RunReadError(f"{where}: `{name}` is {shown}, not {want}; {RESTORE}")
