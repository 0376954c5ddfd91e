"""The load report's pictures and its page-only listings (pure): the plots the analysis saved
as figures with their alt text and captions, every block from the levels frame and every
request from the records the analysis read, filterable on the page.

Every value here is a record's or a ladder's: the model holds it as a value and the renderers
place it as text, never as markup.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ....kindapi.report import Figure, Md, Section, Table, Text
from ..records import E2E_MS, GOODPUT_REQ_S, ITL_MEAN_MS, OUTPUT_TOK_S, REQ_S, TTFT_MS

if TYPE_CHECKING:
    import pandas as pd

    from ....kindapi.records import PlanDoc

# (file, alt text, caption) in the order both renderers show them: the headline's picture first
PLOTS = (
    (
        "load_capacity.png",
        "attainment of the SLOs against the level",
        "A capacity search: the share of each treatment's requests within every SLO target "
        "against the level probed (pooled over cycles, Wilson 95 % bars), the target dotted, each "
        "treatment's capacity dashed.",
    ),
    (
        "load_gain.png",
        "gain against the level",
        "Each endpoint's gain over the baseline against the level with its 95 % interval, on a "
        "log axis of the gain factor; an interval past -75 % or +300 % ends in an arrow at the "
        "edge. Where the headline endpoint's gain crosses zero: a dashed line, its interval "
        "shaded.",
    ),
    (
        "load_turns.png",
        "TTFT and the prompt cached by turn",
        "A conversation run: each treatment's TTFT median by turn with its 95 % interval (left) "
        "and the share of the prompt tokens the server reported cached (right), a line per level.",
    ),
    (
        "load_latency.png",
        "latency percentiles against the level",
        "TTFT, ITL (every chunk gap) and e2e against the level, per treatment: p50 solid, p90 "
        "dashed, p99 dotted, on a log axis.",
    ),
    (
        "load_throughput.png",
        "throughput against the level",
        "Output tokens/s and requests/s against the level: the mean over cycles (line), each "
        "cycle's block a dot.",
    ),
    (
        "load_timeline.png",
        "the trace replay over time",
        "A trace replay over its block's time: the trace's arrivals as replayed (the same in every "
        "session), the requests in flight and each request's TTFT (from its trace time) at its "
        "time, one colour per treatment, one line style per cycle.",
    ),
)
NO_PLOT = "This analysis drew no plot (no level had a completed request)."
BLOCK_HEADERS = (
    "treatment",
    "cycle",
    "session",
    "level",
    "block",
    "valid",
    "completed",
    "out tok/s",
    "req/s",
    "goodput req/s",
    "queued",
    "slots",
    "max in flight",
    "/slots busy max",
    "/metrics waiting max",
    "drafted",
    "accepted",
    "client lag p99 ms",
    "span s",
    "notes",
)
BLOCK_NUMBERS = (
    OUTPUT_TOK_S,
    REQ_S,
    GOODPUT_REQ_S,
    "queued",
    "total_slots",
    "max_in_flight",
    "busy_slots_max",
    "waiting_max",
    "drafted",
    "accepted",
    "client_lag_p99_ms",
    "span_s",
)
BLOCK_FACETS = ("treatment", "cycle", "level", "valid")
REQUEST_HEADERS = (
    "treatment",
    "cycle",
    "level",
    "slot",
    "lane",
    "prompt",
    "TTFT ms",
    "ITL mean ms",
    "e2e ms",
    "output tokens",
    "finish",
    "status",
    "flags",
)
TURN_HEADERS = ("conversation/turn", "cached tokens")  # a conversation run's requests add them
REQUEST_FACETS = ("treatment", "cycle", "level", "prompt", "status")


def pictures(saved: Sequence[str]) -> Section:
    """The Plots section: the files this analysis saved (a plot an earlier one left is not
    among them), in PLOTS' order; report.md carries it only when there is one."""
    known = {name: (alt, caption) for name, alt, caption in PLOTS}
    order = [name for name, _, _ in PLOTS if name in saved]
    order += [name for name in saved if name not in known]
    figures = tuple(Figure(*known.get(name, (name, "")), file=name) for name in order)
    return Section("Plots", figures, role="pictures", markdown=bool(figures))


def _number(value: object) -> float:
    try:
        return float(str(value))
    except ValueError:
        return math.nan


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _value(value: object) -> object:
    """A frame's value as the page shows it: a whole number as an int, NaN as nothing."""
    if _missing(value):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _text(value: object) -> str:
    return "" if _missing(value) else str(value)


