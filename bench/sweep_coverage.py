"""Sweeps along a setting by simulation, through the package's own `kinds/decode/analysis/sweepstats.py`: where
the gain starts (fixed-sequence step-down), which settings may be best (MCB), and arms dropped at
looks, on known curves (tests/sweep_sim.py: a flat null, a knee, a best arm inside the range, a
reversal on one subset; per-prompt responses and cell noise t3, session offsets per arm-cycle).

    python bench/sweep_coverage.py --only fixed --reps 300        # the fixed table (~2 min)
    python bench/sweep_coverage.py --only sequential --reps 200   # the looks (~6 min)
    python bench/sweep_coverage.py --only sequential --reps 100 --margin 10   # and a margin stop
    python bench/sweep_coverage.py --only lfc --reps 400          # the least favourable null
    python bench/sweep_coverage.py --reps 30                      # a quick look at both

Fixed: every arm over `--cycles` cycles, analysed once at 95 %. Per curve and subset:
- false start: the step-down, either direction, declared an arm whose true effect is not in
  that direction (family-wise), against `unadjusted`: some arm's own 95 % interval did (no
  multiplicity care);
- at knee: the step-down's first effective arm is the true first one (power, not error);
- best in set: the smallest share, over the true best arms (each of a tie), of runs whose MCB
  best set holds it; naive wrong: the largest point estimate is not a true best; coverage:
  every arm's simultaneous MCB interval holds its truth.
Sequential: looks after every cycle pair (Pocock-type spending, `--looks`); at each, an arm
leaves when every subset's `arms_to_drop` at the look's spent level drops it; the run stops when
at most one arm is left beside the baseline, or at the last look; with `--margin`, a second table
adds the stop once every subset's best set is within that many % of the best
(`BestSet.within_margin`). Best dropped: a unique true best left; sessions: arm-cycle sessions
run against the full grid; the best set, coverage and the step-down at the stop, at the stop
look's level.
Least favourable (`--only lfc`): a flat null at 8-24 prompts with normal noise, where the
intervals are nearest their nominal levels.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.analysis.sequential import Design
from pytest_mtpsweep.kinds.decode.analysis.sweepstats import best_set, where_gain_starts
from tests.sweep_sim import CURVES, FLAT, Fixed, analyse_fixed, run_sequential, simulate


def share(got: list[Fixed], attr: str) -> float:
    return float(np.mean([getattr(g, attr) for g in got]))


def best_in(got: list[Fixed]) -> float:
    """The smallest share of runs whose best set holds a given true best (ties: each)."""
    return float(np.min(np.mean([g.best_in for g in got], axis=0)))


def fixed_table(reps: int, boot: int, cycles: int) -> Iterator[str]:
    yield f"## fixed: {cycles} cycles, {reps} replications, {boot} resamples, 8 prompts a subset"
    yield (
        f"{'curve':20} {'subset':10} {'false start':>11} {'unadjusted':>10} {'at knee':>7} "
        f"{'best in set':>11} {'set size':>8} {'naive wrong':>11} {'coverage':>8}"
    )
    for n, (name, curve) in enumerate(CURVES):
        rng = np.random.default_rng(4000 + n)
        rows: dict[str, list[Fixed]] = {s: [] for s in curve.effects}
        for r in range(reps):
            for subset, data in simulate(curve, cycles, rng).items():
                direction = curve.direction.get(subset, "faster")
                rows[subset].append(
                    analyse_fixed(data, curve.effects[subset], direction, boot, seed=r)
                )
        for subset, got in rows.items():
            mu = curve.effects[subset]
            direction = curve.direction.get(subset, "faster")
            true = [
                a
                for a, m in zip(curve.arms, mu, strict=True)
                if a != "none" and (m > 0 if direction == "faster" else m < 0)
            ]
            knee = "-"
            if true:
                order = (
                    list(curve.arms[1:])
                    if curve.start.get(subset, "last") == "first"
                    else list(reversed(curve.arms[1:]))
                )
                prefix = []
                for a in order:
                    if a not in true:
                        break
                    prefix.append(a)
                if prefix:
                    knee = f"{np.mean([g.first_effective == prefix[-1] for g in got]):.3f}"

            yield (
                f"{name:20} {subset:10} {share(got, 'false_start'):11.3f} "
                f"{share(got, 'unadjusted_false'):10.3f} {knee:>7} {best_in(got):11.3f} "
                f"{share(got, 'best_size'):8.2f} {share(got, 'naive_wrong'):11.3f} {share(got, 'covered'):8.3f}"
            )


def sequential_table(
    reps: int, boot: int, looks: tuple[int, int], margin: float | None
) -> Iterator[str]:
    design = Design.plan("decided", looks[0], looks[1], "pocock", None)
    rule = "" if margin is None else f", stop once the best set is within {margin:g} %"
    yield (
        f"## sequential: looks after cycles {', '.join(map(str, design.looks))} (Pocock-type)"
        f"{rule}, {reps} replications, {boot} resamples"
    )
    yield (
        f"{'curve':20} {'best dropped':>12} {'sessions':>8} {'of grid':>7} {'stop cycle':>10} "
        f"{'best in set':>11} {'coverage':>8} {'false start':>11}"
    )
    for n, (name, curve) in enumerate(CURVES):
        rng = np.random.default_rng(7000 + n)
        got = [run_sequential(curve, design, rng, boot, r, margin) for r in range(reps)]
        sessions = float(np.mean([g.sessions for g in got]))
        grid = got[0].grid
        yield (
            f"{name:20} {np.mean([g.best_dropped for g in got]):12.3f} {sessions:8.1f} "
            f"{sessions / grid:7.2f} {np.mean([g.stop_cycle for g in got]):10.2f} "
            f"{np.mean([g.truth_in_best for g in got]):11.3f} "
            f"{np.mean([g.covered for g in got]):8.3f} {np.mean([g.false_start for g in got]):11.3f}"
        )


LFC = (  # (prompts, cycles, noise shape, session sd): a flat null, the least favourable case
    (8, 4, "normal", 0.0),
    (16, 4, "normal", 0.0),
    (16, 8, "normal", 0.015),
    (24, 4, "normal", 0.0),
)


def lfc_table(reps: int, boot: int) -> Iterator[str]:
    """A flat null at more prompts and normal noise, where the intervals are nearest their
    nominal levels: each direction's false step-down calls (pre-registered from its own end)
    and the smallest share of runs whose best set holds a given arm (every arm is a true best)."""
    yield f"## least favourable: a flat null, prompt sd 2 %, {reps} replications, {boot} resamples"
    yield f"{'prompts':>7} {'cycles':>6} {'noise':>6} {'session':>7} {'faster':>6} {'slower':>6} {'min in set':>10}"
    for n, (prompts, cycles, shape, session) in enumerate(LFC):
        curve = replace(FLAT, prompts=prompts, shape=shape, prompt_sd=0.02, session_sd=session)
        rng = np.random.default_rng(9000 + n)
        faster = slower = 0
        held = np.zeros(len(curve.arms))
        for r in range(reps):
            data = simulate(curve, cycles, rng)["prose"]
            faster += bool(where_gain_starts(data, boot=boot, seed=r).effective)
            down = where_gain_starts(data, direction="slower", boot=boot, seed=r, start="first")
            slower += bool(down.effective)
            best = best_set(data, boot=boot, seed=r).best
            held += np.array([a in best for a in data.arms])
        yield (
            f"{prompts:7d} {cycles:6d} {shape:>6} {session:7.3f} {faster / reps:6.3f} "
            f"{slower / reps:6.3f} {float(held.min()) / reps:10.3f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=6, help="the fixed design's cycles")
    parser.add_argument("--looks", default="2,12", help="min_cycles,max_cycles (default 2,12)")
    parser.add_argument("--margin", type=float, help="add a table with the margin stop, %%")
    parser.add_argument("--only", choices=("fixed", "sequential", "lfc", "both"), default="both")
    args = parser.parse_args()
    if not 1 <= args.reps <= 100_000:
        parser.error("--reps must be 1-100000")
    low, high = (int(v) for v in args.looks.split(","))
    t0 = time.monotonic()
    if args.only in ("fixed", "both"):
        for line in fixed_table(args.reps, args.boot, args.cycles):
            print(line, flush=True)
        print()
    if args.only == "lfc":
        for line in lfc_table(args.reps, args.boot):
            print(line, flush=True)
        print()
    if args.only in ("sequential", "both"):
        for margin in (None,) if args.margin is None else (None, args.margin):
            for line in sequential_table(args.reps, args.boot, (low, high), margin):
                print(line, flush=True)
            print()
    print(f"({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
