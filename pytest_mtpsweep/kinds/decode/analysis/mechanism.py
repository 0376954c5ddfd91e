"""The drafting mechanism per treatment and subset (issue 49): the decode records turned into the
kind-neutral `kinds/decode/analysis/drafting.py`'s cells, one table row each, with the sentence that says why.

A record counts when it is valid, carries the drafter's counts with no `mechanism_invalid`, and
the server's decode count and clock. The decode clock (predicted_ms) starts at the first token,
which the prompt's pass made, so it times the other predicted_n - 1 tokens in predicted_n - 1 -
accepted steps; the baseline's plain step T1 is its predicted_ms / (predicted_n - 1) on the
same prompt and cycle (a pair lacking either arm is left out of both).
Arms are grouped by drafter (the values of the flags below in the plan's treatment arguments):
the step-cost line is fitted over the arms of one drafter only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ....kindapi import SUBSETS
from . import drafting as mech

# The flags that name a drafter: arms that differ only elsewhere (n_max, p_min, synthetic
# rates) share one step-cost line.
DRAFTER_FLAGS = ("--spec-type", "-md", "--model-draft", "--spec-draft-model", "-hfd")
ESTIMATES = (
    "mean_len",
    "k_bar",
    "acceptance",
    "step_ratio",
    "ceiling",
    "measured",
    "predicted",
    "efficiency",
)
MECHANISM_COLUMNS: tuple[str, ...] = (
    "treatment",
    "subset",
    "drafter",
    "n_prompts",
    "cycles",
    "records",
    "invalid",
    "invalid_reason",
    *(f"{e}{end}" for e in ESTIMATES for end in ("", "_low", "_high")),
    "fitted",
    "verdict",
    "sentence",
)
NEEDED = (
    "treatment",
    "subset",
    "prompt_id",
    "cycle",
    "valid",
    "draft_n",
    "draft_n_accepted",
    "predicted_n",
    "predicted_ms",
    "mechanism_invalid",
)


def drafter_of(args: Sequence[str]) -> str:
    """The drafter a treatment's server arguments name ('' for none)."""
    named = []
    for i, arg in enumerate(args):
        flag, _, value = arg.partition("=")
        if flag in DRAFTER_FLAGS:
            named.append(value or (args[i + 1] if i + 1 < len(args) else ""))
    return " ".join(named)


def _sums(rows: pd.DataFrame, prompts: list[str], cycles: list[int]) -> dict[str, Any]:
    """Per (prompt, cycle) sums of one arm's counts: (prompts, cycles) arrays."""
    keyed = rows.groupby(["prompt_id", "cycle"])[
        ["decoded_", "steps_", "draft_n", "draft_n_accepted", "predicted_ms"]
    ].sum()
    full = keyed.reindex(pd.MultiIndex.from_product([prompts, cycles]), fill_value=0.0)
    shape = (len(prompts), len(cycles))
    return {c: full[c].to_numpy(dtype=np.float64).reshape(shape) for c in keyed.columns}


def _cells(
    records: pd.DataFrame, arms: Sequence[str], baseline: str, subset: str
) -> tuple[dict[str, mech.CellCounts], dict[str, tuple[int, int, int]], int]:
    """The cells of `arms` in `subset` on one (prompt, cycle) grid, the pairs the baseline
    measured; each arm holds only the pairs it measured too, its baseline sums masked alike (an
    arm a sweep's look dropped keeps its cycles, and the others keep theirs). With each arm's
    (prompts, cycles, records) and the grid's prompts."""
    mine = records if subset == SUBSETS.pooled else records[records["subset"] == subset]
    base = mine[(mine["treatment"] == baseline) & mine["predicted_n"].notna()]
    grid = set(zip(base["prompt_id"], base["cycle"], strict=True))
    prompts = sorted({str(p) for p, _ in grid})
    cycles = sorted({int(c) for _, c in grid})
    b = _sums(base, prompts, cycles)
    cells, sizes = {}, {}
    for arm in arms:
        rows = mine[(mine["treatment"] == arm) & mine["draft_n"].notna()]
        pairs = grid & set(zip(rows["prompt_id"], rows["cycle"], strict=True))
        mask = np.array([[(p, c) in pairs for c in cycles] for p in prompts], dtype=np.float64)
        s = _sums(rows, prompts, cycles)
        cells[arm] = mech.CellCounts(
            tokens=s["decoded_"] * mask,
            steps=s["steps_"] * mask,
            drafted=s["draft_n"] * mask,
            accepted=s["draft_n_accepted"] * mask,
            ms=s["predicted_ms"] * mask,
            base_tokens=b["decoded_"] * mask,
            base_ms=b["predicted_ms"] * mask,
        )
        in_pairs = pd.Series(list(zip(rows["prompt_id"], rows["cycle"], strict=True)))
        sizes[arm] = (
            len({p for p, _ in pairs}),
            len({c for _, c in pairs}),
            int(in_pairs.isin(pairs).sum()),
        )
    return cells, sizes, len(prompts)


def sentence(subset: str, m: mech.ArmMechanism) -> str:
    """One sentence: tokens per step against the break-even, and what that means."""
    if m.verdict == mech.DRAFTED_NONE:
        return f"{subset}: drafted no tokens"
    e, b = m.mean_len, m.step_ratio
    ci = f"[{e.low:.2f}, {e.high:.2f}]" if finite(e.low) and finite(e.high) else "(no interval)"
    head = f"{subset}: {e.value:.2f} tokens per step {ci} against a break-even of {b.value:.2f}"
    tail = {
        mech.SAVES: "drafting saves more than it costs",
        mech.COSTS: "drafting costs more than it saves",
        mech.CANNOT_TELL: "cannot tell whether drafting saves or costs"
        + (" (the interval straddles it)" if finite(m.measured.low) else ""),
    }[m.verdict]
    return f"{head}: {tail}"


