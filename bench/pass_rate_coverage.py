"""Coverage of the authoring contrast's 95 % intervals, measured by simulation through the
package's own functions.

    python bench/pass_rate_coverage.py                 # the full tables: 2000 experiments a cell
    python bench/pass_rate_coverage.py --reps 500      # a quicker look

Pass rates: `paired_binary.paired_difference` (Newcombe's paired score interval) at 8, 16, 32
and 64 tasks, with true baseline rates 0.1 … 0.9 and the treated cohort's rate equal to the
baseline's (Δ 0) or 0.1 or 0.3 away from it (up, or down where up would pass 0.9). It is run
with 1 and 3 repeats, under a strong and a moderate within-task correlation between the
cohorts (tests/kinds/authoring/analysis/pass_rates.py; `--correlations extreme` runs a stress case
instead). The interval it replaced (the t/bootstrap-t interval, `contrast.mean_interval`) is
shown beside it on a few cells. Token ratios use `contrast.mean_interval` on per-task log
ratios, at the same task counts.
The run exits 1 if any pass-rate cell covers less than 0.93.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.analysis.stats import Resamples
from pytest_mtpsweep.kinds.authoring.analysis.contrast import LEVEL, mean_interval
from pytest_mtpsweep.kinds.authoring.analysis.paired_binary import paired_difference
from tests.kinds.authoring.analysis.pass_rates import CORRELATIONS, log_token_ratios, pass_rates

TASKS = (8, 16, 32, 64)
RATES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
DELTAS = (0.0, 0.1, 0.3)
REPEATS = (1, 3)
FLOOR = 0.93


def treated_rate(rate: float, delta: float) -> float:
    """The treated cohort's true rate: `delta` above the baseline, or below past 0.9."""
    up = round(rate + delta, 10)
    return up if up <= 0.9 else round(rate - delta, 10)


def cell(seed: int, reps: int, tasks: int, repeats: int, rate: float, delta: float,
         correlation: str) -> tuple[float, float]:  # fmt: skip
    """(coverage, mean width) of the paired pass-rate interval over `reps` experiments."""
    rng = np.random.default_rng(seed)
    other = treated_rate(rate, delta)
    draw = pass_rates(rng, reps, tasks, repeats, rate, other, correlation)
    _, low, high = paired_difference(draw.treated, draw.baseline, LEVEL, draw.cells, draw.cells)
    truth = other - rate
    hit = (low <= truth + 1e-12) & (truth - 1e-12 <= high)
    return float(hit.mean()), float((high - low).mean())


def pass_rate_tables(reps: int, correlations: list[str]) -> Iterator[str | tuple[str, float]]:
    """The coverage tables, one row per (tasks, Δ); yields ("min", value) per cell as well."""
    head = " ".join(f"{r:>5}" for r in RATES)
    for correlation in correlations:
        for repeats in REPEATS:
            yield f"## Pass rates, {correlation} correlation, {repeats} repeat(s): coverage"
            yield f"{'tasks':>5} {'Δ':>4}  {head}   mean width"
            for tasks in TASKS:
                for d, delta in enumerate(DELTAS):
                    seed = 1_000_000 * d + 10_000 * tasks + 100 * repeats + len(correlation)
                    row = [cell(seed + i, reps, tasks, repeats, r, delta, correlation)
                           for i, r in enumerate(RATES)]  # fmt: skip
                    for cov, _ in row:
                        yield ("min", cov)
                    text = " ".join(f"{c:5.3f}" for c, _ in row)
                    width = np.mean([w for _, w in row])
                    yield f"{tasks:>5} {delta:>4.1f}  {text}   {width:.3f}"
            yield ""


def old_interval_table(reps: int, boot: int) -> Iterator[str]:
    """The replaced interval (mean ± q·se over per-task differences) on a few cells."""
    yield "## The replaced t/bootstrap-t interval on pass rates (strong correlation, 1 repeat)"
    yield f"{'tasks':>5} {'rate a':>6} {'rate b':>6}  {'old':>5}  {'new':>5}  old zero-width"
    for tasks in (8, 16):
        for rate, other in ((0.1, 0.1), (0.1, 0.2), (0.5, 0.6), (0.9, 0.8)):
            rng = np.random.default_rng(77 + tasks + int(100 * rate) + int(10 * other))
            draw = pass_rates(rng, reps, tasks, 1, rate, other)
            diffs = draw.treated - draw.baseline
            idx = Resamples.indices(tasks, boot, 5, "old")
            old = [mean_interval(pd.Series(row), "difference", idx) for row in diffs]
            truth = other - rate
            hit = np.mean([lo - 1e-12 <= truth <= hi + 1e-12 for _, lo, hi, _ in old])
            zero = np.mean([hi - lo <= 0 for _, lo, hi, _ in old])
            _, low, high = paired_difference(draw.treated, draw.baseline, LEVEL)
            new = np.mean((low <= truth + 1e-12) & (truth - 1e-12 <= high))
            yield f"{tasks:>5} {rate:>6.1f} {other:>6.1f}  {hit:5.3f}  {new:5.3f}  {zero:.3f}"


def token_table(reps: int, boot: int) -> Iterator[str | tuple[str, float]]:
    """Coverage of the token-ratio interval (true ratio 0.8)."""
    theta = float(np.log(0.8))
    yield "## Token ratios (t/bootstrap-t on per-task log ratios, true ratio 0.8): coverage"
    yield f"{'tasks':>5} {'repeats':>7}  {'normal':>6}  {'skewed':>6}"
    for tasks in TASKS:
        for repeats in REPEATS:
            out = []
            for shape in ("normal", "skewed"):
                rng = np.random.default_rng(3000 + tasks + repeats + len(shape))
                logs = log_token_ratios(rng, reps, tasks, repeats, theta, shape)
                idx = Resamples.indices(tasks, boot, 11, f"tokens:{tasks}")
                rows = [mean_interval(pd.Series(row), "ratio", idx) for row in logs]
                cov = float(np.mean([lo <= 0.8 <= hi for _, lo, hi, _ in rows]))
                out.append(cov)
                yield ("token", cov)
            yield f"{tasks:>5} {repeats:>7}  {out[0]:6.3f}  {out[1]:6.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000, help="experiments a pass-rate cell")
    parser.add_argument("--token-reps", type=int, default=2000, help="experiments a token cell")
    parser.add_argument("--boot", type=int, default=1000, help="resamples (t/bootstrap-t)")
    parser.add_argument("--correlations", nargs="+", choices=list(CORRELATIONS),
                        default=["strong", "moderate"], help="within-task correlations")  # fmt: skip
    args = parser.parse_args()
    start = time.perf_counter()
    lowest = 1.0
    for line in pass_rate_tables(args.reps, args.correlations):
        if isinstance(line, tuple):
            lowest = min(lowest, line[1])
        else:
            print(line, flush=True)
    print(f"pass-rate coverage, lowest cell: {lowest:.3f} (floor {FLOOR})\n", flush=True)
    for text in old_interval_table(min(args.token_reps, args.reps), args.boot):
        print(text, flush=True)
    print()
    tokens = []
    for item in token_table(args.token_reps, args.boot):
        if isinstance(item, tuple):
            tokens.append(item[1])
        else:
            print(item, flush=True)
    print(f"token-ratio coverage, lowest cell: {min(tokens):.3f}")
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0 if lowest >= FLOOR else 1


if __name__ == "__main__":
    raise SystemExit(main())
