"""Coverage and false calls of the published interval under a `[stop]` rule, by simulation
through the package's own `compute_contrasts` at each look's levels (analysis/sequential.py).

    python bench/sequential_coverage.py               # the tables: 600 replications a cell
    python bench/sequential_coverage.py --reps 200    # a quicker look
    python bench/sequential_coverage.py --only sessions --spending pocock --reps 300

Each replication is one treatment against a noise-free baseline (tests/strategies.py
`replication_records`, the model bench/coverage.py uses: per-prompt log ratio = effect +
prompt_sd·a_p + b_c + e_pc) over the design's maximum cycles; at every look the records of the
cycles so far are analysed, and the replication stops at the first look where its rule is met
(every subset cell decided). Three designs on the same data:

- sequential: the looks at the design's nominal levels (repeated confidence intervals);
- naive: the same looks and rule at the fixed 95 % / 90 % levels (peeking) — it must fail;
- fixed: the maximum cycles, analysed once.

A second table (`--only sessions`) takes issue 43's held-out data (t(3) cell noise of 2 %,
session offsets of 5 % sd) under the sequential design twice: first look at 2 cycles
(`stop.allow_early_looks`), which must fail (false calls > 5 %), and at 4 (the default), which
must not.

Coverage is the share of (replication, subset) cells whose 95 % interval at the stop holds the
true change; a false call is `faster` or `slower` at the stop where the true change has the
other sign or is 0; cycles is the mean number of cycles run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.analysis.sequential import Design
from tests.sequential_sim import HOST_SCENARIOS, SCENARIOS, SESSION_SCENARIOS, simulate


def table(reps: int, boot: int, spending: str, looks: tuple[int, int]) -> Iterator[str]:
    design = Design.plan("decided", looks[0], looks[1], spending, None)
    yield (
        f"## {spending}-type spending, looks after cycles {', '.join(map(str, design.looks))}; "
        f"{reps} replications, {boot} resamples"
    )
    yield (
        "nominal 95 % levels per look: " + ", ".join(f"{100 * c:.2f}" for c in design.confidence)
    )
    yield f"{'scenario':24} {'design':10} {'coverage':>8} {'false':>6} {'decided':>7} {'cycles':>6}"
    for i, (name, scenario, margin) in enumerate((*SCENARIOS, *HOST_SCENARIOS)):
        got = simulate(scenario, design, reps, boot, 9100 + 17 * i, margin_pct=margin)
        for what, o in got.items():
            yield (
                f"{name:24} {what:10} {o.coverage:8.3f} {o.false_calls:6.3f} {o.decided:7.3f} "
                f"{o.cycles:6.2f}"
            )


def session_table(reps: int, boot: int, spending: str, high: int) -> Iterator[str]:
    """Large session offsets: the first look at 2 cycles (stop.allow_early_looks) must fail
    (false calls > 5 %), the default first look at 4 must pass."""
    yield f"## large session offsets, {spending}-type; {reps} replications, {boot} resamples"
    yield f"{'scenario':24} {'first look':10} {'coverage':>8} {'false':>6} {'decided':>7} {'cycles':>6}"
    for i, (name, scenario, margin) in enumerate(SESSION_SCENARIOS):
        for low, label in ((2, "2 (opt-in)"), (4, "4 (default)")):
            design = Design.plan("decided", low, high, spending, None)
            o = simulate(scenario, design, reps, boot, 9700 + 17 * i, margin_pct=margin)[
                "sequential"
            ]
            yield (
                f"{name:24} {label:10} {o.coverage:8.3f} {o.false_calls:6.3f} {o.decided:7.3f} "
                f"{o.cycles:6.2f}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=600)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--spending", choices=("pocock", "obrien-fleming", "both"), default="both")
    parser.add_argument("--looks", default="2,12", help="min_cycles,max_cycles (default 2,12)")
    parser.add_argument("--only", choices=("designs", "sessions"), default=None)
    args = parser.parse_args()
    if not 1 <= args.reps <= 100_000:
        parser.error("--reps must be 1-100000")
    low, high = (int(v) for v in args.looks.split(","))
    t0 = time.monotonic()
    for spending in ("pocock", "obrien-fleming") if args.spending == "both" else (args.spending,):
        if args.only in (None, "designs"):
            for line in table(args.reps, args.boot, spending, (low, high)):
                print(line, flush=True)
            print()
        if args.only in (None, "sessions"):
            for line in session_table(args.reps, args.boot, spending, high):
                print(line, flush=True)
            print()
    print(f"({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
