"""The load report (pure): its model, what report.md and report.html are both rendered from,
and the terminal's headline lines, from the tables.

Every figure is one the tables hold; the report says what the intervals can and cannot carry
(cycles as the unit for throughput, the session level only with 4 or more cycles), which levels
queued requests and why, and which levels the client's own lag flags.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ....kindapi.analysis import INTERVAL
from ....kindapi.report import Md, Report, Section, Table, Text
from ..analysis import census, pairing
from ..analysis.contrast import BY_CYCLE, REQUEST_ENDPOINTS, Row, cycle_gains
from ..analysis.crossover import sentence
from ..records import GOODPUT_REQ_S, J_PER_TOKEN, OUTPUT_TOK_S, REQ_S
from . import listings
from .witnesses import LAG, session_lines, witness_lines

if TYPE_CHECKING:
    import pandas as pd

    from ....kindapi.records import PlanDoc
    from ..analysis.crossover import Crossover
    from ..analysis.turns import TurnReport

NAMES = {
    "ttft": "TTFT",
    "itl": "ITL (request mean)",
    "e2e": "e2e",
    OUTPUT_TOK_S: "output tok/s",
    REQ_S: "req/s",
    GOODPUT_REQ_S: "goodput req/s",
    J_PER_TOKEN: "energy per token",
}


def _f(value: Any, digits: int = 1) -> str:
    ok = isinstance(value, int | float) and math.isfinite(value)
    return f"{value:.{digits}f}" if ok else "n/a"


def gain(row: Row) -> str:
    """`+12.0 % [+5.1, +19.3]`."""
    if not math.isfinite(row.gain_pct):
        return "n/a"
    ci = f" [{row.ci_low:+.1f}, {row.ci_high:+.1f}]" if math.isfinite(row.ci_low) else " [n/a]"
    return f"{row.gain_pct:+.1f} %{ci}"


def headline_lines(
    contrasts: Sequence[Row], interactions: Sequence[Row], endpoint: str
) -> list[str]:
    """Per contrast: the headline endpoint's gain at each level, then its interaction(s)."""
    out = []
    for t, b in dict.fromkeys((r.treatment, r.baseline) for r in contrasts):
        mine = [r for r in contrasts if (r.treatment, r.baseline, r.endpoint) == (t, b, endpoint)]
        levels = "; ".join(f"{r.level} {gain(r)}" for r in mine)
        line = f"{t} vs {b}, {NAMES[endpoint]} gain: {levels}"
        for r in interactions:
            if (r.treatment, r.baseline, r.endpoint) == (t, b, endpoint):
                line += (
                    f"; from {r.level.split('/')[1]} to {r.level.split('/')[0]} the gain "
                    f"factor changes {gain(r)}"
                )
        out.append(line)
    return out


def cycle_lines(requests: pd.DataFrame, contrasts: Sequence[Row], endpoint: str) -> list[str]:
    """The headline endpoint's gain per cycle at each level (a slowed session shows here)."""

    out = []
    for t, b in dict.fromkeys((r.treatment, r.baseline) for r in contrasts):
        parts = []
        for r in contrasts:
            if (r.treatment, r.baseline, r.endpoint) != (t, b, endpoint):
                continue
            by = cycle_gains(requests, t, b, r.level, endpoint)
            parts.append(f"{r.level} " + ", ".join(f"c{c} {g:+.1f} %" for c, g in by.items()))
        if parts:
            said = Md.text(f"{t} vs {b}, {NAMES[endpoint]} gain per cycle: {'; '.join(parts)}")
            out.append(f"- {said}")
    return out


def _percentile_rows(table: pd.DataFrame) -> list[list[str]]:
    rows = []
    for r in table.to_dict(orient="records"):
        q = "" if r.get("queued") is None else str(r["queued"])
        rows.append(
            [
                str(r["treatment"]),
                str(r["level"]),
                f"{r['completed']}/{r['requests']}",
                *(
                    f"{_f(r[f'{n}_p50_ms'])} / {_f(r[f'{n}_p90_ms'])} / {_f(r[f'{n}_p99_ms'])}"
                    for n in ("ttft", "itl", "e2e")
                ),
                _f(r[OUTPUT_TOK_S], 2),
                _f(r[REQ_S], 3),
                _f(r[GOODPUT_REQ_S], 3),
                q,
            ]
        )
    return rows


