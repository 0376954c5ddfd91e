"""What a decode design can reach before it runs: the sentences `mtpsweep lint` warns with
where a ladder's prompts, cycles or margin cannot reach what it pre-registers."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ....kindapi.analysis import INTERVAL

# The spread of prompts' gains (sd, percent) a ladder's equivalence margin is checked against by
# lint: the low end of what bench/coverage.py simulates (prompt sd 0.02-0.10 on the log scale).
TYPICAL_SPREAD_PCT = 2.0


def prompts_for_equivalence(
    margin_pct: float, spread_pct: float = TYPICAL_SPREAD_PCT, level: float = 0.90
) -> int:
    """The fewest prompts per subset whose `level` interval (t, df n - 1) at a spread of
    `spread_pct` fits inside ±margin_pct around no effect; capped at 10,000."""
    from scipy.special import stdtrit

    p = 0.5 + level / 2.0
    n = 2
    while n < 10_000 and float(stdtrit(n - 1, p)) * spread_pct / math.sqrt(n) >= margin_pct:
        n += 1
    return n


def design_warnings(
    prompts: Mapping[str, int],
    cycles: int,
    margin_pct: float,
    width_pct: float | None = None,
    arms: int = 1,
) -> list[str]:
    """One sentence with its fix for each way a decode design cannot reach what it registers:
    a subset too small to decide, too few cycles for the session level, a margin (or a `width`
    stop rule's ±width_pct) too narrow for the prompts."""
    out = [
        f"subset {s} has {n} prompt(s), fewer than the {INTERVAL.min_prompts} a decision "
        f"needs, so its cells will be `insufficient`; add prompts to reach "
        f"{INTERVAL.min_prompts}."
        for s, n in prompts.items()
        if n < INTERVAL.min_prompts
    ]
    borrowed_df = (cycles - 1) * (arms - 1)
    if cycles < INTERVAL.session_cycles and cycles >= 2 and borrowed_df >= INTERVAL.min_borrowed_df:
        out.append(
            f"{cycles} cycle(s) are fewer than the {INTERVAL.session_cycles} whose own spread gives "
            f"a contrast its session level, so each borrows it from the run's {arms} treatments "
            f"beside the baseline ({borrowed_df} df), assuming their sessions vary "
            f"alike; set cycles = {INTERVAL.session_cycles} or more to see each arm's own."
        )
    elif cycles < INTERVAL.session_cycles:
        out.append(
            f"{cycles} cycle(s) are fewer than the {INTERVAL.session_cycles} the session level "
            "needs, so the intervals leave out the spread between sessions (they hold for the "
            f"sessions run); set cycles = {INTERVAL.session_cycles} or more."
        )
    decidable = [n for n in prompts.values() if n >= INTERVAL.min_prompts]
    need = prompts_for_equivalence(margin_pct)
    if decidable and min(decidable) < need:
        out.append(
            f"an `equivalent` decision at ±{margin_pct:g} % needs about {need} prompts per "
            f"subset if the prompts' gains spread by {TYPICAL_SPREAD_PCT:g} % (sd), and the "
            f"smallest subset has {min(decidable)}; add prompts or widen analysis.margin_pct."
        )
    if width_pct is not None and prompts:
        # The 95 % interval's floor, before a sequential look's wider level widens it further.
        wide = prompts_for_equivalence(width_pct, level=0.95)
        if min(prompts.values()) < wide:
            out.append(
                f"the stop rule's ±{width_pct:g} % needs about {wide} prompts per subset if the "
                f"prompts' gains spread by {TYPICAL_SPREAD_PCT:g} % (sd), and the smallest "
                f"subset has {min(prompts.values())}, so no number of cycles meets it; add "
                "prompts or widen stop.width_pct."
            )
    return out
