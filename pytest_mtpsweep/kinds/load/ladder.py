"""A load ladder's own fields: the levels (`concurrency`, `rate`), the size of a level block
(`requests`, or `duration_s` seconds), the prompt set, the SLOs for goodput, and the client's
bounds; treatments are compared as in decode.

`settings(ladder)` reads them into a `LoadSettings`; `validate` turns every rule into one
`LadderError`. No heavy imports: the loader reads this module for every load ladder.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...kindapi import SUBSETS, KindSpec, LadderError
from ...kindapi.ladder import Ladder, Spec, Treatment, check_table, parse_treatments
from . import capacity, conversation, trace
from .capacity import CapacitySettings
from .conversation import ConversationSettings
from .loadgen.arrivals import MAX_RATE, MAX_SCHEDULE, MIN_RATE, NS_PER_S, first_arrival_ns
from .loadgen.payload import is_loopback
from .records import GOODPUT_REQ_S, OUTPUT_TOK_S, REQ_S
from .trace import TraceSettings

FIELDS: Spec = {
    "prompt_set": (str, False),
    "subset": (str, False),
    "concurrency": (list, False),  # closed loop: N requests in flight, each level a block
    "rate": (list, False),  # open loop: Poisson arrivals at R requests/s, each level a block
    "requests": (int, False),  # per level block, in every session (or duration_s)
    "duration_s": ((int, float), False),  # seconds per level block instead of a count
    # set by --load-requests / --load-duration: either replaces the ladder's requests and
    # duration_s both, so the command line can turn a counted ladder into a timed one
    "command_line": (dict, False),
    "warmup_requests": (int, False),  # per block, before its requests (default: one per lane)
    "slo": (dict, False),  # ttft_ms, itl_ms, e2e_ms: a request meeting all counts as good
    "cache_prompt": (bool, False),  # llama-server's prompt cache (keyed; off by default)
    "level_timeout_s": ((int, float), False),  # a block still running then is cut short
    "lag_bound_ms": ((int, float), False),  # client lag p99 past this flags the level
    "endpoint": (str, False),  # the headline's per-request endpoint
    "max_in_flight": (int, False),  # open loop: past this many a send waits (and lags)
    "allow_remote": (bool, False),  # an attached server off loopback may be loaded
    "capacity": (dict, False),  # search each treatment's most load within the SLOs (capacity.py)
    "trace": (dict, False),  # replay a trace's arrivals and lengths with real text (trace.py)
    "conversation": (dict, False),  # blocks of multi-turn conversations (conversation.py)
}
# The [slo] keys: the ladder's own names (a user's ladder holds them), not the request fields
# they bound (records.py), though two coincide: a record field renamed leaves these be.
SLO_TTFT, SLO_ITL, SLO_E2E = "ttft_ms", "itl_ms", "e2e_ms"
SLO: Spec = {
    SLO_TTFT: ((int, float), False),
    SLO_ITL: ((int, float), False),
    SLO_E2E: ((int, float), False),
}
COMMAND_LINE: Spec = {"requests": (int, False), "duration_s": ((int, float), False)}
REQUEST_ENDPOINTS = ("ttft", "itl", "e2e")  # per request, paired by slot, clustered by prompt
LEVEL_ENDPOINTS = (OUTPUT_TOK_S, REQ_S, GOODPUT_REQ_S)  # per block, paired by cycle
MAX_DURATION_S = 3600.0
# Every size is bounded before anything is drawn or allocated (lint, --collect-only and the run
# share `validate`): a level's schedule (arrivals.MAX_SCHEDULE), its lanes, its warm-up.
MAX_LEVELS = 64  # concurrency and rate levels together: a session runs each as a block
MAX_LANES = 4096  # requests in flight (concurrency, max_in_flight): two descriptors each
MAX_WARMUP = 1000  # warm-up requests per block
LEVEL_BOUNDS: dict[str, tuple[float, float, str]] = {  # mode -> (lowest, highest, as said)
    "closed": (1, MAX_LANES, f"1 to {MAX_LANES} requests in flight"),
    "open": (MIN_RATE, MAX_RATE, f"{MIN_RATE:g} to {MAX_RATE:,.0f} requests/s"),
}
# A timed block's prompt order: whole seeded permutations this long at least, then cycled,
# so slot k is the same prompt in every treatment however many slots a block reaches.
DURATION_ORDER = 1024
DEFAULT_REQUESTS = 16  # per level block, when neither requests nor duration_s is given
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_LAG_BOUND_MS = 1.0
DEFAULT_MAX_IN_FLIGHT = 256
DEFAULT_ENDPOINT = "e2e"


@dataclass(frozen=True, order=True)
class Level:
    """One level of load: closed loop at a concurrency, or open loop at a rate (requests/s)."""

    mode: str  # closed, open
    value: float

    @property
    def label(self) -> str:
        """How ids and tables name it: conc4, rate2.5 (a trace's one level: replay)."""
        if self.mode == trace.MODE:
            return trace.LABEL
        return f"conc{int(self.value)}" if self.mode == "closed" else f"rate{self.value:g}"


@dataclass(frozen=True)
class Slos:
    """The latency targets of goodput, in ms (None: no target)."""

    ttft_ms: float | None = None
    itl_ms: float | None = None
    e2e_ms: float | None = None

    def as_dict(self) -> dict[str, float]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True)
