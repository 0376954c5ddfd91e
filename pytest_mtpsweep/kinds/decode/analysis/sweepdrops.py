"""A decode sweep's look on records: the arms surely not the best on the deciding subsets leave,
and whether the sweep is settled; and the looks a run's records reached, re-taken.

Deterministic: the same records give the same verdict, so `--resume` and the analysis re-take
the looks the records reached (`replay_drops`: each on the records up to its cycle) and drop the
same arms; stop.json's list of dropped arms is never read back.
"""

from __future__ import annotations

import pandas as pd

from ....kindapi import AnalysisError, SweepLookAt, SweepVerdict
from ....kindapi.records import DroppedArm, PlanDoc
from .sweep import sweep_data
from .sweepstats import arms_to_drop, best_set


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
    # the reasons name the other arms by their values, as the report's sentences do
    value = dict(zip(doc.arms, doc.arm_values, strict=True)) if doc else {}
    labels = [value.get(a, a) for a in arms] if value else []
    drops: dict[str, list[str]] = {}
    settled_on = 0
    for subset in subsets:
        try:
            data = sweep_data(
                records,
                subset,
                arms,
                baseline,
                endpoint,
                setting=doc.setting if doc else "",
                labels=labels,
                start=doc.start if doc else "high",
            )
            found = arms_to_drop(
                data, alpha_look=at.alpha, margin_pct=at.margin_pct, boot=boot, seed=seed
            )
            best = best_set(data, alpha=at.alpha, boot=boot, seed=seed)
        except AnalysisError:
            return SweepVerdict()  # too little to judge yet: nobody leaves
        for arm, why in found:
            drops.setdefault(arm, []).append(f"{subset}: {why}")
        settled_on += best.within_margin(at.margin_pct)
    leaving = tuple(
        (arm, "; ".join(whys)) for arm, whys in drops.items() if len(whys) == len(subsets)
    )
    left = [a for a in arms if a not in dict(leaving)]
    if len(left) <= 1:
        return SweepVerdict(
            leaving, True, f"{len(left)} arm left beside {baseline}: {', '.join(left) or 'none'}"
        )
    if settled_on == len(subsets):
        return SweepVerdict(
            leaving,
            True,
            f"the best set is within the ±{at.margin_pct:g} % margin on {', '.join(subsets)}",
        )
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
