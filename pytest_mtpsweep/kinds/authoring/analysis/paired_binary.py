"""An interval for the difference of two paired pass rates that does not collapse on ties.

The method is Newcombe's hybrid score interval for paired proportions (Newcombe 1998, *Stat Med*
17:2635, method 10). Each rate gets its Wilson score interval, and the two are combined by
square-and-add using the phi correlation of the pairs. Phi carries Newcombe's continuity
correction: AD − BC is reduced by n/2 when it is above n/2, set to 0 between 0 and n/2, and
kept when negative. This module reproduces published values to the digits given: Newcombe's
n = 50 example, Fagerland, Lydersen & Laake (2014, Table II) and two more
(tests/kinds/authoring/analysis/test_paired_binary.py).

Why this method and not Tango's score interval: it is closed form, with no constrained
maximum likelihood and no root finding, so one call handles thousands of simulated experiments.
Its square-and-add form (a MOVER, Zou & Donner 2008) also extends to task means that are
fractions, while Tango's multinomial likelihood does not. It never collapses to a point.
Because the corrected phi stays below 1, the squared half-width is at least
(1 − phi)·(x² + y²), and a Wilson half-width is positive for any n ≥ 1. So an interval built
from ties alone still has width. For example, 10 tasks where both cohorts pass the same 4 give
±17.6 pp, where the t interval gave [0, 0].
It has a known cost: the interval does not always agree with McNemar's test. For example,
3 of 6 tasks discordant, all in one direction, give [+0.0001, +0.81].

Repeats. A task's value in a cohort may be the mean of its repeats, a fraction. The same
construction then runs with two moment substitutions, and it is exactly method 10 again when
every value is 0 or 1:
- each Wilson interval uses an effective number of trials, n* = p(1 − p) / (s² / n), where s²
  is the variance of the task means about p (ddof 0; for 0/1 values s² = p(1 − p), so n* = n).
  n* is kept between the number of tasks (a task counts at least once) and the number of cells
  (no more trials than cells were run). A rate of exactly 0 or 1 uses the number of tasks.
  This is the design effect of a clustered proportion: repeats count as independent trials
  only as far as tasks agree with one another;
- phi is the correlation of the task means, with the same correction: n/2 on the AD − BC
  scale, which is 1/(2n) on the covariance.
Coverage of the 95 % interval, measured by bench/pass_rate_coverage.py with 2000 experiments
a cell: 0.940 or more in every cell (8–64 tasks, true rates 0.1–0.9, differences of 0, 0.1 and
0.3, 1 and 3 repeats, strong and moderate within-task correlation). Under an extreme
correlation, a stress case with every task shifted the same way, the lowest cell is 0.93
(16 tasks, 1 repeat, 0.7 against 0.4).
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
METHOD = "newcombe-score"  # the name contrasts.csv and the report give this interval


def z_value(level: float) -> float:
    """The two-sided normal quantile for `level`."""
    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson(p: FloatArray, n: FloatArray, z: float) -> tuple[FloatArray, FloatArray]:
    """Wilson score interval of a proportion `p` out of `n` trials (elementwise)."""
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = z * np.sqrt(np.maximum(p * (1.0 - p), 0.0) / n + z2 / (4.0 * n * n)) / denom
    return np.clip(centre - half, 0.0, p), np.clip(centre + half, p, 1.0)


def _trials(
    p: FloatArray, var: FloatArray, binary: npt.NDArray[np.bool_], n: int, cells: FloatArray
) -> FloatArray:
    """Effective number of trials behind a mean of task means (see the module docstring)."""
    most = np.maximum(cells, n)
    pq = p * (1.0 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(var > 0, n * pq / var, most)
    eff = np.clip(ratio, n, most)
    return np.where(binary | (pq <= 0), float(n), eff)


def paired_difference(
    treated: npt.ArrayLike,
    baseline: npt.ArrayLike,
    level: float,
    treated_cells: npt.ArrayLike | None = None,
    baseline_cells: npt.ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(estimate, low, high) of mean(treated) − mean(baseline), paired over the last axis.

    Values are per-task pass rates in [0, 1] (0/1, or means over repeats), finite, with at
    least one task. Leading axes are independent experiments. `*_cells` are how many cells
    stand behind each cohort's task means (they default to the number of tasks, which treats
    a fraction as one trial per task: the conservative end).
    """
    x = np.asarray(treated, dtype=float)
    y = np.asarray(baseline, dtype=float)
    n = x.shape[-1]
    if n == 0 or x.shape != y.shape:
        raise ValueError("paired_difference needs two arrays of one shape with at least one task")
    z = z_value(level)
    px, py = x.mean(axis=-1), y.mean(axis=-1)
    dx, dy = x - px[..., None], y - py[..., None]
    vx, vy = (dx * dx).mean(axis=-1), (dy * dy).mean(axis=-1)
    cov = (dx * dy).mean(axis=-1)
    binary = np.all((x == 0) | (x == 1), axis=-1) & np.all((y == 0) | (y == 1), axis=-1)
    tasks = np.full(px.shape, float(n))
    cx = tasks if treated_cells is None else np.asarray(treated_cells, dtype=float)
    cy = tasks if baseline_cells is None else np.asarray(baseline_cells, dtype=float)
    lx, ux = wilson(px, _trials(px, vx, binary, n, cx), z)
    ly, uy = wilson(py, _trials(py, vy, binary, n, cy), z)
    # Newcombe's continuity-corrected phi: (AD − BC − n/2) / √(margins) on counts, that is
    # (cov − 1/(2n)) / √(vx·vy) on proportions; 0 between 0 and the correction.
    corr = 1.0 / (2.0 * n)
    num = np.where(cov > corr, cov - corr, np.where(cov < 0, cov, 0.0))
    den = np.sqrt(vx * vy)
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.clip(np.where(den > 0, num / den, 0.0), -1.0, 1.0)
    est = px - py
    a, b = px - lx, uy - py  # how far the treated rate may fall, the baseline rise
    c, d = ux - px, py - ly
    low = est - np.sqrt(np.maximum(a * a - 2 * phi * a * b + b * b, 0.0))
    high = est + np.sqrt(np.maximum(c * c - 2 * phi * c * d + d * d, 0.0))
    return est, np.clip(low, -1.0, 1.0), np.clip(high, -1.0, 1.0)
