"""The load report (pure): report.md's text and the terminal's headline lines, from the tables.

Every figure is one the tables hold; the report says what the intervals can and cannot carry
(cycles as the unit for throughput, the session level only with 4 or more cycles), which levels
queued requests and why, and which levels the client's own lag flags.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...analysis.stats import MIN_CYCLES_FOR_SESSION
from ...report.mdtext import md_table, md_text
from . import census, pairing
from .contrast import BY_CYCLE, REQUEST_ENDPOINTS, Row

if TYPE_CHECKING:
    import pandas as pd

    from .crossover import Crossover
    from .turns import TurnReport

NAMES = {"ttft": "TTFT", "itl": "ITL (request mean)", "e2e": "e2e", "output_tok_s": "output tok/s",
         "req_s": "req/s", "goodput_req_s": "goodput req/s",
         "j_per_token": "energy per token"}  # fmt: skip
LAG = "Client lag:"  # how the witnesses' client-lag line starts (report.html lists it too)


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
                line += (f"; from {r.level.split('/')[1]} to {r.level.split('/')[0]} the gain "
                         f"factor changes {gain(r)}")  # fmt: skip
        out.append(line)
    return out


def cycle_lines(requests: pd.DataFrame, contrasts: Sequence[Row], endpoint: str) -> list[str]:
    """The headline endpoint's gain per cycle at each level (a slowed session shows here)."""
    from .contrast import cycle_gains

    out = []
    for t, b in dict.fromkeys((r.treatment, r.baseline) for r in contrasts):
        parts = []
        for r in contrasts:
            if (r.treatment, r.baseline, r.endpoint) != (t, b, endpoint):
                continue
            by = cycle_gains(requests, t, b, r.level, endpoint)
            parts.append(f"{r.level} " + ", ".join(f"c{c} {g:+.1f} %" for c, g in by.items()))
        if parts:
            said = md_text(f"{t} vs {b}, {NAMES[endpoint]} gain per cycle: {'; '.join(parts)}")
            out.append(f"- {said}")
    return out


def _percentile_rows(table: pd.DataFrame) -> list[list[str]]:
    rows = []
    for r in table.to_dict(orient="records"):
        q = "" if r.get("queued") is None else str(r["queued"])
        rows.append([
            str(r["treatment"]), str(r["level"]), f"{r['completed']}/{r['requests']}",
            *(f"{_f(r[f'{n}_p50_ms'])} / {_f(r[f'{n}_p90_ms'])} / {_f(r[f'{n}_p99_ms'])}"
              for n in ("ttft", "itl", "e2e")),
            _f(r["output_tok_s"], 2), _f(r["req_s"], 3), _f(r["goodput_req_s"], 3), q,
        ])  # fmt: skip
    return rows


def _contrast_rows(rows: Sequence[Row]) -> list[list[str]]:
    return [[f"{r.treatment} vs {r.baseline}", NAMES[r.endpoint], r.level, gain(r),
             str(r.n_prompts) if r.endpoint in REQUEST_ENDPOINTS else f"{r.cycles} cycles",
             str(r.n_pairs), r.method] for r in rows]  # fmt: skip


def _interaction_rows(rows: Sequence[Row]) -> list[list[str]]:
    return [[f"{r.treatment} vs {r.baseline}", NAMES[r.endpoint], r.level,
             f"{r.gain_low_pct:+.1f} %" if math.isfinite(r.gain_low_pct) else "n/a",
             f"{r.gain_high_pct:+.1f} %" if math.isfinite(r.gain_high_pct) else "n/a",
             gain(r), "yes" if r.excludes_zero else "no", r.method] for r in rows]  # fmt: skip


SPEC_FLAGS = ("--spec-type", "--model-draft", "-md", "--spec-draft-model")


def drafting(plan: Mapping[str, Any]) -> set[str]:
    """The treatments whose server flags ask for speculative decoding."""
    return {str(t.get("key")) for t in plan.get("treatments") or []
            if any(str(a).split("=")[0] in SPEC_FLAGS for a in t.get("args") or [])}  # fmt: skip


