"""A decode sweep's look (`Kind.sweep`): at a look of a `[stop]` sweep, the arms surely not the
best on the deciding subsets leave, and whether the sweep is settled.

An arm leaves when, on every deciding subset (the subsets `[stop] cells` names; else every
subset), `analysis/sweep.arms_to_drop` finds it surely not the best among the arms still in the
run, at the look's spent level. The sweep is settled when one arm is left beside the baseline
(or none), or when on every deciding subset the best set is within the user's margin
(`BestSet.within_margin`). Deterministic: the same records give the same verdict, so
`--resume` re-takes the looks it reaches and drops the same arms.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....kindapi import AnalysisError, AnalysisRequest, SweepLookAt, SweepVerdict
from ....kindapi.analysis import arms_to_drop, best_set
from ....kindapi.records import PlanDoc
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
    baseline = request.baseline or plan.analysis.baseline
    endpoint = str(plan.analysis.kind_settings.get("primary_endpoint", "primary"))
    doc = plan.sweep
    arms = tuple(a for a in at.active if a != baseline)
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
            found = arms_to_drop(data, alpha_look=at.alpha, boot=request.boot, seed=request.seed)
            best = best_set(data, alpha=at.alpha, boot=request.boot, seed=request.seed)
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


if TYPE_CHECKING:  # the parts the kind's declaration names here, typed by the door
    from ....kindapi import SweepLookFn

    _sweep_look: SweepLookFn = sweep_look
