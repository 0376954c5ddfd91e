"""A trace replay in the report (pure): what was replayed and how closely, as report.md's
"Replay" lines, and its timeline as a picture (matplotlib optional).

The lines say the trace (file, records, scaling), how late the client sent each request after
its scaled trace time (its send lag: the replay follows the trace within it), whether every
slot sent the same bytes in every session (the pairing's premise), and how the tokens the
server counted compare with the trace's input lengths (the characters-per-token estimate).
The picture: arrivals per second of the trace as replayed, the requests in flight, and each
request's TTFT at its time, per treatment and cycle. Record values are read as untrusted: a
missing or wrong-typed number is left out, never met as a crash.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ....kindapi.report import Md
from ..records import E2E_MS, TTFT_MS
from ..trace import LABEL

if TYPE_CHECKING:
    from ....kindapi.records import PlanDoc

MAX_BINS = 60  # the arrivals panel's bars: at most this many over the span


def _num(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) else None


def replayed(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The request lines of the replay's block (the last of a repeated one, as the tables)."""
    last: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    for r in records:
        if r.get("record") == "request" and r.get("level") == LABEL:
            last[(r.get("session"), r.get("request"))] = r
    return list(last.values())


def _q(values: Sequence[float], q: float) -> float:
    v = sorted(values)
    if not v:
        return math.nan
    k = (len(v) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def report_lines(records: Sequence[Mapping[str, Any]], plan: PlanDoc) -> list[str]:
    """report.md's Replay section (none when the run replayed no trace)."""
    load = plan.kind_fields.get("load") or {}
    t = load.get("trace")
    rows = replayed(records)
    if not isinstance(t, Mapping) or not rows:
        return []
    scale = _num(t.get("time_scale")) or 1.0
    span = (_num(t.get("span_ms")) or 0.0) * scale / 1000.0
    out = [
        f"- The trace: {Md.text(t.get('path'))} ({Md.text(t.get('format'))}), "
        f"{Md.text(t.get('records'))} records, lines {Md.text(t.get('first_line'))}-"
        f"{Md.text(t.get('last_line'))}, sha256 {Md.text(str(t.get('sha256'))[:16])}; its "
        f"times x {scale:g} (a span of {span:,.1f} s), its input lengths x "
        f"{_num(t.get('input_scale')) or 1.0:g}, one block per session, open loop.",
        _lag_line(rows, _num(load.get("lag_bound_ms"))),
        _content_line(rows),
        _length_line(rows, t),
    ]
    return out


def _lag_line(rows: Sequence[Mapping[str, Any]], bound: float | None) -> str:
    parts = []
    for t in dict.fromkeys(str(r.get("treatment")) for r in rows):
        lags = [
            x
            for r in rows
            if str(r.get("treatment")) == t
            if (x := _num(r.get("send_lag_ms"))) is not None
        ]
        if not lags:
            parts.append(f"{t}: no request sent")
            continue
        over = sum(x > bound for x in lags) if bound is not None else 0
        said = f", {over} over the lag bound" if over else ""
        parts.append(
            f"{t} p50 {_q(lags, 0.5):.2f} ms, p99 {_q(lags, 0.99):.2f} ms, max "
            f"{max(lags):.2f} ms over {len(lags)} requests{said}"
        )
    return (
        "- Arrivals against the trace: each request was sent this long after its scaled trace "
        f"time (the client's send lag; latency counts from the trace's time): {Md.text('; '.join(parts))}."
    )


def _content_line(rows: Sequence[Mapping[str, Any]]) -> str:
    by_slot: dict[Any, set[Any]] = {}
    for r in rows:
        by_slot.setdefault(r.get("request"), set()).add(r.get("fill_sha256"))
    sessions = len({r.get("session") for r in rows})
    differ = sorted((k for k, v in by_slot.items() if len(v) > 1), key=str)
    if differ:
        shown = ", ".join(map(str, differ[:8]))
        return (
            f"- Content: {len(differ)} of {len(by_slot)} slots sent different prompt bytes "
            f"in different sessions (slots {Md.text(shown)}): those pairs compare different "
            "requests."
        )
    return (
        f"- Content: every one of the {len(by_slot)} slots sent the same prompt bytes (fill "
        f"sha256) in all {sessions} sessions: real text of the prompt set, a whole prompt "
        "last, so requests pair by slot."
    )


def _length_line(rows: Sequence[Mapping[str, Any]], t: Mapping[str, Any]) -> str:
    scale = _num(t.get("input_scale")) or 1.0
    ratios = []
    for r in rows:
        served, asked = _num(r.get("prompt_tokens")), _num(r.get("trace_input_tokens"))
        if served and asked:
            ratios.append(served / max(asked * scale, 1.0))
    capped = sum(
        1
        for r in rows
        if (a := _num(r.get("trace_output_tokens"))) is not None
        and (m := _num(r.get("request_max_tokens"))) is not None
        and m < a
    )
    tail = f"; {capped} of {len(rows)} requests had their output length capped by max_tokens."
    if not ratios:
        return "- Lengths: no request's prompt tokens were reported by the server" + tail
    return (
        f"- Lengths: the server counted {_q(ratios, 0.5):.2f} x the trace's scaled input tokens "
        f"(median; {min(ratios):.2f}-{max(ratios):.2f}): the error of "
        f"{_num(t.get('chars_per_token')) or 4.0:g} characters per token, the chat template's "
        "own tokens, and a whole prompt being longer than a short record asks" + tail
    )


def timeline_figure(records: Sequence[Mapping[str, Any]]) -> Any | None:
    """Three panels over the block's time (s from its start): the trace's arrivals per second
    as replayed, the requests in flight, and each request's TTFT at its intended time; one
    colour per treatment, one line style per cycle. None when there is no replay."""
    rows = replayed(records)
    if not rows:
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 7), layout="constrained")
    arrive, flight, ttft = fig.subplots(3, 1, sharex=True)
    at = [x / 1000 for r in rows if (x := _num(r.get("intended_ms"))) is not None]
    first = min((str(r.get("session")) for r in rows), default="")
    mine = [
        x / 1000
        for r in rows
        if str(r.get("session")) == first
        if (x := _num(r.get("intended_ms"))) is not None
    ]
    span = max(at, default=0.0)
    width = max(span / MAX_BINS, 0.1)
    bins = max(math.ceil(span / width), 1)
    arrive.hist(mine, bins=bins, range=(0, bins * width), color="0.55")
    arrive.set_ylabel(f"arrivals / {width:.2g} s")
    arrive.set_title("The trace as replayed (the same times in every session)")
    treatments = list(dict.fromkeys(str(r.get("treatment")) for r in rows))
    styles = ("-", "--", ":", "-.")
    for k, t in enumerate(treatments):
        cycles = sorted({r.get("cycle") for r in rows if str(r.get("treatment")) == t}, key=str)
        for j, c in enumerate(cycles):
            block = [r for r in rows if str(r.get("treatment")) == t and r.get("cycle") == c]
            xs, ys = _in_flight(block)
            style = styles[j % len(styles)]
            flight.step(xs, ys, where="post", color=f"C{k}", linestyle=style, label=f"{t} c{c}")
            pts = [
                (x / 1000, y)
                for r in block
                if (x := _num(r.get("intended_ms"))) is not None
                and (y := _num(r.get(TTFT_MS))) is not None
                and y > 0
            ]
            if pts:
                ttft.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    "o",
                    color=f"C{k}",
                    alpha=0.7,
                    markersize=4,
                    label=f"{t} c{c}",
                )
    flight.set_ylabel("requests in flight")
    flight.legend(fontsize="small", ncol=max(len(treatments), 1))
    ttft.set_ylabel("TTFT (ms, from the trace's time)")
    ttft.set_yscale("log")
    ttft.set_xlabel("time from the block's start (s)")
    return fig


def _in_flight(block: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[int]]:
    """The step function of requests in flight: +1 at each send, -1 at each end (s)."""
    events: list[tuple[float, int]] = []
    for r in block:
        at, lag, e2e = (_num(r.get(k)) for k in ("intended_ms", "send_lag_ms", E2E_MS))
        if at is None or lag is None:
            continue
        events.append(((at + lag) / 1000, 1))
        if e2e is not None:
            events.append(((at + e2e) / 1000, -1))
    xs, ys, n = [0.0], [0], 0
    for x, step in sorted(events):
        n += step
        xs.append(x)
        ys.append(n)
    return xs, ys
