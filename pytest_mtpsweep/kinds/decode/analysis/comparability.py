"""Which sessions may be pooled: identical keyed fields, and never two runs by accident."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ....kindapi import AnalysisError
from ....kindapi.records import schema
from .frame import canonical
from .runvalues import ComparabilityGroup, RunData


def plan_keyed(run: RunData) -> dict[str, Any]:
    """The keyed fields plan.json declares for a run (the ladder included)."""
    values: dict[str, Any] = dict(run.plan.keyed)
    if run.ladder is not None and values.get("ladder") is None:
        values["ladder"] = run.ladder
    return values


def run_keyed(run: RunData, records: pd.DataFrame) -> dict[str, str]:
    """A run's keyed fields in comparison form; plan.json first, else what its records agree on."""
    declared = plan_keyed(run)
    mine = records[records["run_id"] == run.run_id]
    out: dict[str, str] = {}
    for name in schema.KEYED_FIELDS:
        if declared.get(name) is not None:
            out[name] = canonical(declared[name])
            continue
        # Without a declaration, the records speak; several values make the run itself mixed.
        seen = sorted(set(mine[f"keyed_{name}"]))
        out[name] = seen[0] if len(seen) == 1 else "(mixed: " + ", ".join(seen) + ")"
    return out


def check_poolable(
    runs: Sequence[RunData], keyed: Sequence[Mapping[str, str]], *, pool: bool
) -> None:
    """Refuse to pool run directories unless asked to with --pool and their keyed fields match."""
    if len(runs) < 2:
        return
    dirs = [run.run_dir for run in runs]
    if len(set(dirs)) < len(dirs) or len({run.run_id for run in runs}) < len(runs):
        raise AnalysisError(
            f"the same run is given more than once ({', '.join(dirs)}); name each run "
            "directory once"
        )
    first = keyed[0]
    differing = [
        name
        for name in schema.KEYED_FIELDS
        if any(first.get(name) != k.get(name) for k in keyed[1:])
    ]
    names = ", ".join(run.run_id for run in runs)
    if differing:
        detail = "; ".join(
            f"{name}: " + " vs ".join(str(k.get(name)) for k in keyed) for name in differing
        )
        if "model_sha256" in differing:
            detail = f"different model files {' vs '.join(_model_path(r) for r in runs)}; {detail}"
        raise AnalysisError(
            f"refusing to pool runs {names}: their keyed fields differ ({detail}); analyse "
            "each run separately and use `mtpsweep compare` for a descriptive side-by-side"
        )
    if not pool:
        raise AnalysisError(
            f"refusing to pool runs {names} without --pool; analyse each run separately, or "
            "pass --pool if they are one experiment split across directories"
        )


def _model_path(run: RunData) -> str:
    path = run.plan.model_path  # plan.json names the model file the run resolved
    return str(path) if path else f"(model of {run.run_id})"


def comparability_groups(
    valid: pd.DataFrame, baseline: str, *, qualify_sessions: bool
) -> tuple[tuple[ComparabilityGroup, ...], str | None]:
    """Group valid records by keyed fields and choose the one to analyse.

    The chosen group is the one holding the most valid baseline records (ties: most records,
    then the earliest session), because a group without the baseline yields no pairs; when no
    group holds the baseline the largest group is chosen. Returns (groups, chosen group_key).
    """
    if valid.empty:
        return (), None
    stats: list[tuple[str, int, int, int]] = []
    for key, frame in valid.groupby("group_key", sort=True):
        n_base = int((frame["treatment"] == baseline).sum())
        stats.append((str(key), n_base, len(frame), int(frame["ordinal"].min())))
    chosen_key = min(stats, key=lambda s: (-s[1], -s[2], s[3], s[0]))[0]
    groups: list[ComparabilityGroup] = []
    for key, n_base, n_records, _first in sorted(stats, key=lambda s: (s[3], s[0])):
        frame = valid[valid["group_key"] == key]
        sessions = frame[["run_id", "session", "ordinal"]].drop_duplicates()
        sessions = sessions.sort_values(["run_id", "ordinal", "session"])
        labels = tuple(
            f"{r}/{s}" if qualify_sessions else str(s)
            for r, s in zip(sessions["run_id"], sessions["session"], strict=True)
        )
        display = tuple((name, str(frame[f"keyed_{name}"].iloc[0])) for name in schema.KEYED_FIELDS)
        order = frame.sort_values("ordinal")["treatment"].drop_duplicates()
        groups.append(
            ComparabilityGroup(
                keyed=display,
                sessions=labels,
                treatments=tuple(str(t) for t in order),
                n_records=n_records,
                n_baseline_records=n_base,
                chosen=key == chosen_key,
            )
        )
    return tuple(groups), chosen_key


def differing_fields(a: ComparabilityGroup, b: ComparabilityGroup) -> list[str]:
    """Names of the keyed fields on which two groups disagree."""
    return [name for (name, x), (_, y) in zip(a.keyed, b.keyed, strict=True) if x != y]


def group_notes(runs: Sequence[RunData], groups: Sequence[ComparabilityGroup]) -> tuple[str, ...]:
    """The runs' notes, then one per comparability group not analysed and per run whose
    analysis settings differ from the first's."""
    notes = [note for run in runs for note in run.notes]
    chosen_group = next((g for g in groups if g.chosen), None)
    for group in groups:
        if chosen_group is not None and not group.chosen:
            fields = ", ".join(differing_fields(chosen_group, group))
            notes.append(
                f"{len(group.sessions)} session(s) ({', '.join(group.sessions)}) form another "
                f"comparability group (differing: {fields}) and were not analysed"
            )
    for run in runs[1:]:
        if run.plan.analysis != runs[0].plan.analysis:
            notes.append(
                f"plan.json analysis settings of {run.run_id} differ from {runs[0].run_id}; "
                f"the settings of {runs[0].run_id} were used"
            )
    return tuple(notes)