def _contrast_rows(rows: Sequence[Row]) -> list[list[str]]:
    return [
        [
            f"{r.treatment} vs {r.baseline}",
            NAMES[r.endpoint],
            r.level,
            gain(r),
            str(r.n_prompts) if r.endpoint in REQUEST_ENDPOINTS else f"{r.cycles} cycles",
            str(r.n_pairs),
            r.method,
        ]
        for r in rows
    ]


def _interaction_rows(rows: Sequence[Row]) -> list[list[str]]:
    return [
        [
            f"{r.treatment} vs {r.baseline}",
            NAMES[r.endpoint],
            r.level,
            f"{r.gain_low_pct:+.1f} %" if math.isfinite(r.gain_low_pct) else "n/a",
            f"{r.gain_high_pct:+.1f} %" if math.isfinite(r.gain_high_pct) else "n/a",
            gain(r),
            "yes" if r.excludes_zero else "no",
            r.method,
        ]
        for r in rows
    ]


PER_LEVEL = (
    "treatment",
    "level",
    "completed",
    "TTFT ms",
    "ITL ms",
    "e2e ms",
    "out tok/s",
    "req/s",
    "goodput req/s",
    "queued",
)
CONTRASTS = ("contrast", "endpoint", "level", "gain [95% CI]", "clusters", "pairs", "interval")
INTERACTION = (
    "contrast",
    "endpoint",
    "high/low",
    "gain at low",
    "gain at high",
    "change of the gain [95% CI]",
    "excludes 0",
    "interval",
)


def headline_table(contrasts: Sequence[Row], interactions: Sequence[Row], endpoint: str) -> Table:
    """The headline endpoint's gain per level and its change from the lowest level to the
    highest, one row per contrast: the headline's lines side by side (the page's alone)."""
    rows = [r for r in contrasts if r.endpoint == endpoint]
    inter = [r for r in interactions if r.endpoint == endpoint]
    levels = list(dict.fromkeys(r.level for r in rows))
    spans = list(dict.fromkeys(r.level for r in inter))
    body = []
    for t, b in dict.fromkeys((r.treatment, r.baseline) for r in rows):
        at = {r.level: gain(r) for r in rows if (r.treatment, r.baseline) == (t, b)}
        change = {r.level: gain(r) for r in inter if (r.treatment, r.baseline) == (t, b)}
        body.append(
            (
                f"{t} vs {b}",
                *(at.get(lv, "-") for lv in levels),
                *(change.get(s, "-") for s in spans),
            )
        )
    lead = Md.text(
        f"{NAMES.get(endpoint, endpoint)} gain [95% CI] at each level, and how the gain factor "
        "changes from the lowest level to the highest:"
    )
    headers = ("contrast", *levels, *(f"gain change {s}" for s in spans))
    return Table(headers, tuple(body), id="headline-table", lead=lead, markdown=False)