def witness_lines(levels: pd.DataFrame, plan: Mapping[str, Any], baseline: str) -> list[str]:
    """Slots against the highest concurrency, queued requests, the server's occupancy, the
    drafter's totals, client-lag flags."""
    load = plan.get("load") or {}
    closed = [lv["value"] for lv in load.get("levels", []) if lv.get("mode") == "closed"]
    highest = int(max(closed)) if closed else None
    out = []
    for t, block in levels.groupby("treatment", sort=False):
        slots = sorted({int(s) for s in block["total_slots"].dropna()})
        said = ", ".join(map(str, slots)) or "unknown (the server reports no total_slots)"
        queued = block["queued"].dropna()
        q = int(queued.sum()) if len(queued) else None
        line = f"- {md_text(t)}: server slots {said}; highest concurrency {highest}"
        if highest is not None and slots and highest > min(slots):
            line += f" (> slots: up to {highest - min(slots)} requests in flight wait for a slot)"
        line += (
            f"; {q} request(s) queued by the client's count (sent while every slot held another)"
            if q is not None
            else "; queued requests not counted (no slot count)"
        )
        busy = block["busy_slots_max"].dropna()
        wait = block["waiting_max"].dropna()
        if len(busy):
            line += f"; /slots busy at most {int(busy.max())}"
        if len(wait):
            line += f"; /metrics waiting at most {int(wait.max())}"
        drafted, accepted = block["drafted"].dropna(), block["accepted"].dropna()
        if len(drafted) and drafted.sum() > 0:
            line += (f"; drafted {int(drafted.sum())} tokens, accepted {int(accepted.sum())} "
                     f"({accepted.sum() / drafted.sum():.0%}, warm-ups included)")  # fmt: skip
        elif len(drafted) and t in drafting(plan):
            line += ("; its drafter proposed no token in any block (/metrics), so no gain of "
                     "this treatment here is the drafter's")  # fmt: skip
        out.append(line + ".")
    flagged = levels[levels["lag_flag"].notna()]
    if len(flagged):
        records = flagged.to_dict(orient="records")
        names = md_text(", ".join(f"{r['session']}/{r['level']}" for r in records))
        worst = flagged["client_lag_p99_ms"].max()
        out.append(
            f"- {LAG} {len(flagged)} of {len(levels)} blocks over the bound "
            f"{_f(load.get('lag_bound_ms'), 2)} ms (worst p99 "
            f"{_f(worst, 2)} ms): {names}; their latencies hold the client's delay too."
        )
    else:
        out.append(f"- {LAG} no block over the bound of {md_text(load.get('lag_bound_ms'))} ms.")
    out.append(energy_line(levels))
    return out


def energy_line(levels: pd.DataFrame) -> str:
    """Energy per output token per treatment (NVML), or, said once, why there is none."""
    if "j_per_token" not in levels or not levels["j_per_token"].notna().any():
        why = levels["energy"].dropna() if "energy" in levels else levels["treatment"].iloc[:0]
        reason = str(why.iloc[0]) if len(why) else "the records carry no energy reading"
        return f"- Energy per token: not measured ({md_text(reason)})."
    parts = []
    for t, block in levels.groupby("treatment", sort=False):
        jpt = block["j_per_token"].dropna()
        scope = ", ".join(sorted({str(x) for x in block["energy"].dropna()}))
        parts.append(f"{t} {jpt.mean():.4g} J/token over {len(jpt)} blocks ({scope})"
                     if len(jpt) else f"{t} not measured")  # fmt: skip
    return ("- Energy per token (NVML's total-energy counter around each block, its warm-up "
            "included): " + md_text("; ".join(parts)) + ".")  # fmt: skip


