"""How well the load kind's capacity search and its analysis hold known capacities, by
simulation: the search's own functions on a simulated server, the analysis' own statistics.

    python bench/capacity_coverage.py              # 300 replications a scenario
    python bench/capacity_coverage.py --reps 100   # a quicker look

Each replication is two treatments over 2 cycles on 12 prompts, a capacity search from 1 to 64
in flight at tolerance 0.25 for 90 % attainment (tests/kinds/load/capacity_sim.py: a request's
chance to attain falls logistically in ln(level / capacity), with a prompt's own effect shared
by both treatments). Printed per scenario: how often the search's bracket and the 95 % bracket
hold the true capacity, the 95 % bracket's median width (high / low), how often the ratio's
interval holds the true ratio and how often it excludes 1, and probes per session.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.kinds.load.analysis import capacity_stats as cs
from pytest_mtpsweep.kinds.load.capacity import CapacitySettings
from tests.kinds.load import capacity_sim as sim

SEARCH = CapacitySettings(0.9, "closed", 1.0, 64.0, 0.25)
SCENARIOS = (  # (name, capacities, requests per probe)
    ("b has twice a's capacity, 24 requests", {"a": 5.0, "b": 10.0}, 24),
    ("b has twice a's capacity, 48 requests", {"a": 5.0, "b": 10.0}, 48),
    ("b has 1.4x a's capacity, 48 requests", {"a": 4.0, "b": 5.6}, 48),
    ("identical servers, 48 requests", {"a": 6.0, "b": 6.0}, 48),
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--boot", type=int, default=1000)
    args = ap.parse_args()
    if not 1 <= args.reps <= 100_000 or not 100 <= args.boot <= 100_000:
        ap.error("--reps must be 1..100000 and --boot 100..100000")
    rng = np.random.default_rng(20261203)
    for name, caps, requests in SCENARIOS:
        t0 = time.perf_counter()
        point = sure = covered = different = 0.0
        widths, probes = [], []
        for i in range(args.reps):
            req, truth, searched = sim.run(rng, SEARCH, caps, requests=requests)
            for c in cs.capacities(SEARCH, cs.table(req, sim.SLO)):
                t = truth[c.treatment]
                point += (c.lo is not None and c.hi is not None
                          and c.lo.level <= t <= c.hi.level) / len(caps)  # fmt: skip
                lo, hi = c.sure_lo or 0.0, c.sure_hi or math.inf
                sure += (lo <= t <= hi) / len(caps)
                widths.append(hi / lo if lo else math.inf)
            r = cs.ratios(SEARCH, req, sim.SLO, [("b", "a")], boot=args.boot, seed=i)[0]
            covered += r.low <= truth["b"] / truth["a"] <= r.high
            different += not r.low <= 1.0 <= r.high
            probes += [len(p) for sessions in searched.values() for p in sessions]
        n = args.reps
        print(f"{name:40s} search bracket {point / n:.3f}, 95 % bracket {sure / n:.3f} (median "
              f"width {np.median(widths):.2f}x), ratio covered {covered / n:.3f}, excludes 1 "
              f"{different / n:.3f}, probes/session {np.mean(probes):.1f}   ({n} reps, "
              f"{time.perf_counter() - t0:.0f} s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