def _headline(
    contrasts: Sequence[Row],
    interactions: Sequence[Row],
    endpoint: str,
    baseline: str,
    requests: pd.DataFrame,
    crossings: Sequence[Crossover],
    capacity: Sequence[str],
    turns: TurnReport | None,
    n_cycles: int,
) -> Section:

    # A short design's figures hold for its sessions: the reader learns that first (issue 43).
    short = (
        [
            f"- These figures speak only for the server sessions that were run ({n_cycles} "
            f"cycle(s)): with fewer than {INTERVAL.session_cycles} cycles the intervals are "
            "conditional on them (see Limitations)."
        ]
        if 0 < n_cycles < INTERVAL.session_cycles and contrasts
        else []
    )
    said = [
        *short,
        *(f"- {Md.text(x)}" for x in capacity),
        *(f"- {Md.text(x)}" for x in headline_lines(contrasts, interactions, endpoint)),
        *(f"- {Md.text(sentence(c, NAMES[endpoint]))}" for c in crossings),
        *(f"- {Md.text(x)}" for x in (turns.headline if turns else ())),
        *cycle_lines(requests, contrasts, endpoint),
    ]
    blocks: list[Text | Table] = [Text.of(*said)] if said else []
    blocks.append(
        Text(
            "Gain: positive means the treatment is better than the baseline "
            f"({Md.text(baseline)}): baseline/treatment for a latency, treatment/baseline for a "
            "throughput, as a geometric mean; 95 % intervals."
        )
    )
    if any(r.endpoint == endpoint for r in contrasts):
        blocks.append(headline_table(contrasts, interactions, endpoint))
    return Section("Headline", tuple(blocks), role="headline")


def _design(load: Mapping[str, Any], cycles: Sequence[int]) -> Section:
    order = load.get("block_order") or {}
    return Section(
        "Design",
        (
            Text.of(
                f"- Cycles {', '.join(map(str, cycles))}; block order per cycle: "
                + Md.text("; ".join(f"{c}: {' '.join(map(str, v))}" for c, v in order.items()))
                + ".",
                f"- {_per_block(load)}, prompts in one seeded order for every "
                f"treatment; warm-up per block: {Md.text(load.get('warmup_requests') or 'one per lane')}; "
                f"SLOs for goodput: {_slo(load.get('slo'))}.",
            ),
        ),
    )


def _per_level(table: pd.DataFrame) -> Section:
    lead = Text(
        "TTFT, ITL and e2e as p50 / p90 / p99 in ms over every cycle's requests (ITL: every "
        "chunk gap, over its tokens where known); throughput and goodput the mean over cycles."
    )
    rows = tuple(tuple(r) for r in _percentile_rows(table))
    return Section("Per level", (lead, Table(PER_LEVEL, rows)))


def _contrasts(requests: pd.DataFrame, contrasts: Sequence[Row]) -> Section:
    rows = tuple(tuple(r) for r in _contrast_rows(contrasts))
    shown: Table | Text = Table(CONTRASTS, rows) if contrasts else Text("No contrasts.")
    paired = Text.of(*pairing.pairing_lines(requests, contrasts))
    return Section("Contrasts per level", (shown, paired))


def _interaction(interactions: Sequence[Row]) -> Section:
    lead = Text(
        "The ratio of the gain factor at the highest level to that at the lowest (e.g. -10 % "
        "means a gain that was 1.20x at the lowest level is 1.08x at the highest), paired by "
        "(prompt, cycle) for per-request endpoints and by cycle for throughput."
    )
    rows = tuple(tuple(r) for r in _interaction_rows(interactions))
    shown: Table | Text = (
        Table(INTERACTION, rows)
        if interactions
        else Text("No interaction (a mode needs two or more levels).")
    )
    return Section("Interaction: the gain from the lowest level to the highest", (lead, shown))


