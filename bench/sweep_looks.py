"""A sweep's error rates at every look, by simulation (tests/sweep_looks_sim.py): the shipped
sweep ladders' designs and the default, on known curves, with session offsets of 1.5, 3 and 5 %,
t3 noise, a noisy baseline and order drift, with the pooled session level and the naive spread
(pairs under 4 cycles resample prompts only) that fails.

    python bench/sweep_looks.py --reps 200                 # every design (~25 min on 2 cores)
    python bench/sweep_looks.py --reps 200 --session 0.03  # one session level
    python bench/sweep_looks.py --reps 30                  # a quick look

Columns: family-wise false "faster" and false "slower" at any look a run took (the statements
its report would print had it stopped there, each at that look's repeated level), with the
Wilson 95 % upper end; every true best in the best set at every look; a unique true best
dropped; sessions run against the full grid.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.sweep_looks_sim import CURVES, Plan, World, rates, wilson_upper

# (name, min_cycles, max_cycles, margin_pct): lowerarm-sweep and sweep-demo as shipped, the
# default first look (4) and a fixed design.
DESIGNS = (
    ("fixed 6 cycles", 6, 6, 0.0),
    ("looks 4, 6", 4, 6, 0.0),
    ("default: looks 4..8", 4, 8, 0.0),
    ("lowerarm-sweep: 2, 4, 6", 2, 6, 1.0),
    ("sweep-demo: 2, 4", 2, 4, 5.0),
)
MAX_REPS = 10_000


def table(reps: int, boot: int, sessions: tuple[float, ...], naive: bool) -> Iterator[str]:
    yield (
        f"{'design':26} {'spread':7} {'session':>7} {'curve':11} {'faster':>6} {'(up)':>5} "
        f"{'slower':>6} {'(up)':>5} {'best in':>7} {'dropped':>7} {'sessions':>13}"
    )
    for name, low, high, margin in DESIGNS:
        for pool in (True, False) if naive and low < 4 else (True,):
            plan = Plan.of(low, high, margin, pool)
            for sd in sessions:
                for n, (curve, mu) in enumerate(CURVES):
                    r = rates(World(mu, session_sd=sd), plan, reps, boot, 1000 + n)
                    yield (
                        f"{name:26} {'pooled' if pool else 'naive':7} {100 * sd:6.1f}% "
                        f"{curve:11} {r.false_faster_any:6.3f} "
                        f"{wilson_upper(r.false_faster_any, reps):5.3f} "
                        f"{r.false_slower_any:6.3f} {wilson_upper(r.false_slower_any, reps):5.3f} "
                        f"{r.best_in_every_look:7.3f} {r.best_dropped:7.3f} "
                        f"{r.sessions:6.1f} of {r.grid:3d}"
                    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--session", type=float, action="append", help="session sd (0.03 = 3 %%)")
    parser.add_argument("--no-naive", action="store_true", help="leave out the naive spread")
    args = parser.parse_args()
    if not 1 <= args.reps <= MAX_REPS:
        parser.error(f"--reps must be 1-{MAX_REPS}")
    sessions = tuple(args.session or (0.015, 0.03, 0.05))
    if any(not 0.0 <= s <= 0.5 for s in sessions):
        parser.error("--session must be 0-0.5 (a log-scale sd)")
    t0 = time.monotonic()
    print(f"## {args.reps} replications, {args.boot} resamples, 6 arms + baseline, 2 subsets")
    for line in table(args.reps, args.boot, sessions, not args.no_naive):
        print(line, flush=True)
    print(f"({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
