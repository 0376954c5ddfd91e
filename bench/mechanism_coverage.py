"""How often the mechanism's intervals hold a planted truth, by simulation.

    python bench/mechanism_coverage.py              # 200 replications a scenario
    python bench/mechanism_coverage.py --reps 50    # a quicker look

Each replication is three drafting arms (n_max 2, 3, 4) of one drafter and a baseline, their
acceptance drawn from a planted per-position curve and their steps timed with a planted cost
(t3 noise, session offsets, a noisy baseline; tests/mechanism_sim.py), through
`kinds/decode/analysis/drafting.py`: coverage is the share of 95 % intervals holding the planted E[L] and
the planted speedup E[L] / (fixed + per_draft * k). The naive variant (each request's tokens /
steps averaged, requests taken as independent) is printed beside it, and fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.mechanism_sim import Scenario, coverage

SCENARIOS = (
    ("10 prompts, 3 cycles", Scenario()),
    ("6 prompts, 2 cycles", Scenario(prompts=6, cycles=2)),
    ("10 prompts, 4 cycles, session sd 0.1", Scenario(cycles=4, session_sd=0.1)),
    ("24 prompts, 4 cycles", Scenario(prompts=24, cycles=4)),
    ("low acceptance, 10 prompts, 3 cycles", Scenario(curve=(0.4, 0.2, 0.1, 0.05))),
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--boot", type=int, default=400)
    args = ap.parse_args()
    if not 1 <= args.reps <= 100_000 or not 50 <= args.boot <= 100_000:
        ap.error("--reps must be 1..100000 and --boot 50..100000")
    for name, sc in SCENARIOS:
        t0 = time.perf_counter()
        got = coverage(sc, args.reps, args.boot)
        print(
            f"{name:40s} E[L] {got['mean_len']:.3f}  predicted speedup "
            f"{got['predicted']:.3f}  naive E[L] {got['naive_tokens_per_step']:.3f}  "
            f"({time.perf_counter() - t0:.0f} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
