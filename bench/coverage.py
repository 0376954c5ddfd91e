"""Coverage of the published interval and of the percentile bootstrap, by simulation through the
package's own `compute_contrasts`; the figures behind report.md's method section.

    python bench/coverage.py                  # the full tables: 600 replications a cell
    python bench/coverage.py --reps 150       # a quicker look

Each replication is one synthetic treatment against a noise-free baseline (tests/strategies.py
`replication_records`): per-prompt log ratio = effect + 0.10·a_p + b_c + e_pc with a_p of the
named shape (sd 1), cell noise sd 0.05 on each rate and, in the session tables, a session
offset of the given sd on each server session. Coverage is the share of replications whose 95 %
interval holds the true change; a false decision is `faster` or `slower` with no true effect.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.kinds.decode.analysis.contrasts import compute_contrasts
from pytest_mtpsweep.kinds.decode.analysis.runvalues import AnalysisSettings
from tests.strategies import PROMPT_SHAPES, Scenario, replication_records

SUBSETS = ("prose", "structured", "pooled")
PROMPTS = (4, 6, 8, 12, 16)
BATCH = 150  # replications per compute_contrasts call: bounds the resample arrays' memory


def simulate(
    scenario: Scenario, reps: int, boot: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(primary contrast rows, treatment position-trend rows) of `reps` replications."""
    contrasts, trends = [], []
    for i, start in enumerate(range(0, reps, BATCH)):
        records, treatments = replication_records(scenario, min(BATCH, reps - start), seed + i)
        tables = compute_contrasts(
            records,
            treatments=treatments,
            subsets=list(scenario.subsets),
            settings=AnalysisSettings(
                baseline="none", boot=boot, seed=seed + i, pool_sessions=False
            ),
        )
        contrasts.append(tables.contrasts[tables.contrasts["endpoint"] == "primary"])
        t = tables.position_trend
        trends.append(t[(t["endpoint"] == "primary") & (t["treatment"] != "none")])
    return pd.concat(contrasts, ignore_index=True), pd.concat(trends, ignore_index=True)


def covered(rows: pd.DataFrame, low: str, high: str, effect: float) -> dict[str, float]:
    truth = 100.0 * math.expm1(effect)
    hit = (rows[low] <= truth) & (truth <= rows[high])
    return {s: float(hit[rows["subset"] == s].mean()) for s in SUBSETS}


def covered_by_t(rows: pd.DataFrame, effect: float) -> dict[str, float]:
    """Coverage of Student's t-interval alone: the published SE and df, no bootstrap-t."""
    from scipy.special import stdtrit

    est = np.log1p(rows["pct_change"].to_numpy() / 100.0)
    half = stdtrit(rows["df"].to_numpy(), 0.975) * rows["se_pct"].to_numpy() / 100.0
    hit = pd.Series(np.abs(est - effect) <= half, index=rows.index)
    return {s: float(hit[rows["subset"] == s].mean()) for s in SUBSETS}


def cells(values: dict[str, float]) -> str:
    return " ".join(f"{values[s]:.3f}" for s in SUBSETS)


def prompt_table(reps: int, boot: int) -> Iterator[str]:
    yield "## Prompt-level coverage (2 cycles): published | t alone | percentile bootstrap"
    yield f"   (prose structured pooled; {reps} replications a cell, {boot} resamples)"
    head = f"{'shape':8} {'n':>3}  {'published':20}  {'t alone':20}  {'percentile':20}"
    yield f"{head}  false-decision pub/pct"
    lows: list[float] = []
    for shape in PROMPT_SHAPES:
        for n in PROMPTS:
            rows, _ = simulate(Scenario(prompts=n, shape=shape), reps, boot, 1000 * n)
            pub = covered(rows, "ci_low", "ci_high", 0.0)
            pct = covered(rows, "boot_ci_low", "boot_ci_high", 0.0)
            t_alone = covered_by_t(rows, 0.0)
            lows.append(min(pub.values()))
            called = rows["decision"].isin(["faster", "slower"]).mean()
            boot_called = ((rows["boot_ci_low"] > 0) | (rows["boot_ci_high"] < 0)).mean()
            false = f"{called:.3f}/{boot_called:.3f}" if n >= 6 else "(insufficient)"
            columns = f"{cells(pub):20}  {cells(t_alone):20}  {cells(pct):20}"
            yield f"{shape:8} {n:>3}  {columns}  {false}"
    yield f"published coverage, lowest cell: {min(lows):.3f}"


def session_table(reps: int, boot: int) -> Iterator[str]:
    yield "## Session variance: published | percentile bootstrap (normal prompt effects)"
    yield f"{'cycles':>6} {'sd':>5} {'n':>3}  {'published':20}  {'percentile':20}  method"
    for cycles in (2, 4, 6):
        for sd in (0.02, 0.05):
            for n in (4, 8, 16):
                scenario = Scenario(prompts=n, cycles=cycles, session_sd=sd)
                rows, _ = simulate(scenario, reps, boot, 7000 + 100 * cycles + n)
                pub = covered(rows, "ci_low", "ci_high", 0.0)
                pct = covered(rows, "boot_ci_low", "boot_ci_high", 0.0)
                method = ",".join(sorted(set(rows["interval_method"])))
                yield f"{cycles:>6} {sd:>5} {n:>3}  {cells(pub):20}  {cells(pct):20}  {method}"


def position_table(reps: int, boot: int) -> Iterator[str]:
    yield "## Position trend (8 prompts a subset, 2 cycles): share flagged stateful"
    for trend in (0.0, 0.002, 0.005, 0.01, 0.02):
        _, t = simulate(Scenario(prompts=8, trend=trend), reps, boot, 9000 + int(1e4 * trend))
        yield (
            f"trend {100 * trend:>4.1f} %/position: flagged {t['stateful'].mean():.3f}, "
            f"median estimate {t['slope_pct'].median():+.3f} %"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=600, help="replications a cell")
    parser.add_argument("--boot", type=int, default=2000, help="resamples")
    parser.add_argument("--only", choices=["prompts", "sessions", "position"], default=None)
    args = parser.parse_args()
    np.seterr(all="ignore")
    start = time.perf_counter()
    tables = {"prompts": prompt_table, "sessions": session_table, "position": position_table}
    for name, table in tables.items():
        if args.only in (None, name):
            for line in table(args.reps, args.boot):
                print(line, flush=True)
            print()
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