class LoadSettings:
    """A load ladder's own fields, read and defaulted."""

    prompt_set: str
    subset: str
    levels: tuple[Level, ...]  # closed levels ascending, then open levels ascending
    requests: int | None  # per block; None when the block runs for duration_s instead
    warmup_requests: int | None  # None: one per lane (the level's connections)
    slo: Slos | None
    cache_prompt: bool
    level_timeout_s: float
    lag_bound_ms: float
    endpoint: str
    max_in_flight: int
    allow_remote: bool
    duration_s: float | None = None  # seconds per block; None when it runs `requests`
    capacity: CapacitySettings | None = None  # a capacity search: probes instead of levels
    trace: TraceSettings | None = None  # a trace replay: one block of the trace's records
    conversation: ConversationSettings | None = None  # blocks of conversations of turns

    @property
    def per_block(self) -> str:
        """`16 requests` or `30 s`: the size of every level block."""
        return (
            f"{self.duration_s:g} s" if self.duration_s is not None else f"{self.requests} requests"
        )

    def order_length(self, n_prompts: int) -> int:
        """How long the seeded prompt order is: a block's requests, or for a timed block whole
        permutations of at least DURATION_ORDER, cycled past its end."""
        if self.requests is not None:
            return self.requests
        return n_prompts * max(math.ceil(DURATION_ORDER / n_prompts), 1)

    def block_order(self, cycle: int) -> tuple[Level, ...]:
        """The levels as one session of this cycle runs them: odd cycles ascending, even cycles
        the exact reverse, so over a cycle pair every level's block positions sum to L-1 and a
        drift within sessions cancels between the lowest and the highest level."""
        return self.levels if cycle % 2 == 1 else tuple(reversed(self.levels))

    def modes(self) -> dict[str, tuple[Level, ...]]:
        """The levels of each mode, ascending (the interaction compares the first and last)."""
        out: dict[str, tuple[Level, ...]] = {}
        for level in self.levels:
            out[level.mode] = (*out.get(level.mode, ()), level)
        return out

    def plan_entry(self) -> dict[str, Any]:
        return {
            "levels": [
                {"mode": lv.mode, "value": lv.value, "label": lv.label} for lv in self.levels
            ],
            "requests": self.requests,
            # only when timed: a counted run's plan is as before, so its resume still matches
            **({"duration_s": self.duration_s} if self.duration_s is not None else {}),
            "warmup_requests": self.warmup_requests,
            "slo": self.slo.as_dict() if self.slo else None,
            "cache_prompt": self.cache_prompt,
            "level_timeout_s": self.level_timeout_s,
            "lag_bound_ms": self.lag_bound_ms,
            "endpoint": self.endpoint,
            "max_in_flight": self.max_in_flight,
            # only for a search: a level ladder's plan is as before, so its resume still matches
            **({"capacity": self.capacity.plan_entry()} if self.capacity else {}),
            **({"conversation": self.conversation.plan_entry()} if self.conversation else {}),
        }