def report(
    plan: PlanDoc,
    requests: pd.DataFrame,
    table: pd.DataFrame,
    levels: pd.DataFrame,
    contrasts: Sequence[Row],
    interactions: Sequence[Row],
    plots: Sequence[str],
    baseline: str,
    sessions: Sequence[Mapping[str, Any]] = (),
    crossings: Sequence[Crossover] = (),
    capacity: Sequence[str] = (),
    unreadable: Sequence[str] = (),
    replay: Sequence[str] = (),
    turns: TurnReport | None = None,
    records: Sequence[Mapping[str, Any]] = (),
    look: str = "",
) -> Report:
    """The load report's model, report.md and report.html alike: `plots` the files the analysis
    saved; `unreadable` the record lines set aside as read (`file:line: why`); `replay` a trace
    replay's lines (timeline.report_lines); `turns` a conversation run's per-turn report;
    `records` the lines read (every request, on the page); `look` where a stop rule stands."""
    load = plan.kind_fields.get("load") or {}
    cycles = sorted({int(c) for c in levels["cycle"]})
    endpoint = str(load.get("endpoint", "e2e"))
    witnessed = witness_lines(levels, plan, baseline)
    # a block over the client-lag bound measured the client too: a limitation, not only a
    # witness
    lagged = [x for x in witnessed if x.startswith(f"- {LAG}") and " blocks over the bound " in x]
    limits = [
        *census.limitation_lines(requests, levels, unreadable),
        *(turns.limits if turns else ()),
        *limitations(cycles, contrasts, sessions),
        *lagged,
    ]
    opening = [
        *([Text(look)] if look else []),
        Text(f"Question: {Md.text(plan.question)}"),
        *([Text(f"Scope: {Md.text(plan.scope)}")] if plan.scope else []),
    ]
    sections = [
        _headline(
            contrasts,
            interactions,
            endpoint,
            baseline,
            requests,
            crossings,
            capacity,
            turns,
            len(cycles),
        ),
        _design(load, cycles),
        *([Section("Replay", (Text.of(*replay),))] if replay else []),
        _per_level(table),
        *([turns.section] if turns else []),
        _contrasts(requests, contrasts),
        _interaction(interactions),
        Section("Witnesses", (Text.of(*witnessed, *session_lines(sessions)),)),
        Section("Limitations", (Text.of(*limits),), role="limitations"),
        listings.pictures(plots),
        listings.blocks(levels),
        listings.requests(records, plan),
    ]
    title = f"Load report: {Md.text(plan.ladder)} / {Md.text(plan.run_id)}"
    return Report(title, tuple(opening), tuple(sections), empty_pictures=listings.NO_PLOT)


def _per_block(load: Mapping[str, Any]) -> str:
    """The Design line's block size and the wall time its throughput divides by."""
    if isinstance(load.get("trace"), Mapping):  # a replay: the trace's records, its own prompts
        return (
            f"One block of the trace's {Md.text(load['trace'].get('records'))} records per "
            "session (see Replay), throughput over its wall time from its start to its "
            "last completion; each request its own text"
        )
    if load.get("duration_s") is not None:
        return (
            f"{load['duration_s']:g} s per block (closed loop: new requests while time remains; "
            "open loop: the seeded arrivals within it; requests sent by then finish), "
            "throughput over each block's wall time from its first send to its last completion"
        )
    return (
        f"{Md.text(load.get('requests'))} requests per block, throughput over each block's wall time "
        "from its start to its last completion"
    )


def _slo(slo: Mapping[str, float] | None) -> str:
    return Md.text(", ".join(f"{k} <= {v:g}" for k, v in slo.items())) if slo else "none"


def limitations(
    cycles: Sequence[int], contrasts: Sequence[Row], sessions: Sequence[Mapping[str, Any]] = ()
) -> list[str]:
    out = []
    noisy = [str(i.get("session")) for i in sessions if (i.get("host") or {}).get("flagged")]
    if noisy:
        out.append(
            f"- {len(noisy)} of {len(sessions)} sessions ran while other processes used more of "
            f"the CPU than the ladder's host_noise_pct ({Md.text(', '.join(noisy))}): their "
            "cycles' "
            "contrasts carry that load as much as the treatments' difference (the gain per "
            "cycle above shows how much); run again on an idle host."
        )
    if len(cycles) < INTERVAL.session_cycles:
        out.append(
            f"- {len(cycles)} cycle(s): the per-request intervals carry the prompts only, not "
            "the session-to-session level; they are conditional on the sessions run "
            f"({INTERVAL.session_cycles} or more cycles add it)."
        )
    if any(r.method == BY_CYCLE for r in contrasts):
        out.append(
            f"- Throughput has one value per block, so its interval has cycles - 1 = "
            f"{max(len(cycles) - 1, 0)} df: with few cycles it is wide by construction (the "
            "per-request endpoints pair many requests and are the sharper test)."
        )
    out.append(
        "- Requests within a block share the server: their latencies are not "
        "independent, which is why the prompt (over cycles) is the cluster."
    )
    return out
