"""Coverage and false calls of the published interval under a `[stop]` rule, by simulation
through the package's own `compute_contrasts` at each look's levels (analysis/sequential.py).

    python bench/sequential_coverage.py               # the tables: 600 replications a cell
    python bench/sequential_coverage.py --reps 200    # a quicker look

Each replication is one treatment against a noise-free baseline (tests/strategies.py
`replication_records`, the model bench/coverage.py uses: per-prompt log ratio = effect +
prompt_sd·a_p + b_c + e_pc) over the design's maximum cycles; at every look the records of the
cycles so far are analysed, and the replication stops at the first look where its rule is met
(every subset cell decided). Three designs on the same data:

- sequential: the looks at the design's nominal levels (repeated confidence intervals);
- naive: the same looks and rule at the fixed 95 % / 90 % levels (peeking) — it must fail;
- fixed: the maximum cycles, analysed once.

Coverage is the share of (replication, subset) cells whose 95 % interval at the stop holds the
true change; a false call is `faster` or `slower` at the stop where the true change has the
other sign or is 0; cycles is the mean number of cycles run.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.analysis.contrasts import compute_contrasts
from pytest_mtpsweep.analysis.model import AnalysisSettings
from pytest_mtpsweep.analysis.sequential import DECIDED, Design
from tests.strategies import Scenario, replication_records

BATCH = 150  # replications per compute_contrasts call: bounds the resample arrays' memory


@dataclass(frozen=True)
class Outcome:
    """One design's figures over the replications of one scenario."""

    coverage: float
    false_calls: float  # share of cells called faster/slower against the truth
    decided: float  # share of cells with a decision at the stop
    cycles: float  # mean cycles run


def _looks(
    records: pd.DataFrame,
    treatments: list[str],
    design: Design,
    levels: list[tuple[float, float]],
    settings: AnalysisSettings,
) -> list[pd.DataFrame]:
    """Each look's primary per-subset rows (treatment, subset, ci_low, ci_high, decision)."""
    out = []
    subsets = sorted(set(records["subset"]))
    for cycles, (c95, c90) in zip(design.looks, levels, strict=True):
        at = replace(settings, confidence=c95, equivalence_confidence=c90)
        tables = compute_contrasts(
            records[records["cycle"] <= cycles], treatments=treatments, subsets=subsets,
            settings=at,
        )  # fmt: skip
        c = tables.contrasts
        out.append(c[(c["endpoint"] == "primary") & c["subset"].isin(subsets)].set_index(
            ["treatment", "subset"])[["ci_low", "ci_high", "decision"]])  # fmt: skip
    return out


def _stop(looks: list[pd.DataFrame], design: Design) -> tuple[pd.DataFrame, pd.Series]:
    """Per treatment: the rows at its stopping look, and that look's cycles."""
    rows, cycles = [], {}
    treatments = looks[0].index.get_level_values(0).unique()
    decided = [
        look["decision"].isin(DECIDED).groupby(level=0).all().reindex(treatments, fill_value=False)
        for look in looks
    ]
    for t in treatments:
        k = next((i for i, d in enumerate(decided) if d[t]), len(looks) - 1)
        rows.append(looks[k].loc[t].assign(treatment=t))
        cycles[t] = design.looks[k]
    return pd.concat(rows), pd.Series(cycles)


def _outcome(rows: pd.DataFrame, cycles: pd.Series, effect: float) -> Outcome:
    truth = 100.0 * math.expm1(effect)
    cover = (rows["ci_low"] <= truth) & (truth <= rows["ci_high"])
    wrong = {"faster"} if effect <= 0 else set()
    wrong |= {"slower"} if effect >= 0 else set()
    return Outcome(
        coverage=float(cover.mean()),
        false_calls=float(rows["decision"].isin(wrong).mean()),
        decided=float(rows["decision"].isin(DECIDED).mean()),
        cycles=float(cycles.mean()),
    )