def _yes(value: object) -> str:
    return {"True": "yes", "False": "no"}.get(str(value), _text(value))


def _block_row(b: Mapping[str, Any]) -> tuple[object, ...]:
    notes = [_text(b.get("reason")), _text(b.get("lag_flag"))]
    if str(b.get("timed_out")) == "True":
        notes.append("timed out")
    done = f"{_text(_value(b.get('completed')))}/{_text(_value(b.get('requests')))}"
    return (
        _text(b.get("treatment")),
        _value(b.get("cycle")),
        _text(b.get("session")),
        _text(b.get("level")),
        _value(b.get("block")),
        _yes(b.get("valid")),
        done,
        *(_value(b.get(k)) for k in BLOCK_NUMBERS),
        "; ".join(n for n in notes if n),
    )


def blocks(levels: pd.DataFrame) -> Section:
    """Every block, one row each, from the levels frame the analysis wrote load_blocks.csv of."""
    rows = tuple(_block_row(b) for b in levels.to_dict(orient="records"))
    if not rows:
        body: Text | Table = Text(Md.text("No block was recorded (load_blocks.csv is empty)."))
    else:
        lead = Md.text(
            f"Every level block, {len(rows)} rows (load_blocks.csv): throughput is the block's "
            "own; notes say why a block is not valid or is flagged."
        )
        body = Table(BLOCK_HEADERS, rows, id="block-rows", lead=lead, facets=BLOCK_FACETS)
    return Section("Every block", (body,), anchor="blocks", markdown=False)


def request_records(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Every request line; a line repeated (a resumed block) counts once, the last one."""
    last: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for r in records:
        if r.get("record") == "request":
            last[(str(r.get("session")), str(r.get("level")), str(r.get("request")))] = r
    return list(last.values())


def _ms(value: object) -> str | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return f"{value:.1f}" if ok else None


def _flags(r: Mapping[str, Any], bound: float) -> str:
    flags = []
    if r.get("reason"):
        flags.append(str(r["reason"]))
    status = r.get("http_status")
    if status not in (None, 200):
        flags.append(f"HTTP {status}")
    if r.get("queued"):
        flags.append("queued (every slot held another)")
    lag = _number(r.get("client_lag_max_ms"))
    if math.isfinite(bound) and lag > bound:
        flags.append(f"client lag {lag:.1f} ms > {bound:g} ms")
    return "; ".join(flags)


def _turn(r: Mapping[str, Any]) -> tuple[object, object]:
    """A conversation request's slot (`3/2`: conversation 3, turn 2) and its cached tokens
    (or what its cache status says instead)."""
    if r.get("turn") is None:
        return None, None
    cached = r.get("cached_tokens") if r.get("cache_status") == "ok" else r.get("cache_status")
    return f"{r.get('conversation')}/{r.get('turn')}", cached


def requests(records: Sequence[Mapping[str, Any]], plan: PlanDoc) -> Section:
    """Every request, one row each, from the records the analysis read (by its own rule: a
    line it set aside is not here)."""
    kept = request_records(records)
    if not kept:
        return Section(
            "Every request", (Text("No request was recorded."),), anchor="requests", markdown=False
        )
    bound = _number((plan.kind_fields.get("load") or {}).get("lag_bound_ms"))
    talk = any(r.get("turn") is not None for r in kept)
    rows = tuple(
        (
            r.get("treatment"),
            r.get("cycle"),
            r.get("level"),
            r.get("request"),
            r.get("lane"),
            r.get("prompt_id"),
            _ms(r.get(TTFT_MS)),
            _ms(r.get(ITL_MEAN_MS)),
            _ms(r.get(E2E_MS)),
            r.get("output_tokens"),
            r.get("finish_reason"),
            "ok" if r.get("valid") else "failed",
            _flags(r, bound),
            *(_turn(r) if talk else ()),
        )
        for r in kept
    )
    lead = Md.text(
        f"Every request, {len(rows)} rows (the records): slot is its place in the schedule every "
        "treatment shares (a treatment's slot i pairs with the baseline's slot i of the same "
        "cycle and level), lane its connection; latencies count from the intended send time."
    )
    headers = REQUEST_HEADERS + (TURN_HEADERS if talk else ())
    table = Table(headers, rows, id="request-rows", lead=lead, facets=REQUEST_FACETS)
    return Section("Every request", (table,), anchor="requests", markdown=False)
