"""A decode sweep's look (`Kind.sweep`): at a look of a `[stop]` sweep, the arms surely not the
best on the deciding subsets leave, and whether the sweep is settled.

An arm leaves when, on every deciding subset (the subsets `[stop] cells` names; else every
subset), `analysis/sweep.arms_to_drop` finds it surely not the best among the arms still in the
run, at the look's spent level. The sweep is settled when one arm is left beside the baseline
(or none), or when on every deciding subset the best set is within the user's margin
(`BestSet.within_margin`). The judging is `sweepdrops.look_on`'s, on the run's valid records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....kindapi import AnalysisRequest, SweepLookAt, SweepVerdict
from ....kindapi.records import PlanDoc
from .comparability import plan_keyed
from .frame import parse_records
from .io import load_run
from .sweepdrops import look_on


def _valid_records(run_dir: Path) -> tuple[Any, PlanDoc]:

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
