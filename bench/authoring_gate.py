"""False passes and false fails of the authoring gate (`--expect COHORT:SUBJECT:not-slower:M`),
simulated through the gate's own interval and decision (tests/authoring_gate_sim.py).

    python bench/authoring_gate.py                # 20000 experiments a row
    python bench/authoring_gate.py --reps 2000    # a quicker look

Each experiment is a cohort against the baseline cohort on the same tasks, cells Bernoulli
draws with a within-task correlation between the cohorts (strong and moderate,
tests/kinds/authoring/analysis/pass_rates.py), the margin M in percentage points of the pass
rate. A false pass is a passed gate where the cohort is truly M or 2M pp worse; a false fail is a
failed gate (shown inferior, or undecided at the end: the authoring kind has no `[stop]` rule)
where the cohort is truly no worse. `point` is the rule that passes when the estimate alone is
above −M, beside it to show what the interval buys. Each rate has its 95 % Wilson interval.
The run exits 1 if a false pass at 2M exceeds 5 %.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.analysis.calibration import Rate
from tests.authoring_gate_sim import SCENARIOS, GateScenario, simulate

CORRELATIONS = ("strong", "moderate")
CEILING = 0.05  # a false pass at 2M above this fails the run


def _row(s: GateScenario, corr: str, reps: int, seed: int) -> tuple[str, Rate]:
    got = simulate(s, reps, seed, corr)
    rate = got.passed if s.what == "false pass" else got.failed
    line = (f"{s.name:30} {corr:9} {s.what:10} {rate.rate:6.4f} "
            f"[{rate.low:.4f}, {rate.high:.4f}]  inferior {got.inferior.rate:6.4f}  "
            f"undecided {got.undecided.rate:6.4f}  point {got.point.rate:6.4f}")  # fmt: skip
    return line, rate


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=20_000)
    args = parser.parse_args()
    if not 1 <= args.reps <= 200_000:
        parser.error("--reps must be 1-200000")
    t0 = time.monotonic()
    print(f"## authoring not-slower gate, 90 % Newcombe interval; {args.reps} experiments a row")
    print(f"{'scenario':30} {'within':9} {'counts':10} {'rate':>6} {'95 % interval':17}")
    worst = 0.0
    for i, s in enumerate(SCENARIOS):
        for j, corr in enumerate(CORRELATIONS):
            line, rate = _row(s, corr, args.reps, 5200 + 31 * i + j)
            print(line, flush=True)
            if s.what == "false pass" and s.drop_pp >= 2 * s.margin_pp:
                worst = max(worst, rate.rate)
    print(f"({time.monotonic() - t0:.0f} s)")
    return 1 if worst > CEILING else 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