def _row(
    arm: str,
    subset: str,
    drafter: str,
    m: mech.ArmMechanism,
    sizes: tuple[int, ...],
    invalid: tuple[int, str],
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "treatment": arm,
        "subset": subset,
        "drafter": drafter,
        "n_prompts": sizes[0],
        "cycles": sizes[1],
        "records": sizes[2],
        "invalid": invalid[0],
        "invalid_reason": invalid[1],
    }
    for name in ESTIMATES:
        est: mech.Estimate = getattr(m, name)
        row.update({name: est.value, f"{name}_low": est.low, f"{name}_high": est.high})
    return {**row, "fitted": m.fitted, "verdict": m.verdict, "sentence": sentence(subset, m)}


def mechanism_table(
    records: pd.DataFrame,
    baseline: str,
    drafters: Mapping[str, str],
    *,
    boot: int,
    seed: int,
) -> pd.DataFrame:
    """One row per drafting treatment and subset (and pooled, with several subsets): E[L], k-bar,
    acceptance, break-even, ceiling, measured and predicted speedup and efficiency, with
    intervals. `drafters` maps a treatment to its drafter ('' or absent: none); a treatment none
    of whose records carries draft counts and that names no drafter is no row."""
    if records.empty or any(c not in records.columns for c in NEEDED):
        return pd.DataFrame(columns=list(MECHANISM_COLUMNS))
    valid = records[records["valid"]]
    counted = valid[valid["mechanism_invalid"].isna() & valid["predicted_n"].notna()]
    # the decode clock starts at the first token (the prompt's pass made it): the steps it
    # times made the other predicted_n - 1 (records.MECHANISM_FIELDS, rig/stream.py's rate)
    decoded = (counted["predicted_n"] - 1).clip(lower=0)
    counted = counted.assign(decoded_=decoded, steps_=decoded - counted["draft_n_accepted"])
    has_counts = set(counted.loc[counted["draft_n"].notna(), "treatment"])
    arms = [
        t
        for t in dict.fromkeys(valid["treatment"])
        if t != baseline and (drafters.get(str(t)) or t in has_counts)
    ]
    subsets = sorted(set(valid["subset"]))
    rows = []
    for subset in [*subsets, *([SUBSETS.pooled] if len(subsets) > 1 else [])]:
        for drafter in dict.fromkeys(drafters.get(str(a), "") for a in arms):
            group = [a for a in arms if drafters.get(str(a), "") == drafter]
            cells, sizes, n_prompts = _cells(counted, group, baseline, subset)
            cells = {a: c for a, c in cells.items() if sizes[a][0] > 0}
            if not cells:
                continue
            got = mech.subset_mechanism(
                cells, boot=boot, seed=seed, subset=subset, df=float(n_prompts - 1)
            )
            for arm, m in got.items():
                invalid = _invalid(valid, arm, subset)
                rows.append(_row(str(arm), subset, drafter, m, sizes[arm], invalid))
    return pd.DataFrame(rows, columns=list(MECHANISM_COLUMNS))


def _invalid(valid: pd.DataFrame, arm: str, subset: str) -> tuple[int, str]:
    """How many valid records of the arm (in the subset) had counts that cannot be, and the
    first one's reason."""
    mine = valid[(valid["treatment"] == arm) & valid["mechanism_invalid"].notna()]
    if subset != SUBSETS.pooled:
        mine = mine[mine["subset"] == subset]
    return (len(mine), str(mine["mechanism_invalid"].iloc[0])) if len(mine) else (0, "")


def sweep_cells(table: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(subset, arm) -> its mechanism in a few words, for a column of the sweep's table
    (`sweep.section`): "E[L] 2.10 [1.95, 2.25], k 2.9; break-even 1.60, ceiling ×1.40,
    predicted ×1.20", or "drafted no tokens"."""
    out: dict[tuple[str, str], str] = {}
    for r in table.to_dict(orient="records"):
        key = (str(r["subset"]), str(r["treatment"]))
        if r["verdict"] == mech.DRAFTED_NONE:
            out[key] = mech.DRAFTED_NONE
        elif finite(r["mean_len"]) and finite(r["step_ratio"]):
            ci = (
                f" [{r['mean_len_low']:.2f}, {r['mean_len_high']:.2f}]"
                if finite(r["mean_len_low"]) and finite(r["mean_len_high"])
                else ""
            )
            parts = [f"E[L] {r['mean_len']:.2f}{ci}"]
            if finite(r["k_bar"]):
                parts[0] += f", k {r['k_bar']:.1f}"
            tail = [f"break-even {r['step_ratio']:.2f}"]
            for name, col in (("ceiling", "ceiling"), ("predicted", "predicted")):
                if finite(r[col]):
                    tail.append(f"{name} ×{r[col]:.2f}")
            out[key] = f"{parts[0]}; {', '.join(tail)}"
    return out


def cost_note(table: pd.DataFrame) -> str:
    """Whether the step cost was fitted over several arms or each arm's own stands."""
    if table.empty:
        return ""
    if bool(table["fitted"].any()):
        return (
            "The step cost C(k)/T1 = fixed + per_draft * k is a least-squares line over the "
            "arms of one drafter; the predicted speedup is E[L] / C(k-bar)."
        )
    return (
        "With one drafting arm per drafter the step cost cannot be split into T_verify and "
        "T_draft: each arm's own step cost stands, so its predicted speedup is its measured "
        "one and no efficiency is given."
    )


def finite(value: Any) -> bool:
    """Whether a table cell holds a finite number."""
    return isinstance(value, int | float) and math.isfinite(value)
