"""A decode sweep's look (`Kind.sweep`): at a look of a `[stop]` sweep, the arms surely not the
best on the deciding subsets leave, and whether the sweep is settled.

An arm leaves when, on every deciding subset (the subsets `[stop] cells` names; else every
subset), `analysis/sweep.arms_to_drop` finds it surely not the best among the arms still in the
run, at the look's spent level. The sweep is settled when one arm is left beside the baseline
(or none), or when on every deciding subset the best set is within the user's margin
(`BestSet.within_margin`). Deterministic: the same records give the same verdict, so
`--resume` and the analysis re-take the looks the records reached (`replay_drops`: each on the
records up to its cycle) and drop the same arms; stop.json's list of dropped arms is never read.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ....kindapi import AnalysisError, AnalysisRequest, SweepLookAt, SweepVerdict
from ....kindapi.analysis import arms_to_drop, best_set
from ....kindapi.records import DroppedArm, PlanDoc
from .sweep import sweep_data


def _valid_records(run_dir: Path) -> tuple[Any, PlanDoc]:
    from .comparability import plan_keyed
    from .frame import parse_records
    from .io import load_run

    run = load_run(run_dir)
    facts = {(run.run_id, str(s.get("session"))): s for s in run.sessions}
    records, _ = parse_records(
        list(run.record_files), session_facts=facts, plan_keyed={run.run_id: plan_keyed(run)}
    )
    if records.empty:
        return records, run.plan
    return records[records["valid"]], run.plan


def sweep_look(run_dir: Path, request: AnalysisRequest, at: SweepLookAt) -> SweepVerdict:
    """The arms that leave at this look, and whether the sweep is settled (see the module)."""
    records, plan = _valid_records(run_dir)
    return look_on(records, plan, request.baseline, at, request.boot, request.seed)


def look_on(
    records: pd.DataFrame,
    plan: PlanDoc,
    baseline: str | None,
    at: SweepLookAt,
    boot: int,
    seed: int,
) -> SweepVerdict:
    """One look on valid records (those after `at.through_cycle` left out)."""
    baseline = baseline or plan.analysis.baseline
    endpoint = str(plan.analysis.kind_settings.get("primary_endpoint", "primary"))
    doc = plan.sweep
    arms = tuple(a for a in at.active if a != baseline)
    if at.through_cycle is not None and not records.empty:
        records = records[records["cycle"] <= at.through_cycle]
    if records.empty or not arms:
        return SweepVerdict()
    subsets = at.subsets or tuple(sorted(set(records["subset"])))
    drops: dict[str, list[str]] = {}
    settled_on = 0
    for subset in subsets:
        try:
            data = sweep_data(records, subset, arms, baseline, endpoint,
                              setting=doc.setting if doc else "",
                              start=doc.start if doc else "high")  # fmt: skip
            found = arms_to_drop(data, alpha_look=at.alpha, margin_pct=at.margin_pct,
                                 boot=boot, seed=seed)  # fmt: skip
            best = best_set(data, alpha=at.alpha, boot=boot, seed=seed)
        except AnalysisError:
            return SweepVerdict()  # too little to judge yet: nobody leaves
        for arm, why in found:
            drops.setdefault(arm, []).append(f"{subset}: {why}")
        settled_on += best.within_margin(at.margin_pct)
    leaving = tuple((arm, "; ".join(whys)) for arm, whys in drops.items()
                    if len(whys) == len(subsets))  # fmt: skip
    left = [a for a in arms if a not in dict(leaving)]
    if len(left) <= 1:
        return SweepVerdict(
            leaving, True, f"{len(left)} arm left beside {baseline}: {', '.join(left) or 'none'}"
        )
    if settled_on == len(subsets):
        return SweepVerdict(
            leaving, True, f"the best set is within the ±{at.margin_pct:g} % margin on "
            f"{', '.join(subsets)}"
        )  # fmt: skip
    return SweepVerdict(leaving, False, f"{len(left)} arms still in the run")


def replay_drops(
    records: pd.DataFrame, plan: PlanDoc, baseline: str | None, boot: int, seed: int
) -> tuple[DroppedArm, ...]:
    """The arms the run's looks dropped, recomputed from the valid records and plan.json: each
    look the records reached (not the design's last, which is never taken) on the records up to
    its cycle, among the arms still in the run then, until a look settles the sweep. A run
    without a sweep or a stop rule dropped nothing, whatever stop.json says."""
    if plan.sweep is None or plan.stop is None or records.empty:
        return ()
    reached = int(records["cycle"].max())
    margin = float(plan.analysis.kind_settings.get("margin_pct", 0.0) or 0.0)
    subsets = tuple(dict.fromkeys(c.partition(":")[2] for c in plan.stop.cells))
    base = baseline or plan.analysis.baseline
    active = tuple(dict.fromkeys((base, *plan.sweep.arms)))
    out: list[DroppedArm] = []
    looks = zip(plan.stop.looks[:-1], plan.stop.confidence, strict=False)
    for k, (cycle, conf) in enumerate(looks, start=1):
        if cycle > reached:
            break
        at = SweepLookAt(active, 1.0 - conf, margin, subsets, through_cycle=cycle)
        verdict = look_on(records, plan, base, at, boot, seed)
        out += [DroppedArm(arm, k, cycle, why) for arm, why in verdict.drops]
        gone = {arm for arm, _ in verdict.drops}
        active = tuple(a for a in active if a not in gone)
        if verdict.settled:
            break
    return tuple(out)


if TYPE_CHECKING:  # the parts the kind's declaration names here, typed by the door
    from ....kindapi import SweepLookFn

    _sweep_look: SweepLookFn = sweep_look