def simulate(
    scenario: Scenario, design: Design, reps: int, boot: int, seed: int, margin_pct: float
) -> dict[str, Outcome]:
    """{sequential, naive, fixed} -> Outcome, on the same replications."""
    base = AnalysisSettings(baseline="none", boot=boot, seed=seed, margin_pct=margin_pct)
    fixed_levels = [(0.95, 0.90)] * len(design.looks)
    seq_levels = list(zip(design.confidence, design.equivalence_confidence, strict=True))
    parts: dict[str, list[tuple[pd.DataFrame, pd.Series]]] = {"sequential": [], "naive": []}
    fixed: list[tuple[pd.DataFrame, pd.Series]] = []
    full = replace(scenario, cycles=design.looks[-1])
    for i, start in enumerate(range(0, reps, BATCH)):
        records, treatments = replication_records(full, min(BATCH, reps - start), seed + i)
        settings = replace(base, seed=seed + i)
        naive = _looks(records, treatments, design, fixed_levels, settings)
        seq = _looks(records, treatments, design, seq_levels, settings)
        parts["naive"].append(_stop(naive, design))
        parts["sequential"].append(_stop(seq, design))
        last = naive[-1].reset_index(level=1)
        fixed.append((last, pd.Series(design.looks[-1], index=last.index.unique())))
    out = {}
    for name, got in (*parts.items(), ("fixed", fixed)):
        rows = pd.concat([r for r, _ in got])
        cycles = pd.concat([c for _, c in got])
        out[name] = _outcome(rows, cycles, scenario.effect)
    return out


# (name, scenario, equivalence margin %). The nulls hold one subset at the default 1 % margin:
# the rule then rarely decides `equivalent`, one cell's false call stops it, and peeking has
# every look to go wrong at (with two cells both must be decided, which hides peeking).
ONE = ("prose",)
SCENARIOS: tuple[tuple[str, Scenario, float], ...] = (
    ("null, cell noise", Scenario(prompts=8, prompt_sd=0.02, noise_sd=0.05, subsets=ONE), 1.0),
    ("null, prompts+session", Scenario(prompts=8, prompt_sd=0.05, noise_sd=0.03, session_sd=0.02, subsets=ONE), 1.0),
    ("null, skewed prompts", Scenario(prompts=8, prompt_sd=0.05, noise_sd=0.03, shape="skewed", subsets=ONE), 1.0),
    ("null, 2 subsets, 5 %", Scenario(prompts=8, prompt_sd=0.02, noise_sd=0.05), 5.0),
    ("+10 %, cell noise", Scenario(prompts=8, prompt_sd=0.02, noise_sd=0.05, effect=math.log(1.1)), 1.0),
    ("+30 %, prompts+session", Scenario(prompts=8, prompt_sd=0.08, noise_sd=0.05, session_sd=0.02, effect=math.log(1.3)), 1.0),
    ("+5 %, 16 prompts", Scenario(prompts=16, prompt_sd=0.03, noise_sd=0.05, effect=math.log(1.05)), 1.0),
)  # fmt: skip


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
    for i, (name, scenario, margin) in enumerate(SCENARIOS):
        got = simulate(scenario, design, reps, boot, 9100 + 17 * i, margin_pct=margin)
        for what, o in got.items():
            yield (
                f"{name:24} {what:10} {o.coverage:8.3f} {o.false_calls:6.3f} {o.decided:7.3f} "
                f"{o.cycles:6.2f}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=600)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--spending", choices=("pocock", "obrien-fleming", "both"), default="both")
    parser.add_argument("--looks", default="2,12", help="min_cycles,max_cycles (default 2,12)")
    args = parser.parse_args()
    if not 1 <= args.reps <= 100_000:
        parser.error("--reps must be 1-100000")
    low, high = (int(v) for v in args.looks.split(","))
    t0 = time.monotonic()
    for spending in ("pocock", "obrien-fleming") if args.spending == "both" else (args.spending,):
        for line in table(args.reps, args.boot, spending, (low, high)):
            print(line, flush=True)
        print()
    print(f"({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
