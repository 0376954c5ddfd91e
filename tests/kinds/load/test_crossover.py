"""Where a load contrast's gain crosses zero: the interpolation, and its interval by simulation."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.load.analysis import compute as analysis
from pytest_mtpsweep.kinds.load.analysis.crossover import (
    Crossover,
    crossover,
    first_crossing,
    sentence,
)

from . import crossover_sim as sim
from . import run_fixture, synthetic


def _run(rng: np.random.Generator, seed: int, *, intercept: float, slope: float) -> Crossover:
    req, lev = sim.frames(rng, intercept=intercept, slope=slope)
    c = crossover(
        req, lev, "t", "b", "closed", sim.labels(), sim.LEVELS, "e2e", boot=300, seed=seed
    )
    assert c is not None
    return c


@given(st.floats(0.05, 2.95), st.floats(0.05, 1.0))
def test_a_straight_gain_crosses_at_its_root(root: float, slope: float) -> None:
    x = np.log2(np.asarray(sim.LEVELS))
    g = -slope * (x - root)
    assert math.isclose(first_crossing(x, g), root, abs_tol=1e-9)


def test_a_gain_that_keeps_its_sign_does_not_cross() -> None:
    x = np.array([0.0, 1.0, 2.0])
    assert first_crossing(x, np.array([0.3, 0.1, 0.05])) == math.inf
    assert first_crossing(x, np.array([math.nan, -0.1, -0.3])) == math.inf
    assert math.isnan(first_crossing(x, np.array([math.nan] * 3)))


def test_two_levels_have_no_crossover() -> None:
    req, lev = sim.frames(np.random.default_rng(0), intercept=0.2, slope=-0.1, levels=(1, 2))
    assert crossover(req, lev, "t", "b", "closed", ["c1", "c2"], (1, 2), "e2e",
                     boot=50, seed=0) is None  # fmt: skip


def test_the_interval_holds_a_known_crossing_near_its_nominal_rate() -> None:
    # true log gain 0.3 - 0.15·log2(c): zero at concurrency 4
    rng = np.random.default_rng(2026)
    results = [_run(rng, i, intercept=0.3, slope=-0.15) for i in range(120)]
    hold = sum(c.low <= 4.0 <= c.high for c in results)
    assert hold / len(results) >= 0.88, hold


def test_a_steady_gain_is_said_not_to_cross() -> None:
    rng = np.random.default_rng(7)
    results = [_run(rng, i, intercept=0.3, slope=0.0) for i in range(40)]
    assert sum(not c.crosses for c in results) >= 38
    line = sentence(results[0], "e2e")
    assert "does not cross zero within the concurrency levels run (1–8;" in line


def test_identical_servers_get_no_located_crossing() -> None:
    # no gain anywhere: a crossing may be estimated, but an interval between two levels run
    # would claim a place that is not there
    rng = np.random.default_rng(11)
    results = [_run(rng, i, intercept=0.0, slope=0.0) for i in range(60)]
    located = [c for c in results if c.crosses and math.isfinite(c.low) and math.isfinite(c.high)]
    assert len(located) <= 6, len(located)
    open_both = next(c for c in results if c.crosses and c.low == -math.inf and c.high == math.inf)
    assert "not located" in sentence(open_both, "e2e")


def _three_level_run(root: Path, factors: dict[str, float]) -> Path:
    levels = (("conc1", 1.0), ("conc2", 2.0), ("conc4", 4.0))
    plan = run_fixture.plan(2)
    plan["load"]["levels"] = [{"mode": "closed", "value": v, "label": k} for k, v in levels]
    plan["load"]["block_order"] = {"c1": ["conc1", "conc2", "conc4"],
                                   "c2": ["conc4", "conc2", "conc1"]}  # fmt: skip
    run = root / "run"
    (run / "records").mkdir(parents=True)
    (run / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    wobble = {p: 1.0 + 0.03 * ((p * 7) % 5 - 2) for p in range(6)}  # prompts differ a little

    def e2e(t: str, cycle: int, level: str, p: int, i: int) -> float:
        ms = (100.0 + 10 * p) * (1.0 + 0.01 * cycle)
        return ms if t == "none" else ms / (factors[level] * wobble[p])

    records = synthetic.lines(e2e, levels=levels)
    with (run / "records" / "all.jsonl").open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
    return run


def test_a_run_whose_gain_turns_negative_reports_where(tmp_path: Path) -> None:
    # +25 % at 1 in flight, -1 % (mean over prompts) at 2, -20 % at 4
    run = _three_level_run(tmp_path, {"conc1": 1.25, "conc2": 0.99, "conc4": 0.8})
    done = analysis.analyse(run, boot=200)
    assert not isinstance(done, str), done
    rows = list(csv.DictReader((run / "analysis" / "load_crossover.csv").open()))
    assert [r["crosses"] for r in rows] == ["True"]
    assert 1.0 < float(rows[0]["at"]) < 2.0
    text = (run / "analysis" / "report.md").read_text()
    headline = text.split("## Headline", 1)[1].split("\n## ", 1)[0]
    assert "e2e gain crosses zero at concurrency ≈ 1." in headline
    assert any("crosses zero at concurrency" in line for line in done.lines)
    page = (run / "analysis" / "report.html").read_text()
    assert "crosses zero at concurrency ≈ 1." in page


def test_a_run_whose_gain_holds_says_it_does_not_cross(tmp_path: Path) -> None:
    run = _three_level_run(tmp_path, {"conc1": 1.25, "conc2": 1.2, "conc4": 1.1})
    done = analysis.analyse(run, boot=200)
    assert not isinstance(done, str), done
    text = (run / "analysis" / "report.md").read_text()
    assert "does not cross zero within the concurrency levels run (1–4; +" in text
