"""The history's drift test (analysis/drift.py): false alarms under no change and detections
under a slow drift, beside the naive rule "three losses in a row" (tests/history_drift_sim.py
has the model: per-gate SEs of 1-3 %, t(3) errors, honest or √3-too-small SEs).

    python bench/history_drift.py               # 20000 histories a scenario, 20 and 50 gates
    python bench/history_drift.py --reps 2000   # a quicker look
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.history_drift_sim import SCENARIOS, simulate


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=20_000)
    parser.add_argument("--gates", type=int, nargs="+", default=[20, 50])
    args = parser.parse_args()
    if not 1 <= args.reps <= 200_000:
        parser.error("--reps must be 1-200000")
    if not all(2 <= g <= 1000 for g in args.gates):
        parser.error("--gates must each be 2-1000")
    t0 = time.monotonic()
    print(f"{args.reps} histories a scenario; rate [Wilson 95 % interval] of histories flagged")
    print(f"{'scenario':38} {'gates':>5} {'CUSUM (ours)':>21} {'3 losses in a row':>21} "
          f"{'gate alone':>10} {'1st flag':>8}")  # fmt: skip
    for gates in args.gates:
        for i, s in enumerate(SCENARIOS):
            o = simulate(s, args.reps, gates, 1000 * gates + i)
            print(f"{s.name:38} {gates:5d} {o.cusum!s:>21} {o.naive!s:>21} "
                  f"{o.gate_losses:10.3f} {o.first_flag:8.1f}")  # fmt: skip
    print("gate alone: share of single gates whose own 95 % interval lies below 0")
    print(f"({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
