"""How well `mtpsweep plan` predicts: a 2-cycle pilot's predicted half-width of a 6-cycle run
against the 6-cycle run's published half-width, by simulation through the real analysis.

    python bench/plan_accuracy.py               # 300 replications a scenario
    python bench/plan_accuracy.py --reps 100    # a quicker look
    python bench/plan_accuracy.py --pilot 4 --full 12   # a longer pilot, a longer run

Each replication is one treatment against a noise-free baseline over 6 cycles
(tests/strategies.py `replication_records`: per-prompt log ratio = effect + prompt_sd·a_p + b_c
+ e_pc, the model bench/coverage.py and bench/sequential_coverage.py use). Its first 2 cycles
are the pilot: analysed by `compute_contrasts`, planned by `analysis.planning` at 6 cycles; all
6 cycles are then analysed and their published 95 % half-width is the truth. The factor is
predicted / actual: the median, the share within 2x either way, and the share of actual
half-widths inside the plan's 80 % range (the chi-square draws of the components, each then
run through the chance of a 6-cycle run's own estimates).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.analysis.planning import (
    RANGE,
    component_draws,
    components,
    half_width,
    pilot_ratio,
    point_variances,
    realised_ms,
    width_from_ms,
)
from pytest_mtpsweep.kinds.decode.analysis.contrasts import compute_contrasts
from pytest_mtpsweep.kinds.decode.analysis.plan import cell_matrix
from pytest_mtpsweep.kinds.decode.analysis.runvalues import AnalysisSettings
from tests.strategies import Scenario, replication_records

BATCH = 150
ONE = ("prose",)
SCENARIOS: tuple[tuple[str, Scenario], ...] = (
    ("cell noise, 8 prompts", Scenario(prompts=8, prompt_sd=0.02, noise_sd=0.05, subsets=ONE)),
    ("prompts + session, 8", Scenario(prompts=8, prompt_sd=0.05, noise_sd=0.03, session_sd=0.02, subsets=ONE)),
    ("skewed prompts, 8", Scenario(prompts=8, prompt_sd=0.05, noise_sd=0.03, shape="skewed", subsets=ONE)),
    ("+10 %, cell noise, 16", Scenario(prompts=16, prompt_sd=0.02, noise_sd=0.05, effect=math.log(1.1), subsets=ONE)),
    ("session-heavy, 8", Scenario(prompts=8, prompt_sd=0.01, noise_sd=0.02, session_sd=0.04, subsets=ONE)),
)  # fmt: skip


def _published(
    records: pd.DataFrame, treatments: list[str], settings: AnalysisSettings
) -> tuple[pd.DataFrame, pd.DataFrame]:
    tables = compute_contrasts(records, treatments=treatments, subsets=list(ONE), settings=settings)
    rows = tables.contrasts[tables.contrasts["endpoint"] == "primary"]
    return tables.pairs, rows[rows["subset"] == ONE[0]].set_index("treatment")


def factors(
    scenario: Scenario, reps: int, boot: int, seed: int, pilot: int = 2, full: int = 6
) -> tuple[list[float], list[bool]]:
    """Per replication: predicted / actual half-width at `full` cycles from its first `pilot`
    cycles, and whether the actual one fell inside the predicted 80 % range."""
    ratio_out: list[float] = []
    inside: list[bool] = []
    whole = Scenario(**{**scenario.__dict__, "cycles": full})
    for i, start in enumerate(range(0, reps, BATCH)):
        records, treatments = replication_records(whole, min(BATCH, reps - start), seed + i)
        settings = AnalysisSettings(baseline="none", boot=boot, seed=seed + i, pool_sessions=False)
        pairs, early = _published(records[records["cycle"] <= pilot], treatments, settings)
        _, final = _published(records, treatments, settings)
        for t in treatments:
            row = early.loc[t].to_dict()
            matrix = cell_matrix(pairs, "primary", t, ONE[0])
            comp = components(matrix)
            actual = (float(final.loc[t, "ci_high"]) - float(final.loc[t, "ci_low"])) / 2.0
            if comp is None or not math.isfinite(actual) or actual <= 0:
                continue
            est = math.log1p(float(row["pct_change"]) / 100.0)
            q = pilot_ratio(row, comp.n, 0.95)
            point = point_variances(comp)
            predicted = float(half_width(point, comp.n, full, est, q)[0])
            rng = np.random.default_rng(seed + i)
            drawn = component_draws(comp, 2000, rng)
            drawn = width_from_ms(realised_ms(drawn, comp.n, full, rng), comp.n, full, est, q)
            low, high = np.quantile(drawn, RANGE)
            ratio_out.append(predicted / actual)
            inside.append(bool(low <= actual <= high))
    return ratio_out, inside


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pilot", type=int, default=2, help="the pilot's cycles (default 2)")
    parser.add_argument("--full", type=int, default=6, help="the run's cycles (default 6)")
    args = parser.parse_args()
    t0 = time.monotonic()
    print(f"{args.pilot}-cycle pilots predicting the {args.full}-cycle half-width, {args.reps} "
          f"replications a scenario, boot {args.boot}\n")  # fmt: skip
    print("| scenario | median predicted/actual | within 2x | actual inside the 80 % range |")
    print("|---|---|---|---|")
    everything: list[float] = []
    for name, scenario in SCENARIOS:
        got, inside = factors(scenario, args.reps, args.boot, args.seed, args.pilot, args.full)
        f = np.array(got)
        within = float(((f >= 0.5) & (f <= 2.0)).mean())
        everything += got
        print(f"| {name} | {np.median(f):.2f} | {within:.2f} | {np.mean(inside):.2f} |")
    f = np.array(everything)
    print(f"| all | {np.median(f):.2f} | {float(((f >= 0.5) & (f <= 2.0)).mean()):.2f} | |")
    print(f"\n{time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
