"""The order of a subject's cells: repeats in blocks, tasks mirrored, cohorts rotated."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.authoring.run.order import cohort_order, subject_order, task_order

names = st.lists(st.text("abcdefghij", min_size=1, max_size=4), min_size=1, max_size=8, unique=True)


@given(names, names, st.integers(1, 6), st.integers(0, 2**16))
def test_every_cell_once_in_whole_repeats(
    cohorts: list[str], tasks: list[str], repeats: int, seed: int
) -> None:
    order = subject_order(cohorts, tasks, repeats, seed)
    assert sorted(order) == sorted(
        (c, t, r) for c in cohorts for t in tasks for r in range(1, repeats + 1)
    )
    assert [r for _, _, r in order] == sorted(r for _, _, r in order)  # repeat by repeat


@given(names, names, st.integers(1, 6), st.integers(0, 2**16))
def test_a_tasks_cohorts_run_back_to_back(
    cohorts: list[str], tasks: list[str], repeats: int, seed: int
) -> None:
    order = subject_order(cohorts, tasks, repeats, seed)
    n = len(cohorts)
    for i in range(0, len(order), n):
        block = order[i : i + n]
        assert len({(t, r) for _, t, r in block}) == 1 and sorted(c for c, _, _ in block) == sorted(
            cohorts
        )


@given(names, st.integers(1, 4), st.integers(0, 2**16))
def test_each_pair_of_repeats_mirrors_task_positions(
    tasks: list[str], pairs: int, seed: int
) -> None:
    n = len(tasks)
    for p in range(pairs):
        odd, even = task_order(tasks, 2 * p + 1, seed), task_order(tasks, 2 * p + 2, seed)
        assert sorted(odd) == sorted(tasks) and even == odd[::-1]
        for t in tasks:
            assert odd.index(t) + even.index(t) == n - 1


@given(names, st.integers(0, 20))
def test_over_c_repeats_each_cohort_takes_each_place_once(
    cohorts: list[str], task_index: int
) -> None:
    c = len(cohorts)
    places = Counter(
        (cohort_order(cohorts, task_index, r).index(x), x) for r in range(1, c + 1) for x in cohorts
    )
    assert set(places.values()) == {1} and len(places) == c * c


def test_within_a_repeat_each_cohort_goes_first_for_half_the_tasks() -> None:
    order = subject_order(["a", "b"], [f"t{i}" for i in range(8)], 1, 42)
    firsts = Counter(order[i][0] for i in range(0, len(order), 2))
    assert firsts == {"a": 4, "b": 4}
    assert subject_order(["a", "b"], ["x", "y"], 2, 7) == subject_order(
        ["a", "b"], ["x", "y"], 2, 7
    )
