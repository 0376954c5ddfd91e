"""One level block on a live session: the client's level run, the server's occupancy around
it, then the records (written after the level has ended, so no write lands inside it)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ....kindapi.records import schema
from .. import conversation
from ..loadgen.chatlevel import Conversations, run_conversations
from ..loadgen.level import ClosedLoop, LevelRun, OpenLoop, run_level
from ..loadgen.payload import LoadSpec, LoadTarget, PromptLike, is_loopback
from ..loadgen.summary import Slo, summarise
from ..records import (
    E2E_MS,
    LEVEL,
    OUTPUT_TOK_S,
    REQUEST_FIELDS,
    TRACE_FIELDS,
    in_flight_at_send,
    level_line,
    request_line,
    turn_fields,
)
from . import energy, occupancy

if TYPE_CHECKING:
    from ....kindapi.ladder import Ladder
    from ....kindapi.run import LiveSession
    from ..ladder import LoadSettings
    from .cases import LoadCase
    from .replay import Replay

OPEN_LOOP_WARMUP = 1  # an open-loop block's default warm-up: one request before its schedule


def identity(ladder: Ladder, live: LiveSession, case: LoadCase) -> dict[str, Any]:
    """The fields every line of a block starts with."""
    slot, lv = case.slot, case.level
    return {
        "run_id": live.ctx.run_id,
        "ladder": ladder.name,
        "treatment": slot.treatment,
        "cycle": slot.cycle,
        "ordinal": slot.ordinal,
        "session": slot.name,
        "level": lv.label,
        "mode": lv.mode,
        "level_value": lv.value,
        "block": case.position,
        "started_at": schema.utc_now_iso(),
    }


def append(live: LiveSession, values: Mapping[str, Any], request: bool = False) -> None:
    """One line through the session's record writer (fsync'd), keyed and with provenance."""
    if request:  # a replay's fields after the rest, only in a replay's lines
        values = {
            **{k: values.get(k) for k in REQUEST_FIELDS},
            **{k: values[k] for k in TRACE_FIELDS if k in values},
        }
    live.writer.append({**values, **live.ctx.keyed, **live.ctx.provenance()})


def not_run(ident: Mapping[str, Any], requests: int, reason: str) -> dict[str, Any]:
    """The level line of a block that did not run."""
    return {
        **ident,
        "record": LEVEL,
        "valid": False,
        "reason": reason,
        "requests": requests,
        "completed": 0,
    }


def server_slots(live: LiveSession) -> int | None:
    """The server's slot count: llama-server's /props total_slots at the session's start."""
    n = (live.info.get("props_start") or {}).get("total_slots")
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def _sources(live: LiveSession, headers: dict[str, str]) -> occupancy.Sources:
    found = live.extra.get("occupancy_sources")
    if found is None:
        found = occupancy.discover(live.http, live, headers)
        live.extra["occupancy_sources"] = found
    assert isinstance(found, occupancy.Sources)
    return found


def _load(s: LoadSettings, case: LoadCase, seed: int) -> tuple[ClosedLoop | OpenLoop, int]:
    """The client's level and its warm-up count: a count of requests or, timed, the closed
    loop's lanes sending while time remains and the open loop's arrivals within it."""
    lv, c = case.level, s.conversation
    if c is not None:  # conversations in flight: one lane each
        load: ClosedLoop | OpenLoop = Conversations.of(
            int(lv.value), c.conversations, c.turns, c.think_time_s
        )
        warm = load.connections
    elif lv.mode == "closed":
        closed = ClosedLoop(int(lv.value), s.requests, s.duration_s)
        warm = closed.connections
        load = closed
    elif s.duration_s is not None:
        load = OpenLoop.within(lv.value, s.duration_s, seed, s.max_in_flight)
        warm = OPEN_LOOP_WARMUP
    else:
        assert s.requests is not None
        load, warm = OpenLoop(lv.value, s.requests, seed, s.max_in_flight), OPEN_LOOP_WARMUP
    return load, warm if s.warmup_requests is None else s.warmup_requests


def _run(
    s: LoadSettings,
    target: LoadTarget,
    spec: LoadSpec,
    scheduled: Sequence[PromptLike],
    load: ClosedLoop | OpenLoop,
    case: LoadCase,
    warm: int,
) -> tuple[LevelRun, dict[int, dict[str, Any]]]:
    """The client's run of the level, and a conversation block's fields of each request."""
    if not isinstance(load, Conversations):
        return run_level(
            target, spec, scheduled, load, timeout_s=s.level_timeout_s, warmup=warm
        ), {}
    assert s.conversation is not None
    openings = [
        conversation.opening(n, case.level.label, case.slot.cycle)
        for n in range(load.conversations)
    ]
    talks = run_conversations(
        target,
        spec,
        scheduled,
        load,
        system=s.conversation.system_text(),
        openings=openings,
        timeout_s=s.level_timeout_s,
        warmup=warm,
    )
    return talks.run, {t.index: turn_fields(t) for t in talks.turns}


def planned_requests(s: LoadSettings, case: LoadCase, seed: int) -> int:
    """The requests a block was to send (a timed closed loop: none known ahead, 0)."""
    load = _load(s, case, seed)[0]
    return load.requests or 0


