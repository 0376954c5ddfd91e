"""plan.json's `load` block read back: every value within what a load ladder can set.

The run wrote the block from its `LoadSettings` (`LoadSettings.plan_entry`); read back, each
field is checked by the very rules the ladder's own fields pass (`ladder`, `capacity`,
`conversation`), so a hand-edited plan (a capacity tolerance of 1e308, a negative level, a
levels list of a million) is refused in one sentence naming the file, the field and the fix,
before anything is analysed. A plan written before a field existed simply lacks it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...kindapi import LadderError, RunReadError
from ...kindapi.ladder import Ladder
from ...kindapi.records import PlanDoc
from . import capacity, conversation, trace
from .ladder import (
    LEVEL_BOUNDS,
    MAX_DURATION_S,
    MAX_LANES,
    MAX_LEVELS,
    MAX_WARMUP,
    REQUEST_ENDPOINTS,
    Level,
    _slo,
)
from .loadgen.arrivals import MAX_SCHEDULE

RESTORE = "restore plan.json from the run (no ladder could have set it)"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _within(value: Any, low: float, high: float, whole: bool = False) -> bool:
    ok = _number(value) and low <= value <= high
    return ok and (not whole or isinstance(value, int))


def check_plan(plan: PlanDoc, where: str) -> None:
    """plan.json's load block and the load part of its analysis block, each value one a load
    ladder can set; RunReadError naming `where`, the field and the fix otherwise."""
    load = plan.kind_fields.get("load")
    if load is None:
        return
    if not isinstance(load, Mapping):
        raise _bad(where, "load", load, "an object")
    _scalars(load, where)
    _levels(load.get("levels"), where)
    for name, parse in (("capacity", _capacity), ("conversation", _conversation)):
        if load.get(name) is not None:
            parse(load[name], where)
    if load.get("slo") is not None:
        try:
            _slo(load["slo"], where)
        except (LadderError, TypeError, KeyError) as exc:
            raise RunReadError(f"{str(exc).rstrip('.')}; {RESTORE}") from None
    endpoint = plan.analysis.kind_settings.get("endpoint")
    if endpoint is not None and endpoint not in REQUEST_ENDPOINTS:
        raise _bad(where, "analysis.endpoint", endpoint, f"one of {', '.join(REQUEST_ENDPOINTS)}")


def _scalars(load: Mapping[str, Any], where: str) -> None:
    rules: tuple[tuple[str, Any, str], ...] = (
        ("requests", lambda v: _within(v, 1, MAX_SCHEDULE, True), f"1 to {MAX_SCHEDULE:,}"),
        (
            "duration_s",
            lambda v: _within(v, 0, MAX_DURATION_S) and v > 0,
            f"seconds above 0 and at most {MAX_DURATION_S:g}",
        ),
        ("warmup_requests", lambda v: _within(v, 0, MAX_WARMUP, True), f"0 to {MAX_WARMUP}"),
        (
            "level_timeout_s",
            lambda v: _within(v, 0, Ladder.MAX_TIMEOUT_S) and v > 0,
            f"seconds above 0 and at most {Ladder.MAX_TIMEOUT_S:g}",
        ),
        (
            "lag_bound_ms",
            lambda v: _within(v, 0, Ladder.MAX_TIMEOUT_S * 1000) and v > 0,
            "a positive bound in ms",
        ),
        ("max_in_flight", lambda v: _within(v, 1, MAX_LANES, True), f"1 to {MAX_LANES}"),
        ("endpoint", lambda v: v in REQUEST_ENDPOINTS, f"one of {', '.join(REQUEST_ENDPOINTS)}"),
        ("cache_prompt", lambda v: isinstance(v, bool), "true or false"),
    )
    for name, holds, want in rules:
        value = load.get(name)
        if value is not None and not holds(value):
            raise _bad(where, f"load.{name}", value, want)


def _levels(levels: Any, where: str) -> None:
    if levels is None:
        return
    if not isinstance(levels, list) or len(levels) > MAX_LEVELS:
        raise _bad(where, "load.levels", levels, f"a list of at most {MAX_LEVELS} levels")
    for i, lv in enumerate(levels):
        name = f"load.levels[{i}]"
        if not isinstance(lv, Mapping):
            raise _bad(where, name, lv, "an object with mode, value and label")
        mode, value = str(lv.get("mode")), lv.get("value")
        if not _number(value):
            raise _bad(where, f"{name}.value", value, "a finite number")
        assert isinstance(value, int | float)
        if mode == trace.MODE:  # a trace replay's one level: its time scale
            if value > 0 and lv.get("label") == trace.LABEL:
                continue
            raise _bad(where, name, lv, f"the replay's one level ({trace.LABEL}, a time scale)")
        if mode not in LEVEL_BOUNDS:
            raise _bad(where, f"{name}.mode", mode, f"one of {', '.join(LEVEL_BOUNDS)}")
        low, high, span = LEVEL_BOUNDS[mode]
        if not _within(value, low, high, False) or (mode == "closed" and value != int(value)):
            raise _bad(where, f"{name}.value", value, span)
        if lv.get("label") != Level(mode, float(value)).label:
            raise _bad(where, f"{name}.label", lv.get("label"), "the label of its mode and value")


def _capacity(entry: Any, where: str) -> None:
    """The search as the ladder's `[capacity]` takes it (its mode back in the ladder's word),
    and `max_probes` the search's own for those bounds."""
    if not isinstance(entry, Mapping):
        raise _bad(where, "load.capacity", entry, "an object")
    words = {v: k for k, v in capacity.MODES.items()}
    raw = {k: v for k, v in entry.items() if k != "max_probes"}
    if raw.get("mode") in words:
        raw["mode"] = words[raw["mode"]]
    try:
        s = capacity.parse(raw, where)
    except (LadderError, TypeError, KeyError) as exc:
        raise RunReadError(f"{str(exc).rstrip('.')}; {RESTORE}") from None
    assert s is not None
    if "max_probes" in entry and entry["max_probes"] != s.max_probes():
        raise _bad(
            where,
            "load.capacity.max_probes",
            entry["max_probes"],
            f"{s.max_probes()}, the search's own for its bounds",
        )


def _conversation(entry: Any, where: str) -> None:
    if not isinstance(entry, Mapping):
        raise _bad(where, "load.conversation", entry, "an object")
    fields = ("turns", "conversations", "think_time_s", "system_prefix_tokens")
    try:
        conversation.parse({k: entry[k] for k in fields if k in entry}, where)
    except (LadderError, TypeError, KeyError) as exc:
        raise RunReadError(f"{str(exc).rstrip('.')}; {RESTORE}") from None


def _bad(where: str, name: str, value: Any, want: str) -> RunReadError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
    return RunReadError(f"{where}: `{name}` is {shown}, not {want}; {RESTORE}")
