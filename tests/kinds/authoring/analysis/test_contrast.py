"""Cohort vs baseline within subject, paired by task: exact cases, a coverage simulation that
can fail, and the words for whether subjects point the same way."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from pytest_mtpsweep.kinds.authoring import records
from pytest_mtpsweep.kinds.authoring.analysis.contrast import (
    agreement,
    contrasts,
    pooled,
    task_means,
)
from pytest_mtpsweep.kinds.authoring.analysis.frame import cell_frame
from pytest_mtpsweep.kinds.authoring.report.sections import contrast_text, headline


def cell(subject: str, cohort: str, task: str, repeat: int, outcome: str | None,
         prompt: int = 100, completion: int = 20) -> dict[str, Any]:  # fmt: skip
    return {"subject": subject, "cohort": cohort, "task": task, "repeat": repeat,
            "cell": f"{subject}-{cohort}-{task}-r{repeat}", "outcome": outcome,
            "prompt_tokens": prompt, "completion_tokens": completion}  # fmt: skip


G, X = records.FIRST_ATTEMPT_GREEN, records.EXHAUSTED


def by_endpoint(rows: list[Any]) -> dict[str, Any]:
    return {r.endpoint: r for r in rows}


def test_a_known_difference_and_ratio() -> None:
    recs = []
    for i in range(6):
        recs.append(cell("s", "a", f"t{i}", 1, G if i % 2 else X, prompt=100, completion=10))
        recs.append(cell("s", "b", f"t{i}", 1, G, prompt=50, completion=20))
    rows = by_endpoint(contrasts(cell_frame(recs), "s", "b", "a", 1000, 42))
    green = rows["green"]
    assert green.estimate == 0.5 and green.tasks == 6 and green.method == "newcombe-score"
    # 3 of 6 tasks differ, all one way: Newcombe's method 10 gives [+0.0001, +0.8124] (Wilson
    # for 6/6 and 3/6, phi 0 as one margin is empty); it is not test-based, and here it just
    # excludes 0 where the exact sign test's p is 0.25 (see paired_binary's docstring)
    assert (round(green.low, 4), round(green.high, 4)) == (0.0001, 0.8124)
    assert green.resamples_kept == 0  # it draws no resamples
    assert math.isclose(rows["prompt_tokens"].estimate, 0.5)
    assert math.isclose(rows["completion_tokens"].estimate, 2.0)
    assert rows["prompt_tokens"].resamples_kept == 1000 and rows["prompt_tokens"].method == "boot-t"


def test_ten_tasks_where_both_cohorts_pass_the_same_four() -> None:
    # Before: "reached green: +0.0 pp [+0.0, +0.0]", certainty from ten binary pairs.
    recs = []
    for i in range(10):
        outcome = G if i < 4 else X
        recs += [cell("s", "a", f"t{i}", 1, outcome), cell("s", "b", f"t{i}", 1, outcome)]
    rows = contrasts(cell_frame(recs), "s", "b", "a", 1000, 1)
    green = by_endpoint(rows)["green"]
    assert green.estimate == 0.0 and green.low < 0.0 < green.high
    assert round(green.high, 4) == 0.1756 and green.tasks == 10
    assert "+0.0 pp [-17.6, +17.6], 10 tasks" in contrast_text(green)
    text = headline(pd.DataFrame(), rows, [])
    assert "pass rates by Newcombe's paired score interval" in text


def test_repeats_are_averaged_within_a_task_first() -> None:
    # t0 has three repeats, t1 one: each task weighs the same
    recs = [cell("s", "a", "t0", r, X) for r in (1, 2, 3)] + [
        cell("s", "b", "t0", r, G) for r in (1, 2, 3)
    ]
    recs += [cell("s", "a", "t1", 1, G), cell("s", "b", "t1", 1, G)]
    rows = by_endpoint(contrasts(cell_frame(recs), "s", "b", "a", 1000, 1))
    assert rows["green"].estimate == 0.5  # (1 + 0) / 2, not 3/4
    assert task_means(cell_frame(recs), "green").loc["t0", "b"] == 1.0


def test_uninformative_cells_and_unpaired_tasks_stay_out() -> None:
    recs = [cell("s", "a", "t0", 1, G), cell("s", "b", "t0", 1, records.API_FAILURE),
            cell("s", "a", "t1", 1, X), cell("s", "b", "t1", 1, G),
            cell("s", "a", "t2", 1, X)]  # fmt: skip
    rows = by_endpoint(contrasts(cell_frame(recs), "s", "b", "a", 1000, 1))
    assert rows["green"].tasks == 1 and rows["green"].estimate == 1.0


def simulate(rng: np.random.Generator, tasks: int, effect: float) -> pd.DataFrame:
    recs = []
    for t in range(tasks):
        p = rng.uniform(0.2, 0.6)
        d = float(np.clip(rng.normal(effect, 0.15), -p, 1 - p))  # tasks differ in the effect
        for r in range(3):
            recs.append(cell("s", "a", f"t{t}", r, G if rng.random() < p else X))
            recs.append(cell("s", "b", f"t{t}", r, G if rng.random() < p + d else X))
    return cell_frame(recs)


def test_the_interval_covers_the_true_difference_near_its_nominal_rate() -> None:
    # The truth: the expected effect over tasks (the clipped normal's mean), to about 1e-4.
    rng = np.random.default_rng(7)
    p = rng.uniform(0.2, 0.6, 1_000_000)
    truth = float(np.clip(rng.normal(0.15, 0.15, p.size), -p, 1 - p).mean())
    hits, n = 0, 200
    for i in range(n):
        rows = by_endpoint(contrasts(simulate(rng, 16, 0.15), "s", "b", "a", 1000, i))
        hits += rows["green"].low <= truth <= rows["green"].high
    # nominal 95 %; bench/pass_rate_coverage.py measures Newcombe's interval at 3 repeats a
    # task on a finer grid
    assert hits / n >= 0.85, hits / n


def test_subjects_pointing_the_same_way_and_not() -> None:
    recs = []
    for s, sign in (("p", 1), ("q", 1)):
        for t in range(4):
            recs += [
                cell(s, "a", f"t{t}", 1, X, prompt=100),
                cell(s, "b", f"t{t}", 1, G if sign > 0 else X, prompt=80),
            ]
    df = cell_frame(recs)
    rows = contrasts(df, "p", "b", "a", 1000, 1) + contrasts(df, "q", "b", "a", 1000, 1)
    assert agreement(rows) == ["All 2 subjects point the same way on every endpoint."]
    recs = [r for r in recs if r["subject"] == "p"]
    for t in range(4):  # q: cohort b is worse
        recs += [
            cell("q", "a", f"t{t}", 1, G, prompt=100),
            cell("q", "b", f"t{t}", 1, X, prompt=80),
        ]
    df = cell_frame(recs)
    rows = contrasts(df, "p", "b", "a", 1000, 1) + contrasts(df, "q", "b", "a", 1000, 1)
    words = agreement(rows)
    assert any("b vs a, green: subjects differ (p up, q down)" in w for w in words)
    assert words[0].startswith("Subjects point the same way on:") and "b/prompt_tokens" in words[0]
    assert agreement(rows[:4]) == ["One subject: there is nothing to compare across subjects."]
    both = pooled(df, ["p", "q"], "b", "a", 1000, 1)
    assert by_endpoint(both)["green"].estimate == 0.0 and both[0].subject == "pooled"