def session_lines(sessions: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each session's drift (calibration at start and end) and the CPU others used meanwhile."""
    out = []
    for info in sessions:
        cal, host = info.get("calibration") or {}, info.get("host") or {}
        drift = cal.get("drift_pct")
        parts = [f"calibration drift {drift:+.1f} %" if isinstance(drift, float) else
                 "no calibration drift"]  # fmt: skip
        other = host.get("other_cpu_pct")
        if isinstance(other, float):
            flag = " (flagged: over its threshold)" if host.get("flagged") else ""
            note = f"; {md_text(host['note'])}" if host.get("note") else ""
            parts.append(f"other processes used {other:.0f} % of the CPU{flag}{note}")
        out.append(f"- {md_text(info.get('session'))}: {', '.join(parts)}.")
    return out


def report(
    plan: Mapping[str, Any],
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
) -> str:
    """report.md; `unreadable`: the record lines set aside as read (`file:line: why`);
    `replay`: a trace replay's lines (timeline.report_lines), its own section; `turns`: a
    conversation run's per-turn lines."""
    from .crossover import sentence

    load = plan.get("load") or {}
    cycles = sorted({int(c) for c in levels["cycle"]})
    endpoint = str(load.get("endpoint", "e2e"))
    order = load.get("block_order") or {}
    witnessed = witness_lines(levels, plan, baseline)
    lines = [
        f"# Load report: {md_text(plan.get('ladder', ''))} / {md_text(plan.get('run_id', ''))}",
        "",
        f"Question: {md_text(plan.get('question', ''))}",
        "",
        *([f"Scope: {md_text(plan['scope'])}", ""] if plan.get("scope") else []),
        "## Headline",
        "",
        *(f"- {md_text(x)}" for x in capacity),
        *(f"- {md_text(x)}" for x in headline_lines(contrasts, interactions, endpoint)),
        *(f"- {md_text(sentence(c, NAMES[endpoint]))}" for c in crossings),
        *(f"- {md_text(x)}" for x in (turns.headline if turns else ())),
        *cycle_lines(requests, contrasts, endpoint),
        "",
        "Gain: positive means the treatment is better than the baseline "
        f"({md_text(baseline)}): baseline/treatment for a latency, treatment/baseline for a throughput, "
        "as a geometric mean; 95 % intervals.",
        "",
        "## Design",
        "",
        f"- Cycles {', '.join(map(str, cycles))}; block order per cycle: "
        + md_text("; ".join(f"{c}: {' '.join(map(str, v))}" for c, v in order.items()))
        + ".",
        f"- {_per_block(load)}, prompts in one seeded order for every "
        f"treatment; warm-up per block: {md_text(load.get('warmup_requests') or 'one per lane')}; "
        f"SLOs for goodput: {_slo(load.get('slo'))}.",
        "",
        *(["## Replay", "", *replay, ""] if replay else []),
        "## Per level",
        "",
        "TTFT, ITL and e2e as p50 / p90 / p99 in ms over every cycle's requests (ITL: every "
        "chunk gap, over its tokens where known); throughput and goodput the mean over cycles.",
        "",
        md_table(
            [
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
            ],
            _percentile_rows(table),
        ),
        "",
        *(turns.section if turns else ()),
        "## Contrasts per level",
        "",
        md_table(
            ["contrast", "endpoint", "level", "gain [95% CI]", "clusters", "pairs", "interval"],
            _contrast_rows(contrasts),
        )
        if contrasts
        else "No contrasts.",
        "",
        *pairing.pairing_lines(requests, contrasts),
        "",
        "## Interaction: the gain from the lowest level to the highest",
        "",
        "The ratio of the gain factor at the highest level to that at the lowest (e.g. -10 % "
        "means a gain that was 1.20x at the lowest level is 1.08x at the highest), paired by "
        "(prompt, cycle) for per-request endpoints and by cycle for throughput.",
        "",
        md_table(
            [
                "contrast",
                "endpoint",
                "high/low",
                "gain at low",
                "gain at high",
                "change of the gain [95% CI]",
                "excludes 0",
                "interval",
            ],
            _interaction_rows(interactions),
        )
        if interactions
        else "No interaction (a mode needs two or more levels).",
        "",
        "## Witnesses",
        "",
        *witnessed,
        *session_lines(sessions),
        "",
        "## Limitations",
        "",
        *census.limitation_lines(requests, levels, unreadable),
        *(turns.limits if turns else ()),
        *limitations(cycles, contrasts, sessions),
        # a block over the client-lag bound measured the client too: a limitation, not only
        # a witness
        *(x for x in witnessed if x.startswith(f"- {LAG}") and " blocks over the bound " in x),
        "",
        *(["## Plots", "", *(f"![{p}]({p})" for p in plots), ""] if plots else []),
    ]
    return "\n".join(lines) + "\n"


def _per_block(load: Mapping[str, Any]) -> str:
    """The Design line's block size and the wall time its throughput divides by."""
    if isinstance(load.get("trace"), Mapping):  # a replay: the trace's records, its own prompts
        return (f"One block of the trace's {md_text(load['trace'].get('records'))} records per "
                "session (see Replay), throughput over its wall time from its start to its "
                "last completion; each request its own text")  # fmt: skip
    if load.get("duration_s") is not None:
        return (
            f"{load['duration_s']:g} s per block (closed loop: new requests while time remains; "
            "open loop: the seeded arrivals within it; requests sent by then finish), "
            "throughput over each block's wall time from its first send to its last completion"
        )
    return (
        f"{md_text(load.get('requests'))} requests per block, throughput over each block's wall time "
        "from its start to its last completion"
    )


def _slo(slo: Mapping[str, float] | None) -> str:
    return md_text(", ".join(f"{k} <= {v:g}" for k, v in slo.items())) if slo else "none"


def limitations(
    cycles: Sequence[int], contrasts: Sequence[Row], sessions: Sequence[Mapping[str, Any]] = ()
) -> list[str]:
    out = []
    noisy = [str(i.get("session")) for i in sessions if (i.get("host") or {}).get("flagged")]
    if noisy:
        out.append(
            f"- {len(noisy)} of {len(sessions)} sessions ran while other processes used more of "
            f"the CPU than the ladder's host_noise_pct ({md_text(', '.join(noisy))}): their "
            "cycles' "
            "contrasts carry that load as much as the treatments' difference (the gain per "
            "cycle above shows how much); run again on an idle host."
        )
    if len(cycles) < MIN_CYCLES_FOR_SESSION:
        out.append(
            f"- {len(cycles)} cycle(s): the per-request intervals carry the prompts only, not "
            "the session-to-session level; they are conditional on the sessions run "
            f"({MIN_CYCLES_FOR_SESSION} or more cycles add it)."
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
