"""The load kind's section of preregistration.md: its endpoints, contrasts, the block order and
why, the shared schedule, the interaction, and the multiplicity statement."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import conversation
from ..ladder import LEVEL_ENDPOINTS, REQUEST_ENDPOINTS

if TYPE_CHECKING:
    from ....kindapi.ladder import Ladder, Preregistration
    from ..ladder import LoadSettings


def contrasts(lad: Ladder) -> list[tuple[str, str]]:
    """(treatment, baseline) pairs: the registered ones, else every treatment vs the baseline."""
    given = [*lad.prereg.primary_contrasts, *lad.prereg.secondary_contrasts]
    if given:
        return [lad.contrast(t) for t in given]
    return [(t, lad.baseline) for t in lad.treatment_keys if t != lad.baseline]


def multiplicity(lad: Ladder, s: LoadSettings) -> str:
    n = len(contrasts(lad))
    levels = len(s.levels)
    modes = sum(len(v) >= 2 for v in s.modes().values())
    ends = len(REQUEST_ENDPOINTS) + len(LEVEL_ENDPOINTS) - (s.slo is None)
    total = n * ends * (levels + modes)
    return (
        f"{n} contrast(s) x {ends} endpoints x ({levels} levels + {modes} interaction(s)) = "
        f"{total} intervals, no correction for multiplicity; the headline is the "
        f"{s.endpoint} gain and its interaction, the rest describe."
    )


def lines(lad: Ladder, s: LoadSettings, n_prompts: int, reg: Preregistration) -> list[str]:
    labels = ", ".join(lv.label for lv in s.levels)
    warm = (
        f"{s.warmup_requests} warm-up request(s)"
        if s.warmup_requests is not None
        else "one warm-up request per lane (closed loop) or one (open loop)"
    )
    slo = ", ".join(f"{k} <= {v:g}" for k, v in s.slo.as_dict().items()) if s.slo else "none"
    pairs = "; ".join(f"{t} vs {b}" for t, b in contrasts(lad)) or "none (one treatment)"
    size = (
        f"{s.requests} requests each"
        if s.duration_s is None
        else f"duration_s = {s.duration_s:g} s each (closed loop: each lane takes the next slot "
        "while time remains; open loop: the seeded arrivals within it; requests sent by then "
        "finish; throughput over each block's first send to its last completion)"
    )
    return [
        f"- Levels: {labels}; {size}, in every session; {warm} before each block, recorded "
        f"apart; max_tokens {lad.max_tokens}.",
        "- Block order: odd cycles run the levels lowest first, even cycles highest first, and "
        "every treatment of a cycle the same order. Why: a level's contrast then pairs blocks "
        "at the same place in their sessions, and over a cycle pair every level's places sum "
        "to L-1, so a drift within sessions (a warming cache, a drafter that learns, heat) "
        "cancels between the lowest and highest level instead of posing as an interaction.",
        f"- Schedule: request i of every level sends the i-th prompt of one order seeded by "
        f"{lad.seed} (whole permutations of the {n_prompts} prompts; plan.json "
        "`load.prompt_order`), open-loop arrivals one seeded Poisson draw per rate, the same "
        "for every treatment and cycle: requests pair by slot."
        + (
            ""
            if s.duration_s is None
            else f" Timed blocks cycle an order of {s.order_length(n_prompts)} slots; a "
            "closed-loop block reaches as many slots as its server serves in the time, and the "
            "slots one treatment completed and the other did not are unpaired, counted and said "
            "in the report."
        ),
        "- Latency counts from each request's intended send time (closed loop: when its lane "
        "came free; open loop: the schedule's), so a server that falls behind shows it.",
        f"- Endpoints per request (paired by slot within cycle and level, clustered by prompt): "
        f"{', '.join(REQUEST_ENDPOINTS)} (itl: the request's mean); per block (paired by "
        f"cycle): {', '.join(LEVEL_ENDPOINTS[:2])}"
        + (", goodput_req_s" if s.slo else "")
        + ", j_per_token where NVML reads the GPUs' energy (less is better)"
        + f". SLOs for goodput: {slo}.",
        "- Gain: positive means the treatment is better (baseline/treatment for latencies, "
        "treatment/baseline for throughput), a geometric mean; 95 % intervals as the decode "
        "analysis gives them (Student's t or the bootstrap-t quantile, the larger, capped at "
        "twice t, and the session level with 4 or more cycles); per-block endpoints with cycles "
        "as the unit.",
        "- Interaction: the gain at the highest level of a mode over the gain at its lowest "
        "(the ratio of gain factors), per prompt and cycle, with its interval.",
        f"- Contrasts: {pairs}. Headline: the {s.endpoint} gain at each level and its interaction.",
        f"- Client lag: a level whose client event-loop lag p99 exceeds {s.lag_bound_ms:g} ms "
        "is flagged in its record and the report.",
        f"- Multiplicity: {reg.multiplicity}",
        *(
            [conversation.prereg_line(s.conversation, lad.seed, s.cache_prompt)]
            if s.conversation
            else []
        ),
    ]
