"""`mtpsweep plan RUN --target-width W` for load runs: the headline endpoint's gain at each
level, and its change from the lowest level to the highest (the interaction), each planned by
`CellPlan` on the estimate `contrast` publishes for it.

A per-request endpoint (ttft, itl, e2e) is clustered by prompt over a prompts x cycles matrix,
the decode estimator, so it is planned as a decode cell is; a per-block one (throughput,
goodput) has one gain per cycle and Student's t at cycles - 1 df, planned by cycle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....kindapi import AnalysisError, ExitStatus
from ....kindapi.analysis import CellPlan
from ....kindapi.records import RunReader, recordlines
from ..planfields import check_plan
from . import contrast, frame
from .compute import contrast_pairs, records_of
from .contrast import REQUEST_ENDPOINTS, cell_matrix, level_gains, request_gains

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from pathlib import Path

    import pandas as pd

    from ....kindapi.records import PlanDoc
    from .contrast import FloatArray, Row


def _row(r: Row) -> dict[str, float]:
    """A contrast row in the columns `CellPlan.by_prompt` reads (percent, SE in percent)."""
    return {
        "pct_change": r.gain_pct,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "se_pct": 100.0 * r.se_log,
        "df": r.df,
    }


def _matrix(requests: pd.DataFrame, r: Row, levels: Sequence[str]) -> FloatArray:
    """The prompts x cycles gains of a row: one level's, or the highest's minus the lowest's
    on the prompts and cycles both have (as `contrast` pairs an interaction)."""
    import numpy as np

    got = [
        cell_matrix(request_gains(requests, r.treatment, r.baseline, lv, r.endpoint))
        for lv in levels
    ]
    if len(got) == 1:
        return got[0][0]
    (m_lo, p_lo, c_lo), (m_hi, p_hi, c_hi) = got
    prompts = sorted(set(p_lo) & set(p_hi))
    cycles = sorted(set(c_lo) & set(c_hi))
    if not prompts or not cycles:
        return np.full((0, 0), np.nan)
    hi = m_hi[np.ix_([p_hi.index(p) for p in prompts], [c_hi.index(c) for c in cycles])]
    lo = m_lo[np.ix_([p_lo.index(p) for p in prompts], [c_lo.index(c) for c in cycles])]
    return np.asarray(hi - lo)


def _per_cycle(blocks: pd.DataFrame, r: Row, levels: Sequence[str]) -> FloatArray:
    import numpy as np

    per = [level_gains(blocks, r.treatment, r.baseline, lv, r.endpoint) for lv in levels]
    if len(per) == 1:
        return np.array(list(per[0].values()), dtype=np.float64)
    shared = sorted(set(per[0]) & set(per[1]))
    return np.array([per[1][c] - per[0][c] for c in shared], dtype=np.float64)


def plan_cells(
    requests: pd.DataFrame,
    blocks: pd.DataFrame,
    rows: Sequence[tuple[Row, Sequence[str]]],
    *,
    target: float,
    max_cycles: int,
    seed: int,
) -> list[CellPlan]:
    """One plan per (row, its levels): a level's gain (one level) or an interaction (the
    lowest level and the highest)."""

    out = []
    for r, levels in rows:
        cell = f"{r.treatment}@{r.level}"
        if r.endpoint in REQUEST_ENDPOINTS:
            out.append(
                CellPlan.by_prompt(
                    cell,
                    r.endpoint,
                    _matrix(requests, r, levels),
                    _row(r),
                    target=target,
                    max_cycles=max_cycles,
                    seed=seed,
                )
            )
        else:
            out.append(
                CellPlan.by_cycle(
                    cell,
                    r.endpoint,
                    _per_cycle(blocks, r, levels),
                    target=target,
                    max_cycles=max_cycles,
                    seed=seed,
                )
            )
    return out


def plan_command(args: argparse.Namespace, run_dir: Path, plan: PlanDoc) -> int:
    """Plan the headline endpoint's per-level gains and interactions of a load run."""

    check_plan(plan, f"plan file {run_dir / 'plan.json'}")
    records, unreadable = records_of(run_dir)
    requests, blocks = frame.frames(records)
    if blocks.empty:
        raise AnalysisError(
            f"there are no load records in {run_dir}/records; run the "
            "experiment first or check the run path"
        )
    base = args.baseline or plan.analysis.baseline
    present = set(blocks["treatment"])
    if base not in present:
        raise AnalysisError(
            f"the baseline {base!r} has no records in {run_dir}; pass "
            f"--baseline with one of {', '.join(sorted(present))}"
        )
    pairs = [p for p in contrast_pairs(plan, base) if p[0] in present]
    order = frame.level_order(blocks)
    modes: dict[str, list[str]] = {}
    for label in order:
        modes.setdefault(str(blocks.loc[blocks["level"] == label, "mode"].iloc[0]), []).append(
            label
        )
    endpoint = str((plan.kind_fields.get("load") or {}).get("endpoint", "e2e"))
    kw = {"boot": args.boot, "seed": args.boot_seed}
    spans = {f"{m[-1]}/{m[0]}": [m[0], m[-1]] for m in modes.values() if len(m) >= 2}
    rows: list[tuple[Row, Sequence[str]]] = [
        (r, [r.level])
        for r in contrast.contrast_rows(requests, blocks, pairs, order, **kw)
        if r.endpoint == endpoint
    ]
    rows += [
        (r, spans[r.level])
        for r in contrast.interaction_rows(requests, blocks, pairs, modes, **kw)
        if r.endpoint == endpoint
    ]
    cells = plan_cells(
        requests,
        blocks,
        rows,
        target=args.target_width,
        max_cycles=args.max_cycles,
        seed=args.boot_seed,
    )
    sessions = RunReader(run_dir).sessions().facts
    print(
        CellPlan.table(
            cells, sessions, run=str(run_dir), target=args.target_width, top=args.max_cycles
        )
    )
    if unreadable:  # named as `analyse` names them: the pilot is the lines it could read
        print(recordlines.terminal([str(u) for u in unreadable]))
    return ExitStatus.OK
