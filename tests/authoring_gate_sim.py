"""The authoring gate `--expect COHORT:SUBJECT:not-slower:M`, simulated through the gate's own
interval and decision: behind bench/authoring_gate.py and its fast tests.

Each experiment is one cohort against the baseline cohort on the same tasks
(tests/kinds/authoring/analysis/pass_rates.py: a task's pass probability is Φ of the cohort's
level plus the task's difficulty, shared by both cohorts, plus a cohort-by-task term; cells are
Bernoulli draws, repeats averaged within a task). The cohort's true pass rate is the baseline's
less `drop_pp`. The interval is `paired_difference` at the gate's 90 % (what `rate_interval`
calls on a run's task means), and the decision `gates.decide_rates`, the one `judge` makes.
The authoring kind has no `[stop]` rule, so the end is the only look and an undecided gate
fails. Vectorised over experiments: 4000 of them take well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pytest_mtpsweep.analysis.calibration import Rate, wilson
from pytest_mtpsweep.analysis.noninferiority import INFERIOR, NONINFERIOR
from pytest_mtpsweep.kinds.authoring.analysis.gates import LEVEL, decide_rates
from pytest_mtpsweep.kinds.authoring.analysis.paired_binary import paired_difference
from tests.kinds.authoring.analysis.pass_rates import pass_rates


@dataclass(frozen=True)
class GateScenario:
    """What a simulated gate looks like, and which error it counts."""

    name: str
    tasks: int
    repeats: int
    rate: float  # the baseline cohort's true pass rate
    drop_pp: float  # how far below it the cohort's true rate lies, in percentage points
    margin_pp: float
    what: str  # "false pass" (a true drop at or beyond M) or "false fail" (no true drop)


SCENARIOS = (
    GateScenario("drop 2M, 40 tasks, M 10", 40, 1, 0.6, 20.0, 10.0, "false pass"),
    GateScenario("drop 2M, 40 tasks, M 5", 40, 1, 0.6, 10.0, 5.0, "false pass"),
    GateScenario("edge: drop M, 40 tasks, M 10", 40, 1, 0.6, 10.0, 10.0, "false pass"),
    GateScenario("edge: drop M, 40x3, M 10", 40, 3, 0.6, 10.0, 10.0, "false pass"),
    GateScenario("edge: drop M, 40, rate .85", 40, 1, 0.85, 10.0, 10.0, "false pass"),
    GateScenario("no drop, 40 tasks, M 10", 40, 1, 0.6, 0.0, 10.0, "false fail"),
    GateScenario("no drop, 40x3, M 10", 40, 3, 0.6, 0.0, 10.0, "false fail"),
    GateScenario("no drop, 164x3, M 10", 164, 3, 0.6, 0.0, 10.0, "false fail"),
    GateScenario("no drop, 164x5, M 10", 164, 5, 0.6, 0.0, 10.0, "false fail"),
)


@dataclass(frozen=True)
class GateRates:
    """How the simulated gates came out: passed, shown inferior, left undecided (so failed);
    and how often the point-estimate rule (pass when the estimate is above −M) passes."""

    passed: Rate
    inferior: Rate
    undecided: Rate
    point: Rate

    @property
    def failed(self) -> Rate:
        """Every gate that did not pass: shown inferior, or undecided at the end."""
        k, n = self.inferior.count + self.undecided.count, self.passed.reps
        return Rate(k, n, *wilson(k, n))


def simulate(
    scenario: GateScenario, reps: int, seed: int, correlation: str = "strong"
) -> GateRates:
    """`reps` experiments of the scenario, each judged by the authoring gate at the end."""
    rng = np.random.default_rng(seed)
    rate_b = scenario.rate - scenario.drop_pp / 100.0
    draw = pass_rates(rng, reps, scenario.tasks, scenario.repeats, scenario.rate, rate_b,
                      correlation)  # fmt: skip
    cells = np.full(reps, float(draw.cells))
    est, low, high = paired_difference(draw.treated, draw.baseline, LEVEL, cells, cells)
    outcomes = [
        decide_rates(float(e), float(lo), float(hi), scenario.margin_pp).outcome
        for e, lo, hi in zip(est, low, high, strict=True)
    ]

    def rate(word: str) -> Rate:
        return count(sum(o == word for o in outcomes))

    def count(k: int) -> Rate:
        return Rate(k, reps, *wilson(k, reps))

    undecided = reps - sum(o in (NONINFERIOR, INFERIOR) for o in outcomes)
    point = int((100.0 * est > -scenario.margin_pp).sum())
    return GateRates(rate(NONINFERIOR), rate(INFERIOR), count(undecided), count(point))