def treatments(raw: dict[str, Any], path: Path) -> tuple[Treatment, ...]:
    if "treatments" not in raw:
        raise LadderError(f"{path}: missing required field 'treatments'; add [[treatments]].")
    return parse_treatments(raw["treatments"], "treatments", path)


def _levels(fields: Mapping[str, Any], where: Path | str) -> tuple[Level, ...]:
    out: list[Level] = []
    for name, mode, kind in (("concurrency", "closed", int), ("rate", "open", float)):
        values = fields.get(name, [])
        ok = all(
            isinstance(v, kind | int) and not isinstance(v, bool) and math.isfinite(v) and v > 0
            for v in values
        )
        if not ok or (mode == "closed" and not all(isinstance(v, int) for v in values)):
            what = "whole numbers of requests in flight" if mode == "closed" else "requests/s"
            raise LadderError(
                f"{where}: field {name!r} is {_shown(values)}; list positive {what}, e.g. "
                f"{'[1, 2, 4]' if mode == 'closed' else '[0.5, 1.0, 2.0]'}."
            )
        low, high, span = LEVEL_BOUNDS[mode]
        far = next((v for v in values if not low <= v <= high), None)
        if far is not None:
            raise LadderError(f"{where}: field {name!r} holds {far:g}; list levels from {span}.")
        if list(values) != sorted(set(values)):
            raise LadderError(
                f"{where}: field {name!r} is {_shown(values)}; list its levels once each, lowest "
                f"first, e.g. {_shown(sorted(set(values)))}."
            )
        out += [Level(mode, float(v)) for v in values]
    if not out:
        raise LadderError(
            f"{where}: a load ladder needs levels; give concurrency = [1, 2, 4] (closed loop) "
            "and/or rate = [0.5, 1.0] (open loop, requests/s)."
        )
    if len(out) > MAX_LEVELS:
        raise LadderError(
            f"{where}: fields 'concurrency' and 'rate' give {len(out)} levels; list at most "
            f"{MAX_LEVELS} (each is a block of every session)."
        )
    return tuple(out)


def _shown(values: list[Any]) -> str:
    """A list as a one-line message can hold it: its first items when it is long."""
    return repr(values) if len(values) <= 8 else f"[{', '.join(map(repr, values[:8]))}, ...]"


def _slo(raw: Any, where: Path | str) -> Slos | None:
    if raw is None:
        return None
    check_table(raw, SLO, "slo.", where)
    for key, value in raw.items():
        if not 0 < value <= Ladder.MAX_TIMEOUT_S * 1000:  # NaN fails too; past a day is no target
            raise LadderError(
                f"{where}: field slo.{key} is {value!r}; use a positive target in ms, at most "
                f"{Ladder.MAX_TIMEOUT_S * 1000:g} (a day)."
            )
    if not raw:
        raise LadderError(f"{where}: table [slo] is empty; give ttft_ms, itl_ms or e2e_ms.")
    return Slos(**{k: float(v) for k, v in raw.items()})


def _per_block(fields: Mapping[str, Any], where: Path | str) -> tuple[int | None, float | None]:
    """(requests, duration_s) of every block, one of them None: the command line's if it gives
    one (--load-requests, --load-duration), else the ladder's (at most one of them; neither: 16 requests)."""
    cli = fields.get("command_line") or {}
    check_table(cli, COMMAND_LINE, "command_line.", where)
    if len(cli) == 2:
        raise LadderError(
            f"{where}: --load-requests and --load-duration are both given; give one of them."
        )
    given = cli or {k: fields[k] for k in ("requests", "duration_s") if k in fields}
    if len(given) == 2:
        raise LadderError(
            f"{where}: fields 'requests' and 'duration_s' are both given; keep one: requests = "
            "16 (per level block) or duration_s = 30 (seconds per level block)."
        )
    if not given:
        return DEFAULT_REQUESTS, None
    if "requests" in given:
        n = given["requests"]
        if not 1 <= n <= MAX_SCHEDULE:
            raise LadderError(
                f"{where}: field 'requests' is {n!r}; use 1 to {MAX_SCHEDULE:,} requests per "
                "level block."
            )
        return int(n), None
    d = given["duration_s"]
    if not 0 < d <= MAX_DURATION_S:
        raise LadderError(
            f"{where}: field 'duration_s' is {d!r}; use more than 0 and at most "
            f"{MAX_DURATION_S:g} seconds per level block."
        )
    return None, float(d)


