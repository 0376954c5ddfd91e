"""False passes and false fails of the non-inferiority gate (`--expect T:S:not-slower:M`) under
a `[stop]` rule, simulated through the package's own analysis at each look (tests/gate_sim.py).

    python bench/gate_coverage.py               # 1000 replications a row
    python bench/gate_coverage.py --reps 300    # a quicker look

Each replication is a candidate build against a noise-free baseline, one prompt subset of 8
prompts, t(3) cell noise and per-session offsets (tests/gate_sim.py `HOST`), looked at after
cycles 4, 6, … up to the design's maximum with Pocock-type spending; the gate `not-slower:3`
decides its cell at each look and the run stops once it is decided; an undecided gate fails at
the last look. Four rules on the same data: the shipped sequential gate, the fixed design, peeking
at the fixed 90 % interval (must fail), and passing on the point estimate (must fail).

A false pass is a passed gate where the truth is at or beyond the margin (−5 %, −3 %); a false
fail is a failed gate under A/A. Each rate has its 95 % Wilson interval; `cycles` is the mean
number of cycles run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.analysis.sequential import Design
from tests.gate_sim import MARGIN, SCENARIOS, simulate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--spending", choices=("pocock", "obrien-fleming"), default="pocock")
    args = parser.parse_args()
    if not 1 <= args.reps <= 100_000:
        parser.error("--reps must be 1-100000")
    if not 1000 <= args.boot <= 100_000:
        parser.error("--boot must be 1000-100000")
    t0 = time.monotonic()
    print(f"## not-slower:{MARGIN:g}, {args.spending}-type spending; {args.reps} replications, "
          f"{args.boot} resamples")  # fmt: skip
    print(
        f"{'scenario':26} {'rate':10} {'rule':14} {'rate':>6} {'95 % interval':>15} {'cycles':>6}"
    )
    for i, (name, scenario, what, top) in enumerate(SCENARIOS):
        design = Design.plan("decided", 4, top, args.spending, None)
        got = simulate(scenario, design, args.reps, args.boot, 4100 + 17 * i, MARGIN)
        for rule, o in got.items():
            k = o.passed.count if what == "false pass" else o.passed.reps - o.passed.count
            lo, hi = (o.passed.low, o.passed.high) if what == "false pass" else (
                1.0 - o.passed.high, 1.0 - o.passed.low)  # fmt: skip
            print(f"{name:26} {what:10} {rule:14} {k / o.passed.reps:6.3f} "
                  f"[{lo:.3f}, {hi:.3f}] {o.cycles:6.2f}", flush=True)  # fmt: skip
    print(f"({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
