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
from pathlib import Path
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
    for name, parse in (
        ("capacity", _capacity),
        ("conversation", _conversation),
        ("trace", _trace),
    ):
        if load.get(name) is not None:
            parse(load[name], where)
    if load.get("block_order") is not None:
        _block_order(load["block_order"], load.get("levels"), where)
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


def _block_order(order: Any, levels: Any, where: str) -> None:
    """Each cycle's levels as the run ran them (report.md's Design line): `c1` to at most
    `c<MAX_CYCLES>`, each a reordering of the plan's level labels."""
    labels = sorted(str(lv.get("label")) for lv in levels or () if isinstance(lv, Mapping))
    want = f"c1 to c{Ladder.MAX_CYCLES}, each cycle's order of the plan's level labels"
    if not isinstance(order, Mapping) or len(order) > Ladder.MAX_CYCLES:
        raise _bad(where, "load.block_order", order, want)
    for key, value in order.items():
        cycle = key[1:] if isinstance(key, str) and key.startswith("c") else ""
        if not (cycle.isdigit() and 1 <= int(cycle) <= Ladder.MAX_CYCLES) or not (
            isinstance(value, list)
            and all(isinstance(v, str) for v in value)
            and (not labels or sorted(value) == labels)
        ):
            raise _bad(where, f"load.block_order.{key}", value, want)


# load.trace's own numbers beside its settings (`Replay.plan_entry`): each one a replay of at
# most trace.MAX_RECORDS records of a file of at most trace.MAX_TRACE_BYTES could have written
TRACE_COUNTS = {
    "records": (1, trace.MAX_RECORDS),
    "bytes": (0, trace.MAX_TRACE_BYTES),
    "first_line": (1, trace.MAX_TRACE_BYTES),
    "last_line": (1, trace.MAX_TRACE_BYTES),
    "corpus_chars": (0, trace.MAX_FILL_CHARS),
    "block_chars": (0, trace.MAX_FILL_CHARS),
}
TRACE_LISTS = ("lines", "arrivals_ms", "tasks", "max_tokens")
MAX_SPAN_MS = 10 * 365 * 86400 * 1000.0  # ten years of a trace's times: past any trace


def _trace(entry: Any, where: str) -> None:
    """The replay's settings as the ladder's `[trace]` takes them, and its counts bounded."""
    if not isinstance(entry, Mapping):
        raise _bad(where, "load.trace", entry, "an object")
    settings = {k: v for k, v in entry.items() if k in trace.FIELDS and v is not None}
    try:
        trace.parse(settings, Path(where), where)
    except (LadderError, TypeError, KeyError) as exc:
        raise RunReadError(f"{str(exc).rstrip('.')}; {RESTORE}") from None
    for name, (low, high) in TRACE_COUNTS.items():
        if name in entry and not _within(entry[name], low, high, True):
            raise _bad(
                where, f"load.trace.{name}", entry[name], f"a whole number {low} to {high:,}"
            )
    if "span_ms" in entry and not _within(entry["span_ms"], 0, MAX_SPAN_MS):
        raise _bad(where, "load.trace.span_ms", entry["span_ms"], f"0 to {MAX_SPAN_MS:g} ms")
    for name in TRACE_LISTS:
        value = entry.get(name)
        if value is not None and not (isinstance(value, list) and len(value) <= trace.MAX_RECORDS):
            raise _bad(
                where, f"load.trace.{name}", value, f"a list of at most {trace.MAX_RECORDS:,}"
            )


def _bad(where: str, name: str, value: Any, want: str) -> RunReadError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
    return RunReadError(f"{where}: `{name}` is {shown}, not {want}; {RESTORE}")
