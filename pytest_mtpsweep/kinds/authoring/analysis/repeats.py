"""What repeats and feedback add: identical repeats, pass@k and pass^k, cells rescued by feedback.

- **Identical repeats**: a cell's artefacts are the sha256 of each turn's artefact, in order.
  When every repeat of a (subject, cohort, task) wrote the same sequence, the repeats are
  copies (a deterministic subject at temperature 0): they add no information, and the report
  says so rather than averaging copies.
- **pass@k** (Chen et al. 2021, the unbiased estimator): per task, from n repeats of which c
  reached green, 1 − C(n−c, k)/C(n, k): the chance that at least one of k samples is green.
  **pass^k**: C(c, k)/C(n, k), the chance that all k are. Averaged over tasks, with a Wilson
  interval whose number of trials is the tasks' effective count (paired_binary's design-effect
  rule: never zero-width on ties).
- **Rescued by feedback**: of the informative cells not green on their first turn, how many
  reached green after the checker's error went back (green_after_k); and the commonest first
  lines of what the checker said.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd

from .. import records
from .paired_binary import _trials, wilson, z_value

LEVEL = 0.95
PASS_COLUMNS: tuple[str, ...] = (
    "subject",
    "cohort",
    "tasks",
    "n",
    "measure",
    "k",
    "estimate",
    "low",
    "high",
)


def artefact_sequences(turns: pd.DataFrame) -> pd.Series:
    """Per cell: the tuple of its turns' artefact sha256 (None where a turn had none)."""
    if turns.empty:
        return pd.Series(dtype=object)
    ordered = turns.sort_values(["cell", "turn"])
    return ordered.groupby("cell", sort=False)["artefact_sha256"].agg(tuple)


def identical_repeats(cells: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Per (subject, cohort, task) with 2+ repeats: how many repeats, how many distinct."""
    seqs = artefact_sequences(turns)
    rows = []
    for (subject, cohort, task), g in cells.groupby(["subject", "cohort", "task"], sort=False):
        have = [seqs[c] for c in g["cell"] if c in seqs.index]
        if len(have) >= 2:
            rows.append(
                {
                    "subject": subject,
                    "cohort": cohort,
                    "task": task,
                    "repeats": len(have),
                    "distinct": len(set(have)),
                }
            )
    return pd.DataFrame(rows, columns=["subject", "cohort", "task", "repeats", "distinct"])


def repeats_lines(summary: pd.DataFrame) -> list[str]:
    """What the report and census say of the repeats, per subject."""
    lines = []
    for subject, g in summary.groupby("subject", sort=False):
        copies = int((g["distinct"] == 1).sum())
        n = int(g["repeats"].max())
        if copies == len(g):
            lines.append(
                f"repeats identical: {subject} wrote the same artefacts in every repeat of every "
                f"cell ({n} repeats): a deterministic subject; {n - 1} of {n} repeats add no "
                "information, and pass@k for k > 1 equals pass@1 (sample with temperature > 0, "
                "or run 1 repeat)."
            )
        else:
            distinct = int((g["distinct"] == g["repeats"]).sum())
            copied = f"; {copies} repeated the same artefacts in every repeat" if copies else ""
            lines.append(
                f"repeats sampled: {subject}: {distinct} of {len(g)} cohort x task groups wrote "
                f"a different artefact in each of their repeats (up to {n}){copied} "
                "(`repeats.csv`)."
            )
    return lines


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k from n samples with c correct."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The estimate of pass^k: all of k samples correct."""
    return math.comb(c, k) / math.comb(n, k) if k <= n else math.nan


def _interval(values: np.ndarray, cells: int) -> tuple[float, float, float]:
    """Mean of per-task values in [0, 1] with a Wilson interval on the effective trials."""
    t = values.size
    p = float(values.mean())
    var = float(((values - p) ** 2).mean())
    binary = bool(np.all((values == 0) | (values == 1)))
    n_eff = _trials(np.array([p]), np.array([var]), np.array([binary]), t, np.array([float(cells)]))
    low, high = wilson(np.array([p]), n_eff, z_value(LEVEL))
    return p, float(low[0]), float(high[0])


def pass_table(cells: pd.DataFrame) -> pd.DataFrame:
    """pass@k (k = 1 … n) and pass^k (k = n) of reaching green, per subject x cohort, over the
    tasks every one of whose repeats was informative (n = the fewest repeats of a task)."""
    rows = []
    info = cells[cells["informative"]]
    for (subject, cohort), g in info.groupby(["subject", "cohort"], sort=False):
        per_task = g.groupby("task")["green"].agg(["count", "sum"])
        n = int(per_task["count"].min()) if len(per_task) else 0
        if n == 0:
            continue
        # each task's first n repeats in order, so every task contributes the same n
        firsts = g.sort_values("repeat").groupby("task").head(n).groupby("task")["green"].sum()
        counts = [int(c) for c in firsts]
        measures = [("pass@k", k, [pass_at_k(n, c, k) for c in counts]) for k in range(1, n + 1)]
        if n > 1:
            measures.append(("pass^k", n, [pass_hat_k(n, c, n) for c in counts]))
        for measure, k, values in measures:
            est, low, high = _interval(np.array(values, dtype=float), n * len(counts))
            rows.append(
                {
                    "subject": subject,
                    "cohort": cohort,
                    "tasks": len(counts),
                    "n": n,
                    "measure": measure,
                    "k": k,
                    "estimate": est,
                    "low": low,
                    "high": high,
                }
            )
    return pd.DataFrame(rows, columns=list(PASS_COLUMNS))


def rescue_table(cells: pd.DataFrame, turns: pd.DataFrame, top: int = 3) -> pd.DataFrame:
    """Per subject x cohort: cells not green at turn 1, how many feedback rescued, and the
    commonest first lines of the checker's errors that went back."""
    rows = []
    info = cells[cells["informative"]]
    sent = turns[turns["feedback_chars"].notna()] if "feedback_chars" in turns else turns.iloc[:0]
    for (subject, cohort), g in info.groupby(["subject", "cohort"], sort=False):
        missed = g[g[records.OUTCOME] != records.FIRST_ATTEMPT_GREEN]
        rescued = int((missed[records.OUTCOME] == records.GREEN_AFTER_K).sum())
        said = sent[sent["cell"].isin(missed["cell"])]["error_first_line"].dropna()
        common = Counter(str(s)[:120] for s in said).most_common(top)
        rows.append(
            {
                "subject": subject,
                "cohort": cohort,
                "missed_first": len(missed),
                "rescued": rescued,
                "rescued_share": rescued / len(missed) if len(missed) else math.nan,
                "feedback_sent": len(said),
                "common_errors": " | ".join(f"{n}x {s}" for s, n in common),
            }
        )
    return pd.DataFrame(rows)


def rescue_lines(table: pd.DataFrame) -> list[str]:
    """The feedback loop in words: said plainly when it never rescued a cell."""
    if table.empty:
        return []
    lines = []
    for r in table.itertuples():
        if r.missed_first == 0:
            lines.append(f"{r.subject}/{r.cohort}: every informative cell was green at turn 1.")
            continue
        lines.append(
            f"{r.subject}/{r.cohort}: feedback rescued {r.rescued} of {r.missed_first} cells not "
            f"green at turn 1 ({r.feedback_sent} error messages sent back)"
            + (f"; commonest: {r.common_errors}" if r.common_errors else "")
        )
    if int(table["rescued"].sum()) == 0 and int(table["missed_first"].sum()) > 0:
        lines.insert(
            0,
            "Feedback never rescued a cell: no cell reached green after the "
            "checker's error went back.",
        )
    return lines