def settings(ladder: Ladder, where: Path | str | None = None) -> LoadSettings:
    """The ladder's load fields, defaulted (validate has checked them); errors name `where`
    (validate's: the path and the command line's overrides), else the ladder's path."""
    f, where = ladder.kind_fields, ladder.path if where is None else where
    warm = f.get("warmup_requests")
    conv = conversation.parse(f.get("conversation"), where)
    requests, duration_s = conversation.block_size(conv, f, where) if conv else _per_block(f, where)
    replay = trace.parse(f.get("trace"), ladder.path, where)
    one = (Level(trace.MODE, replay.time_scale),) if replay else None  # a replay: one block
    levels = () if "capacity" in f else one or _levels(f, where)
    return LoadSettings(
        prompt_set=str(f.get("prompt_set", "canonical")),
        subset=str(f.get("subset", SUBSETS.both)),
        levels=levels,
        requests=requests,
        warmup_requests=None if warm is None else int(warm),
        slo=_slo(f.get("slo"), where),
        cache_prompt=bool(f.get("cache_prompt", conv is not None)),  # a conversation's: on
        level_timeout_s=float(f.get("level_timeout_s", DEFAULT_TIMEOUT_S)),
        lag_bound_ms=float(f.get("lag_bound_ms", DEFAULT_LAG_BOUND_MS)),
        endpoint=str(f.get("endpoint", DEFAULT_ENDPOINT)),
        max_in_flight=int(f.get("max_in_flight", DEFAULT_MAX_IN_FLIGHT)),
        allow_remote=bool(f.get("allow_remote", False)),
        duration_s=duration_s,
        capacity=capacity.parse(f.get("capacity"), where),
        trace=replay,
        conversation=conv,
    )


def _check_schedule(s: LoadSettings, seed: int, where: Path | str) -> None:
    """Every open-loop level's schedule within its bounds, known before it is drawn: at most
    MAX_SCHEDULE arrivals, the first within a timed block, the last expected before the level's
    timeout; a timed block also ends before that timeout."""
    if s.duration_s is not None and s.duration_s >= s.level_timeout_s:
        raise LadderError(
            f"{where}: field 'duration_s' is {s.duration_s:g} but 'level_timeout_s' is "
            f"{s.level_timeout_s:g}, which would cut every block short; raise level_timeout_s "
            "above duration_s plus the time a request takes."
        )
    for lv in (lv for lv in s.levels if lv.mode == "open"):
        if s.duration_s is None:
            assert s.requests is not None
            if s.requests / lv.value > s.level_timeout_s:
                raise LadderError(
                    f"{where}: level {lv.label} sends {s.requests} requests in "
                    f"{s.requests / lv.value:,.0f} s on average, past level_timeout_s = "
                    f"{s.level_timeout_s:g}; raise the rate, or lower requests."
                )
            continue
        expected = lv.value * s.duration_s
        if expected > MAX_SCHEDULE:
            raise LadderError(
                f"{where}: level {lv.label}: rate × duration_s = {expected:,.0f} arrivals; at "
                f"most {MAX_SCHEDULE:,} per level, so lower the rate or duration_s."
            )
        if first_arrival_ns(lv.value, seed) > round(s.duration_s * NS_PER_S):
            raise LadderError(
                f"{where}: level {lv.label} schedules no request within duration_s = "
                f"{s.duration_s:g} (seed {seed}); lengthen duration_s or raise the rate."
            )


