"""The order of a subject's cells: repeats in blocks, tasks mirrored, cohorts rotated.

Within one subject (one server session) the cells run repeat by repeat. Inside a repeat the
tasks run in one order, and each task's cohorts run back to back, so the two halves of a
paired contrast (cohort B vs A on one task) are next to each other in time and meet the same
server state. Which cohort goes first rotates with the task's index and the repeat, so over C
consecutive repeats each cohort takes each place within the task once, and within a repeat each
cohort goes first for about T/C of the tasks. Odd repeats rotate the task list by a seeded
offset per pair of repeats and even repeats run the exact reverse (ABC CBA, as decode's
cycles), so a drift over the session cancels in each pair. Whole repeats finish before the next
starts: a budget stop or an interruption leaves complete, balanced repeats behind. Every
subject gets the same order, so subjects meet each cell at the same position.
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def task_order(tasks: Sequence[str], repeat: int, seed: int) -> list[str]:
    """The tasks in the order repeat `repeat` (from 1) runs them."""
    n = len(tasks)
    pair = (repeat - 1) // 2
    offset = 0 if pair == 0 or n == 0 else random.Random(f"{seed}:tasks:{pair}").randrange(n)
    order = list(tasks[offset:]) + list(tasks[:offset])
    return order if repeat % 2 == 1 else order[::-1]


def cohort_order(cohorts: Sequence[str], task_index: int, repeat: int) -> list[str]:
    """The cohorts of one task in one repeat: rotated by task index and repeat."""
    k = (task_index + repeat - 1) % len(cohorts) if cohorts else 0
    return list(cohorts[k:]) + list(cohorts[:k])


def subject_order(
    cohorts: Sequence[str], tasks: Sequence[str], repeats: int, seed: int
) -> list[tuple[str, str, int]]:
    """Every (cohort, task, repeat) of one subject, in run order."""
    index = {t: i for i, t in enumerate(tasks)}
    return [
        (cohort, task, r)
        for r in range(1, repeats + 1)
        for task in task_order(tasks, r, seed)
        for cohort in cohort_order(cohorts, index[task], r)
    ]