def measure_level(
    ladder: Ladder,
    s: LoadSettings,
    scheduled: Sequence[PromptLike],
    subsets: Mapping[str, str],
    live: LiveSession,
    case: LoadCase,
    replay: Replay | None = None,
) -> dict[str, Any]:
    """Run the case's level, append its request lines and its level line; the level line. A
    replay's level sends `scheduled` (its own prompts) at the trace's scaled times."""
    import httpx

    treatment = ladder.treatment(case.slot.treatment)
    ident = identity(ladder, live, case)
    target = LoadTarget(
        live.base_url,
        ladder.alias(treatment.key),
        treatment.api_key_env,
        allow_remote=s.allow_remote,
    )
    spec = LoadSpec(
        max_tokens=ladder.max_tokens,
        temperature=ladder.temperature,
        seed=ladder.seed,
        # llama-server's fields: its prompt cache as the ladder says, and `timings` in every
        # chunk, so a chunk's token count is known when a drafter sends several tokens at once
        # (other OpenAI-compatible servers ignore both)
        extra={"cache_prompt": s.cache_prompt, "timings_per_token": True},
        read_timeout_s=s.level_timeout_s,
    )
    load, warm = _load(s, case, ladder.seed)
    if replay is not None:
        load = replay.open_loop(s.max_in_flight)
        warm = OPEN_LOOP_WARMUP if s.warmup_requests is None else s.warmup_requests
    headers = live.endpoint.headers() if live.endpoint else {}
    sources = _sources(live, headers)
    local = is_loopback(live.base_url)
    with httpx.Client(trust_env=False) as side:  # the sampler's own: not the session's client
        before = occupancy.spec_totals(side, live, headers, sources)
        sampler = occupancy.Sampler(side, live, headers, sources).start()
        joules_before = energy.read(live.ctx.device, local)
        try:
            run, turns = _run(s, target, spec, scheduled, load, case, warm)
        except ValueError as exc:  # the target or its key: one sentence, the level not run
            sampler.stop()
            line = not_run(ident, load.requests or 0, str(exc))
            append(live, line)
            return line
        joules_after = energy.read(live.ctx.device, local)
        occ = sampler.stop()
        after = occupancy.spec_totals(side, live, headers, sources)
    if before is not None and after is not None:
        # the block's warm-up requests are in these totals too: a witness, not an endpoint
        occ["drafted"], occ["accepted"] = after[0] - before[0], after[1] - before[1]
    slo = Slo(**s.slo.as_dict()) if s.slo else None
    summary = summarise(run, slo, s.lag_bound_ms)
    slots = server_slots(live)
    flights = in_flight_at_send(run.records)
    for r, n in zip(run.records, flights, strict=True):
        subset = subsets.get(r.prompt_id, "")
        line = request_line(ident, r, run.t_start_ns, n, slots, subset)
        extra = replay.request_fields(r.index) if replay else {}
        append(live, line | extra | turns.get(r.index, {}), request=True)
    queued = None if slots is None else sum(n >= slots for n in flights)
    tokens = summary.output_tokens + sum(r.output_tokens for r in run.warmup if r.ok)
    joules = energy.block_fields(joules_before, joules_after, tokens)
    level = level_line(
        ident,
        run,
        summary,
        slots=slots,
        queued=queued,
        extra={"occupancy": occ, "warmup_requests": warm, **joules},
    )
    append(live, level)
    return level


def session_facts(s: LoadSettings, live: LiveSession) -> dict[str, Any]:
    """What a session adds to its session file: slots against the levels, queued requests and
    client-lag flags per level, the occupancy sources, and the shakedown line."""
    levels: dict[str, dict[str, Any]] = live.extra.get("levels") or {}
    closed = [int(lv.value) for lv in s.levels if lv.mode == "closed"]
    slots = server_slots(live)
    sources = live.extra.get("occupancy_sources")
    facts: dict[str, Any] = {
        "total_slots": slots,
        "highest_concurrency": max(closed, default=None),
        "queued": {k: v.get("queued") for k, v in levels.items()},
        "lag_flags": {k: v["lag_flag"] for k, v in levels.items() if v.get("lag_flag")},
        "occupancy_sources": sources.describe() if sources is not None else None,
        "levels": {k: _brief(v) for k, v in levels.items()},
    }
    facts["shakedown"] = {"summary": shakedown_line(live.slot.name, levels, slots)}
    return facts


def _brief(level: dict[str, Any]) -> dict[str, Any]:
    e2e = level.get(E2E_MS) or {}
    return {
        "valid": level.get("valid"),
        "completed": level.get("completed"),
        "requests": level.get("requests"),
        "e2e_p50_ms": e2e.get("p50"),
        OUTPUT_TOK_S: level.get(OUTPUT_TOK_S),
    }


def shakedown_line(session: str, levels: dict[str, dict[str, Any]], slots: int | None) -> str:
    """One line on the first session: each level's completions, median e2e and tok/s."""
    parts = []
    for label, v in levels.items():
        e2e = (v.get(E2E_MS) or {}).get("p50")
        tps = v.get(OUTPUT_TOK_S)
        med = f"e2e p50 {e2e / 1000:.2f} s" if isinstance(e2e, float) else "no e2e"
        rate = f" {tps:.1f} tok/s" if isinstance(tps, float) and math.isfinite(tps) else ""
        q = f", {v['queued']} queued" if v.get("queued") else ""
        parts.append(f"{label} {v.get('completed', 0)}/{v.get('requests', 0)} {med}{rate}{q}")
    where = f"{slots} slots" if slots else "slots unknown"
    return f"shakedown {session} ({where}): " + "; ".join(parts)
