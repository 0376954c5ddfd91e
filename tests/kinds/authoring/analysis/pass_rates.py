"""Synthetic paired authoring experiments with known true pass rates and token ratio.

These are shared by bench/pass_rate_coverage.py (the full tables) and the fast coverage
tests. Each experiment has `tasks` tasks and `repeats` repeats per cohort. A task's pass
probability in cohort c is Φ(μ_c + u_t + e_ct), where u_t ~ N(0, task_sd²) is the task's
difficulty (shared by both cohorts, which is where the within-task correlation comes from) and
e_ct ~ N(0, cohort_sd²). μ_c is set so that the mean over tasks, E Φ(μ_c + W) =
Φ(μ_c / √(1 + task_sd² + cohort_sd²)), equals the true rate exactly, so the true difference is
rate_b − rate_a.
Tokens: a cell's count is exp(s_t + [cohort b]·θ_t + ε), with s_t ~ N(log 800, 0.7²),
θ_t = θ + a task effect (sd 0.15, normal or a centred exponential), and ε ~ N(0, 0.25²). Both
cohorts' cell noise has one distribution, so the mean of log(b_t / a_t) over task means is θ
exactly: the true ratio is exp(θ).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import ndtr, ndtri

FloatArray = npt.NDArray[np.float64]
# (task_sd, cohort_sd): latent correlation of the two cohorts' per-cell outcomes
# task_sd² / (1 + task_sd² + cohort_sd²) = 0.64 (strong, as when a task is either within a
# model's reach or not) and 0.28 (moderate); "extreme" (0.9, and no cohort-by-task variation:
# a cohort shifts every task the same way) is a stress case, not a realistic one
CORRELATIONS: dict[str, tuple[float, float]] = {
    "strong": (1.5, 0.5),
    "moderate": (0.7, 0.5),
    "extreme": (3.0, 0.0),
}


@dataclass(frozen=True)
class PassRates:
    """Many experiments' task means (experiments, tasks) and cells behind each cohort."""

    treated: FloatArray
    baseline: FloatArray
    cells: int  # per cohort per experiment: tasks × repeats


def pass_rates(rng: np.random.Generator, experiments: int, tasks: int, repeats: int,
               rate_a: float, rate_b: float, correlation: str = "strong") -> PassRates:  # fmt: skip
    """Draw `experiments` paired experiments; cohort a is the baseline, b the treated."""
    task_sd, cohort_sd = CORRELATIONS[correlation]
    scale = np.sqrt(1.0 + task_sd**2 + cohort_sd**2)
    u = task_sd * rng.standard_normal((experiments, tasks))

    def cohort(rate: float) -> FloatArray:
        mu = float(ndtri(rate)) * scale
        p = ndtr(mu + u + cohort_sd * rng.standard_normal(u.shape))
        return np.asarray(rng.binomial(repeats, p) / repeats, dtype=float)

    baseline = cohort(rate_a)
    return PassRates(cohort(rate_b), baseline, tasks * repeats)


def log_token_ratios(rng: np.random.Generator, experiments: int, tasks: int, repeats: int,
                     theta: float, shape: str = "normal") -> FloatArray:  # fmt: skip
    """Per-task log(mean tokens b / mean tokens a), (experiments, tasks); the truth is theta."""
    shape_2d = (experiments, tasks)
    if shape == "normal":
        effect = rng.standard_normal(shape_2d)
    else:  # skewed: a centred exponential, sd 1
        effect = rng.exponential(1.0, shape_2d) - 1.0
    site = np.log(800.0) + 0.7 * rng.standard_normal(shape_2d)
    theta_t = theta + 0.15 * effect

    def task_mean(shift: FloatArray) -> FloatArray:
        noise = 0.25 * rng.standard_normal((*shape_2d, repeats))
        cells = np.exp(site + shift)[..., None] * np.exp(noise)
        return np.asarray(cells.mean(axis=-1), dtype=float)

    return np.asarray(np.log(task_mean(theta_t) / task_mean(np.zeros(shape_2d))), dtype=float)