def _check_capacity(ladder: Ladder, s: LoadSettings, where: Path | str) -> None:
    """A search needs SLOs to attain, counted blocks to share, and no level lists of its own."""
    f = ladder.kind_fields
    given = [k for k in ("concurrency", "rate") if k in f]
    if given:
        raise LadderError(
            f"{where}: a [capacity] ladder searches its own levels; remove {' and '.join(given)}"
            " (or remove [capacity] to run fixed levels)."
        )
    if s.slo is None:
        raise LadderError(
            f"{where}: [capacity] searches for the most load within the SLOs, and this ladder "
            "has none; add [slo] with ttft_ms, itl_ms or e2e_ms."
        )
    if s.requests is None:
        raise LadderError(
            f"{where}: a [capacity] probe is a count of requests (its attainment is a share of "
            "them); replace duration_s with requests = 32."
        )
    if ladder.stop is not None:
        raise LadderError(
            f"{where}: a [capacity] search cannot take a [stop] rule yet (its looks judge "
            "per-level gains, not capacities); remove [stop] and set cycles."
        )
    c = s.capacity
    assert c is not None
    if c.mode == "open" and s.requests / c.low > s.level_timeout_s:
        raise LadderError(
            f"{where}: a probe at capacity.low = {c.low:g} requests/s sends {s.requests} "
            f"requests in {s.requests / c.low:,.0f} s on average, past level_timeout_s = "
            f"{s.level_timeout_s:g}; raise capacity.low, or lower requests."
        )


def validate(ladder: Ladder, s: LoadSettings, where: Path | str) -> None:
    keys = ladder.treatment_keys
    if ladder.baseline not in keys:
        raise LadderError(
            f"{where}: field 'baseline' is {ladder.baseline!r}, which is not a treatment key "
            f"({', '.join(keys)}); name one of them."
        )
    checks = (
        (
            s.warmup_requests is None or 0 <= s.warmup_requests <= MAX_WARMUP,
            "warmup_requests",
            s.warmup_requests,
            f"use 0 to {MAX_WARMUP} (leave it out for one per lane)",
        ),
        (
            0 < s.level_timeout_s <= Ladder.MAX_TIMEOUT_S,
            "level_timeout_s",
            s.level_timeout_s,
            f"use a number of seconds above 0 and at most {Ladder.MAX_TIMEOUT_S:g} (a day)",
        ),
        (s.lag_bound_ms > 0, "lag_bound_ms", s.lag_bound_ms, "use a positive bound in ms"),
        (
            1 <= s.max_in_flight <= MAX_LANES,
            "max_in_flight",
            s.max_in_flight,
            f"use 1 to {MAX_LANES}",
        ),
        (
            s.endpoint in REQUEST_ENDPOINTS,
            "endpoint",
            s.endpoint,
            f"use one of {', '.join(REQUEST_ENDPOINTS)}",
        ),
        (
            s.subset in SUBSETS.choices,
            "subset",
            s.subset,
            f"use one of {', '.join(SUBSETS.choices)}",
        ),
    )
    for ok, name, value, fix in checks:
        if not ok:
            raise LadderError(f"{where}: field {name!r} is {value!r}; {fix}.")
    if s.conversation is not None:
        closed = [int(lv.value) for lv in s.levels]
        conversation.check(ladder, s.conversation, closed, s.level_timeout_s, where)
    if s.capacity is not None:
        _check_capacity(ladder, s, where)
    _check_schedule(s, ladder.seed, where)
    if s.trace is not None:  # its file read and checked whole: line and field of the first fault
        trace.check(ladder, s.trace, s.level_timeout_s, where)
    for text in (*ladder.prereg.primary_contrasts, *ladder.prereg.secondary_contrasts):
        ladder.contrast(text, where)
    far = [t.key for t in ladder.treatments if t.base_url and not is_loopback(t.base_url)]
    if far and not s.allow_remote:
        raise LadderError(
            f"{where}: treatments {', '.join(far)} are attached off loopback; a load test "
            "loads its server hard, so set allow_remote = true only for a server you may load."
        )


SPEC = KindSpec("load", FIELDS, treatments, validate, settings=settings)
