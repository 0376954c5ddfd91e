"""The capacity search (its bracket, its next level, its bound) and its analysis (Wilson, the
capacities, the paired ratio), the analysis checked by simulation against known capacities."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.kinds.load.analysis import capacity_stats as cs
from pytest_mtpsweep.kinds.load.capacity import CapacitySettings, bracket, next_level, parse
from tests.sandbox import REPO

from . import capacity_sim as sim

CONC = CapacitySettings(0.9, "closed", 1.0, 64.0, 0.25)
RATE = CapacitySettings(0.9, "open", 0.5, 40.0, 0.1)


def _search(s: CapacitySettings, capacity: float) -> list[tuple[float, bool]]:
    probes: list[tuple[float, bool]] = []
    while (level := next_level(s, probes)) is not None:
        probes.append((level, level <= capacity))
    return probes


@given(st.floats(0.5, 80.0), st.sampled_from([CONC, RATE]))
@settings(max_examples=200, deadline=None)
def test_a_noiseless_search_brackets_the_capacity_within_its_bound(
    cap: float, s: CapacitySettings
) -> None:
    probes = _search(s, cap)
    assert len(probes) <= s.max_probes()
    assert len({lv for lv, _ in probes}) == len(probes)  # no level twice
    b = bracket(s, probes)
    assert b.done is not None
    if cap < s.low:
        assert b.hi == s.low and b.lo is None
    elif cap >= s.high:
        assert b.lo == s.high and b.hi is None
    else:
        assert b.lo is not None and b.hi is not None
        assert b.lo <= cap < b.hi
        assert s.closed_enough(b.lo, b.hi)


def test_the_search_doubles_then_bisects_in_whole_requests() -> None:
    assert [lv for lv, _ in _search(CONC, 5)] == [1, 2, 4, 8, 6, 5]
    b = bracket(CONC, _search(CONC, 5))
    assert (b.lo, b.hi) == (5, 6)


def test_a_follower_whose_first_probe_failed_searches_down() -> None:
    assert next_level(CONC, [(8.0, False)]) == 4.0


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({"high": 8, "slo_attainment": 1.5}, "slo_attainment is 1.5; use a share above 0 and "),
        # 1 is a share, but one no probe can show surely met: the sentence says so
        (
            {"high": 8, "slo_attainment": 1},
            "is 1.0; use a share above 0 and below 1, e.g. 0.9 (90 "
            "% of requests meet every [slo] target): no count of requests can show a level surely "
            "at 1.",
        ),
        ({"high": 8, "mode": "tokens"}, "capacity.mode is 'tokens'"),
        ({}, "needs 'high'"),
        ({"high": 8, "low": 8}, "must be below capacity.high"),
        ({"high": 2.5}, "capacity.high is 2.5; use a whole number"),
        ({"high": 10**9}, "from 1 to 4096"),
        ({"high": 8, "tolerance": 0}, "capacity.tolerance is 0.0"),
        ({"high": float("nan")}, "capacity.high is nan; use a finite number"),
        (
            {"high": 1e6, "mode": "rate", "low": 0.001, "tolerance": 0.01},
            "needs more than 24 probes",
        ),
        ({"high": 8, "steps": 3}, "unknown field(s) steps"),
    ],
)
def test_a_bad_capacity_table_is_one_sentence(raw: dict[str, object], says: str) -> None:
    with pytest.raises(LadderError, match=r"^x\.toml: ") as err:
        parse(raw, "x.toml")
    assert says in str(err.value) and "\n" not in str(err.value)


def test_wilson_matches_its_formula_at_known_points() -> None:
    lo, hi = cs.wilson(24, 24)
    assert lo == pytest.approx(0.8620, abs=1e-4) and hi == 1.0
    lo, hi = cs.wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    assert all(math.isnan(v) for v in cs.wilson(0, 0))


def _replicate(caps: dict[str, float], reps: int, seed: int) -> tuple[float, float, float]:
    """(share of 95 % brackets holding the true capacity, of ratio intervals holding the true
    ratio, of ratio intervals excluding 1)."""
    rng = np.random.default_rng(seed)
    held = covered = different = 0.0
    for i in range(reps):
        req, truth, _ = sim.run(rng, CONC, caps, requests=48)
        for c in cs.capacities(CONC, cs.table(req, sim.SLO)):
            lo, hi = c.sure_lo or 0.0, c.sure_hi or math.inf
            held += (lo <= truth[c.treatment] <= hi) / len(caps)
        r = cs.ratios(CONC, req, sim.SLO, [("b", "a")], boot=400, seed=i)[0]
        covered += r.low <= truth["b"] / truth["a"] <= r.high
        different += not r.low <= 1.0 <= r.high
    return held / reps, covered / reps, different / reps


def test_known_capacities_are_bracketed_and_their_ratio_covered() -> None:
    held, covered, _ = _replicate({"a": 5.0, "b": 10.0}, 60, 2026)
    assert held >= 0.9, held
    assert covered >= 0.8, covered


def test_two_identical_servers_are_not_called_different() -> None:
    different = _replicate({"a": 6.0, "b": 6.0}, 60, 7)[2]
    assert different <= 0.1, different


def test_lint_warns_when_no_level_can_be_surely_within_the_target(tmp_path: Path) -> None:
    ladder = (REPO / "experiments" / "ladders" / "load-capacity-cpu.toml").read_text()
    path = tmp_path / "experiments" / "ladders" / "cap.toml"
    path.parent.mkdir(parents=True)
    (tmp_path / "experiments" / "prompts").symlink_to(REPO / "experiments" / "prompts")
    for target, warned in (("0.8", False), ("0.9", True)):
        path.write_text(ladder.replace("slo_attainment = 0.8", f"slo_attainment = {target}"))
        out = subprocess.run([sys.executable, "-m", "pytest_mtpsweep.cli.main", "lint", str(path)],
                             capture_output=True, text=True, check=False, cwd=REPO)  # fmt: skip
        assert out.returncode == 0, out.stderr
        said = (
            "cannot show a share surely at or above slo_attainment = 0.9" in out.stdout + out.stderr
        )
        assert said == warned, out.stdout + out.stderr


def test_a_capacity_ladder_with_a_stop_rule_is_refused(tmp_path: Path) -> None:
    ladder = (REPO / "experiments" / "ladders" / "load-capacity-cpu.toml").read_text()
    path = tmp_path / "experiments" / "ladders" / "cap.toml"
    path.parent.mkdir(parents=True)
    (tmp_path / "experiments" / "prompts").symlink_to(REPO / "experiments" / "prompts")
    ladder = ladder.replace("cycles = 2\n", "", 1)
    path.write_text(
        ladder
        + '\n[stop]\nrule = "decided"\nmin_cycles = 2\nmax_cycles = 4\nallow_early_looks = true\n'
    )
    out = subprocess.run([sys.executable, "-m", "pytest_mtpsweep.cli.main", "lint", str(path)],
                         capture_output=True, text=True, check=False, cwd=REPO)  # fmt: skip
    assert out.returncode != 0
    assert "cannot take a [stop] rule yet" in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr


class TestNoLevelWithinTheSlo:
    """Issue 43, finding 6: a run whose first probe missed its SLO ended in an INTERNALERROR
    ('yerr' must not contain negative values) in the capacity figure, with no report."""

    @pytest.mark.parametrize("n", [3, 6, 7, 12, 40, 199])
    def test_wilson_ends_hold_the_share_at_none_and_all(self, n: int) -> None:
        for k in (0, n):
            low, high = cs.wilson(k, n)
            assert low <= k / n <= high

    def _missed_everywhere(self) -> cs.CapacityResult:
        a = cs.Attained("a", 1.0, 0, 12, 0.0, *cs.wilson(0, 12))
        b = cs.Attained("b", 1.0, 12, 12, 1.0, *cs.wilson(12, 12))
        caps = cs.capacities(CONC, [a, b])
        return cs.CapacityResult(CONC, {"ttft_ms": 1.0}, (a, b), tuple(caps), ())

    def test_the_figure_draws(self) -> None:
        pytest.importorskip("matplotlib")
        from pytest_mtpsweep.kinds.load.report.plots import capacity_figure

        capacity_figure(self._missed_everywhere())

    def test_the_report_says_below_low(self) -> None:
        text = cs.lines(self._missed_everywhere())
        assert text[0].startswith("a: capacity within the SLOs")
        assert "below `low` (concurrency 1): no level probed met the target" in text[0]


@pytest.mark.parametrize("caps", [{"a": 0.2, "b": 0.3}, {"a": 500.0, "b": 900.0}])
def test_both_capacities_beyond_one_end_say_nothing_of_their_ratio(caps: dict[str, float]) -> None:
    # issue 50: both below the search's `low` was reported as "capacity ratio >= 1"
    req, _, _ = sim.run(np.random.default_rng(3), CONC, caps, requests=24)
    (r,) = cs.ratios(CONC, req, sim.SLO, [("b", "a")], boot=200, seed=0)
    assert r.bound == cs.UNKNOWN and math.isnan(r.ratio)
    result = cs.CapacityResult(
        CONC, sim.SLO, (), tuple(cs.capacities(CONC, cs.table(req, sim.SLO))), (r,)
    )
    said = cs.lines(result)[-1]
    assert said.startswith("b vs a: capacity ratio unknown (both capacities lie")
    assert ">=" not in said and "<=" not in said


@pytest.mark.parametrize(
    ("ct", "cb", "bound"),
    [(0, 0, ""), (1, 0, ">="), (0, -1, ">="), (1, -1, ">="), (-1, 0, "<="), (0, 1, "<="),
     (-1, 1, "<="), (-1, -1, cs.UNKNOWN), (1, 1, cs.UNKNOWN)],
)  # fmt: skip
def test_a_ratio_is_bounded_only_where_its_censoring_bounds_it(
    ct: int, cb: int, bound: str
) -> None:
    assert cs.ratio_bound(ct, cb) == bound
