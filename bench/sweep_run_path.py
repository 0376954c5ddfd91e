"""The shipped sweep ladders' error rates by simulation through the run's own path
(tests/sweep_run_sim.py: the ladder file, its plan in run order, the run's SweepLooks asking the
decode kind's look on decode-shaped records, dropped arms' sessions skipped, and the report the
analysis would publish at every look, at that look's repeated level).

    python bench/sweep_run_path.py --reps 60                      # both ladders (slow: ~1 s a look)
    python bench/sweep_run_path.py --ladder sweep-demo --reps 100

Columns as bench/sweep_looks.py's: false "faster" / "slower" at any look taken (with the Wilson
95 % upper end), every true best in the best set at every look, a unique true best dropped,
sessions against the full grid.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.sweep_looks_sim import wilson_upper
from tests.sweep_run_sim import Truth, path_rates

# Per ladder, curves over its values (percent, low to high), on prose and on structured.
CURVES = {
    "lowerarm-sweep": (
        ("flat null", (0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0)),
        ("knee", (0, 0, 0, 0, 0, 0), (0, 0, 0, 8, 15, 20)),
        ("inverted U", (-5, -3, 0, 0, 0, 0), (5, 12, 18, 12, 5, 0)),
    ),
    "sweep-demo": (
        ("flat null", (0, 0, 0), (0, 0, 0)),
        ("knee", (0, 0, 0), (0, 10, 20)),
        ("reversal", (-10, -5, 0), (0, 10, 20)),
    ),
}
MAX_REPS = 5_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--session", type=float, default=0.03, help="session sd (0.03 = 3 %%)")
    parser.add_argument("--ladder", choices=sorted(CURVES), action="append")
    args = parser.parse_args()
    if not 1 <= args.reps <= MAX_REPS:
        parser.error(f"--reps must be 1-{MAX_REPS}")
    if not 0.0 <= args.session <= 0.5:
        parser.error("--session must be 0-0.5 (a log-scale sd)")
    t0 = time.monotonic()
    print(f"## {args.reps} runs a row, {args.boot} resamples, session sd {100 * args.session:g} %")
    print(f"{'ladder':15} {'curve':11} {'faster':>6} {'(up)':>5} {'slower':>6} {'(up)':>5} "
          f"{'best in':>7} {'dropped':>7} {'sessions':>13}")  # fmt: skip
    for name in args.ladder or sorted(CURVES):
        for curve, prose, structured in CURVES[name]:
            truth = Truth({"prose": prose, "structured": structured}, session_sd=args.session)
            r = path_rates(name, truth, args.reps, args.boot, 7000)
            print(
                f"{name:15} {curve:11} {r.false_faster:6.3f} "
                f"{wilson_upper(r.false_faster, r.reps):5.3f} {r.false_slower:6.3f} "
                f"{wilson_upper(r.false_slower, r.reps):5.3f} {r.best_in:7.3f} "
                f"{r.best_dropped:7.3f} {r.sessions:6.1f} of {r.grid:3d}",
                flush=True,
            )
    print(f"({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
