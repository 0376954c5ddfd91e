"""`--expect TREATMENT:capacity:not-slower:M` on a `[capacity]` search: the SLO capacity ratio
and its 95 % prompt-resampled interval judged by the shared non-inferiority rule, a censored
capacity undecided (so failed), the gate refused on the wrong kind of load ladder, and its
false passes by simulation through the search and the analysis (tests/kinds/load/capacity_sim.py)."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_mtpsweep.analysis.noninferiority import INFERIOR, NONINFERIOR, UNDECIDED
from pytest_mtpsweep.base.errors import OptionError
from pytest_mtpsweep.kinds.load.analysis import capacity_stats as cs
from pytest_mtpsweep.kinds.load.analysis.capacity_stats import Ratio
from pytest_mtpsweep.kinds.load.analysis.gates import judge_ratio, verdicts
from pytest_mtpsweep.kinds.load.capacity import CapacitySettings
from pytest_mtpsweep.kinds.load.run.loadrun import prepare
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.wishes.request import RunRequest
from tests.gatetexts import gate, request
from tests.sandbox import REPO

from . import capacity_sim as sim

CONC = CapacitySettings(0.9, "closed", 1.0, 64.0, 0.25)


def ratio(point: float, low: float, high: float, bound: str = "") -> Ratio:
    return Ratio("ngram", "none", point, low, high, bound, 400)


def test_a_capacity_ratio_is_judged_as_a_drop_of_the_capacity() -> None:
    said = judge_ratio(ratio(0.95, 0.90, 1.01), 15.0)
    assert said.outcome == NONINFERIOR and said.sentence.startswith("non-inferior: -5.00 %")
    assert "[95.00 % CI -10.00, +1.00]" in said.sentence and "one-sided 97.5 %" in said.sentence
    assert judge_ratio(ratio(0.5, 0.4, 0.6), 10.0).outcome == INFERIOR
    narrow = judge_ratio(ratio(0.95, 0.90, 1.01), 5.0)
    assert narrow.outcome == UNDECIDED and "run more cycles or more requests a probe" in (
        narrow.sentence
    )


def test_a_censored_capacity_is_undecided_and_names_the_bounds() -> None:
    said = judge_ratio(ratio(2.0, np.nan, np.nan, ">="), 10.0)
    assert said.outcome == UNDECIDED and not said.passed
    assert "widen [capacity] low and high" in said.sentence


def test_verdicts_read_the_capacity_ratio_not_the_level_rows() -> None:
    asked = request("ngram:capacity:not-slower:15", "draft:capacity:not-slower:15",
                    kind_name="load")  # fmt: skip
    met, missing = verdicts(asked.gates, (), "e2e", 0.95, (ratio(0.95, 0.90, 1.01),))
    assert met.passed and "SLO capacity vs none non-inferior" in met.sentence
    assert met.figures is not None and met.figures.metric == "capacity"
    assert met.figures.lower_pct == pytest.approx(-10.0) and met.figures.confidence == 0.95
    assert missing.passed is False and "no capacity search ratio for draft" in missing.sentence


@pytest.mark.parametrize(
    ("ladder", "right", "wrong", "said"),
    [("load-capacity-cpu", "ngram:capacity:not-slower:5", "ngram:conc4:not-slower:5",
      "name capacity in the gate"),
     ("load-cpu", "ngram:conc4:not-slower:5", "ngram:capacity:not-slower:5",
      "name a level in the gate")],
)  # fmt: skip
def test_the_gate_fits_the_ladder_or_is_refused_in_one_line(
    ladder: str, right: str, wrong: str, said: str
) -> None:
    path = REPO / "experiments" / "ladders" / f"{ladder}.toml"
    lad = load_ladder(path)
    run = prepare(lad, lad.kind_settings,
                  RunRequest(ladder=str(path), search_dirs=(), cwd=REPO, invocation=()))  # fmt: skip
    run.validate_analysis(request(right, kind_name="load"))
    with pytest.raises(OptionError, match=said) as got:
        run.validate_analysis(request(wrong, kind_name="load"))
    assert "\n" not in str(got.value)


def _passes(caps: dict[str, float], margin: float, reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    passed = 0
    for i in range(reps):
        requests, _, _ = sim.run(rng, CONC, caps, requests=48)
        r = cs.ratios(CONC, requests, sim.SLO, [("b", "a")], boot=400, seed=i)[0]
        passed += judge_ratio(r, margin).passed
    return passed / reps


def test_a_capacity_truly_2m_lower_rarely_passes_an_equal_one_often_does() -> None:
    # 20 % lower at a 10 % margin: 0 of 60 pass (at the margin's edge, 10 % lower, 12 of 500
    # passed: 2.4 %, the one-sided 97.5 % bound's 2.5 %); equal capacities pass a 30 % margin
    # most of the time (53 of 60).
    assert _passes({"a": 6.0, "b": 4.8}, 10.0, 60, 5) <= 0.05
    assert _passes({"a": 6.0, "b": 6.0}, 30.0, 60, 5) >= 0.6


def test_an_unknown_capacity_ratio_fails_the_gate_saying_so() -> None:
    # issue 50: both capacities below `low` gave a ratio that meant nothing
    (got,) = verdicts([gate("ngram:capacity:not-slower:15", "load")], (), "e2e", 0.95,
                      (ratio(np.nan, np.nan, np.nan, cs.UNKNOWN),))  # fmt: skip
    assert got.passed is False and got.figures is None
    assert "SLO capacity vs none is unknown (both capacities lie beyond" in got.sentence
    assert "nan" not in got.sentence
