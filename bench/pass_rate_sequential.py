"""Pass-rate contrasts under a stop rule: coverage and false calls of the authoring analysis'
interval (Newcombe's hybrid score, `paired_difference`) at each look's repeated-interval level,
against naive peeking and the fixed design (tests/pass_rate_sequential_sim.py has the model).

    python bench/pass_rate_sequential.py               # 20000 experiments a scenario
    python bench/pass_rate_sequential.py --reps 2000   # a quicker look
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.pass_rate_sequential_sim import PASS_SCENARIOS, simulate


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=20_000)
    parser.add_argument("--spending", choices=("pocock", "obrien-fleming"), default="pocock")
    args = parser.parse_args()
    if not 1 <= args.reps <= 200_000:
        parser.error("--reps must be 1-200000")
    t0 = time.monotonic()
    print(f"{args.spending}-type spending, {args.reps} experiments a scenario")
    print(f"{'scenario':32} {'design':10} {'coverage':>8} {'false':>6} {'decided':>7} {'looks':>6}")
    for i, s in enumerate(PASS_SCENARIOS):
        for design, o in simulate(s, args.reps, 100 + i, args.spending).items():
            print(f"{s.name:32} {design:10} {o.coverage:8.3f} {o.false_calls:6.3f} "
                  f"{o.decided:7.3f} {o.looks:6.2f}")  # fmt: skip
    print(f"({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
