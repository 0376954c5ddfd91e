"""How often the load kind's crossover interval holds a known crossing, by simulation.

    python bench/crossover_coverage.py              # 300 replications a scenario
    python bench/crossover_coverage.py --reps 100   # a quicker look

Each replication is one treatment against a baseline at concurrency 1, 2, 4, 8 with a true log
gain of a + b·log2(c) per prompt (plus a prompt's own effect and per-request noise;
tests/kinds/load/crossover_sim.py), through `kinds.load.analysis.crossover.crossover`: coverage is the
share of intervals holding the true crossing; for a gain that never crosses, the share said
not to cross; for identical servers, the share given a located crossing (both ends inside the
levels run), which should be rare.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.kinds.load.analysis.crossover import crossover
from tests.kinds.load import crossover_sim as sim

# (name, intercept, slope, prompts, cycles, true crossing or None)
SCENARIOS = (
    ("crosses at 4, 12 prompts, 2 cycles", 0.3, -0.15, 12, 2, 4.0),
    ("crosses at 4, 8 prompts, 2 cycles", 0.3, -0.15, 8, 2, 4.0),
    ("crosses at 2.83, 12 prompts, 4 cycles", 0.15, -0.1, 12, 4, 2.0**1.5),
    ("shallow, crosses at 4, 12 prompts", 0.1, -0.05, 12, 2, 4.0),
    ("steady +35 %, never crosses", 0.3, 0.0, 12, 2, None),
    ("identical servers", 0.0, 0.0, 12, 2, None),
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--boot", type=int, default=400)
    args = ap.parse_args()
    if not 1 <= args.reps <= 100_000 or not 50 <= args.boot <= 100_000:
        ap.error("--reps must be 1..100000 and --boot 50..100000")
    rng = np.random.default_rng(20261203)
    for name, a, b, prompts, cycles, truth in SCENARIOS:
        t0 = time.perf_counter()
        held = crossed = located = 0
        for i in range(args.reps):
            req, lev = sim.frames(rng, intercept=a, slope=b, prompts=prompts, cycles=cycles)
            c = crossover(req, lev, "t", "b", "closed", sim.labels(), sim.LEVELS, "e2e",
                          boot=args.boot, seed=i)  # fmt: skip
            assert c is not None
            crossed += c.crosses
            located += c.crosses and math.isfinite(c.low) and math.isfinite(c.high)
            held += truth is not None and c.low <= truth <= c.high
        n = args.reps
        what = (f"coverage {held / n:.3f}" if truth is not None
                else f"said not to cross {1 - crossed / n:.3f}, located {located / n:.3f}")  # fmt: skip
        print(f"{name:42s} {what}   ({n} reps, {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
