"""The whole analysis as one pure function of what was read from the run directories."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ....kindapi import BOOT, SUBSETS, AnalysisError
from ....kindapi.analysis import CellState, Decision, LookState
from ..report.sections import render_report
from . import census as cen
from . import hosteffect as hostrule
from .acceptance import draft_acceptance
from .comparability import (
    check_poolable,
    comparability_groups,
    group_notes,
    plan_keyed,
    run_keyed,
)
from .contrasts import compute_contrasts
from .devices import per_device_table, unit_of
from .equivalence import Equivalence, content_equivalence
from .frame import parse_records
from .mechanism import drafter_of, mechanism_table
from .pairing import cell_means, pair_cells
from .runvalues import (
    DEFAULT_MARGIN_PCT,
    DEFAULT_TIEBREAK_PP,
    ENDPOINT_COLUMNS,
    AnalysisSettings,
    DecodeAnalysis,
    HostRuleEffect,
    RunData,
)
from .sweep import SweepResult, analyse_sweep
from .sweepdrops import replay_drops

_ENDPOINT_ALIASES = {
    **{v: k for k, v in ENDPOINT_COLUMNS.items()},
    "primary": "primary",
    "interval": "interval",
}


def _float_setting(own: Mapping[str, Any], name: str, default: float, run: RunData) -> float:
    value = own.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AnalysisError(
            f"analysis.{name} in {run.run_dir}/plan.json is {value!r}, not a number; write a "
            "number there"
        )
    return float(value)


def settings_for(
    run: RunData, *, baseline: str | None, boot: int, seed: int, endpoint: str | None = None
) -> AnalysisSettings:
    """Settings from plan.json's analysis section, with the caller's overrides."""
    own = run.plan.analysis.kind_settings  # decode's own: margin, tie-break, endpoint
    registered = run.plan.analysis.baseline or None
    endpoint = endpoint or str(own.get("primary_endpoint") or "primary")
    return AnalysisSettings(
        baseline=baseline if baseline is not None else (registered or ""),
        boot=boot,
        seed=seed,
        margin_pct=_float_setting(own, "margin_pct", DEFAULT_MARGIN_PCT, run),
        tiebreak_pp=_float_setting(own, "tiebreak_pp", DEFAULT_TIEBREAK_PP, run),
        primary_endpoint=_ENDPOINT_ALIASES.get(endpoint, endpoint),
        registered_baseline=registered,
    )


def _plan_treatments(runs: Sequence[RunData], *, selected_only: bool) -> list[str]:
    entries: list[tuple[int, str]] = []
    for run in runs:
        for entry in run.plan.sessions:
            if entry.treatment and (entry.selected or not selected_only):
                entries.append((entry.ordinal, entry.treatment))
    return list(dict.fromkeys(t for _, t in sorted(entries)))


def _ordered(first: Sequence[str], records: pd.DataFrame) -> list[str]:
    by_ordinal = records.sort_values(["ordinal", "treatment"])["treatment"]
    return list(dict.fromkeys([*first, *(str(t) for t in by_ordinal)]))


def _subsets(records: pd.DataFrame) -> list[str]:
    present = {str(s) for s in records["subset"].unique()}
    return [s for s in SUBSETS.names if s in present] + sorted(present - set(SUBSETS.names))


def _temperature(analysed: pd.DataFrame, runs: Sequence[RunData]) -> float | None:
    """The sampling temperature of the analysed group: records first, then plan.json."""
    values = set()
    column = "keyed_temperature"
    for text in analysed[column].dropna().unique() if column in analysed.columns else []:
        try:
            values.add(json.loads(str(text)))
        except ValueError:
            values.add(text)
    if not values:
        values = {run.plan.keyed.get("temperature") for run in runs}
    value = values.pop() if len(values) == 1 else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def equivalence_for(
    analysed: pd.DataFrame, runs: Sequence[RunData], baseline: str, order: Sequence[str] = ()
) -> tuple[Equivalence | None, str]:
    """Content equivalence at temperature 0, or None and the reason it was not checked."""
    temperature = _temperature(analysed, runs)
    if temperature is None:
        return None, "not checked: the records and plan.json do not say one sampling temperature"
    if not math.isclose(temperature, 0.0):
        return None, (
            f"not checked: the run sampled at temperature {temperature:g}, where two answers "
            "to one prompt may differ by chance"
        )
    if analysed["content_sha256"].notna().sum() == 0:
        return None, "not checked: no analysed record carries a content digest (content_sha256)"
    return content_equivalence(analysed, baseline, order), ""


def _plan_sessions(runs: Sequence[RunData], *, selected: bool) -> tuple[str, ...]:
    """Planned sessions the invocation selected (or did not), from plan.json."""
    out = []
    for run in runs:
        out += [e.session for e in run.plan.sessions if e.selected == selected]
    return tuple(out)


def _reached(runs: Sequence[RunData]) -> set[str]:
    seen = {f.session for run in runs for f in run.record_files if f.lines}
    seen |= {str(s.get("session")) for run in runs for s in run.sessions}
    return seen | {q.session for run in runs for q in run.quarantined}


def _cycle_of(runs: Sequence[RunData]) -> dict[str, int]:
    """Each planned session's cycle, from plan.json."""
    out: dict[str, int] = {}
    for run in runs:
        out |= {e.session: e.cycle for e in run.plan.sessions}
    return out


def _not_run(runs: Sequence[RunData], look: LookState | None) -> tuple[str, ...]:
    """Selected sessions with no records, no session file and no quarantine: never reached
    (those a met stop rule made unnecessary are not missing)."""
    seen = _reached(runs)
    after = look.design.looks[look.stopped_at - 1] if look and look.stopped_at else None
    cycle = _cycle_of(runs)
    left = {d.arm: d.after_cycle for r in runs for d in r.sweep_dropped}
    arm = {e.session: e.treatment for r in runs for e in r.plan.sessions}

    def unneeded(s: str) -> bool:  # after the stopping look, or after its arm left a sweep
        gone = left.get(arm.get(s, ""))
        if gone is not None and cycle.get(s, 0) > gone:
            return True
        return after is not None and cycle.get(s, 0) > after

    return tuple(
        s for s in _plan_sessions(runs, selected=True) if s not in seen and not unneeded(s)
    )


def _look(run: RunData, runs: Sequence[RunData]) -> LookState | None:
    """The sequential look of the (first) run, from plan.json's stop block (judged once the
    cells are analysed: never from stop.json)."""
    seen = _reached(runs)
    cycles = [c for s, c in _cycle_of([run]).items() if s in seen]
    return LookState.at(run.plan.stop, max(cycles, default=1))


def _parsed(runs: Sequence[RunData]) -> tuple[pd.DataFrame, pd.DataFrame, tuple[str, ...]]:
    """Every run's records as one frame, the lines set aside, and where each unreadable line
    is; an AnalysisError when no record can be read."""
    facts = {(run.run_id, str(s.get("session"))): s for run in runs for s in run.sessions}
    records, parse_excluded = parse_records(
        [f for run in runs for f in run.record_files],
        session_facts=facts,
        plan_keyed={run.run_id: plan_keyed(run) for run in runs},
    )
    multi = len(runs) > 1
    unreadable = tuple(
        f"{run_id}/{where}" if multi else str(where)
        for run_id, where in zip(parse_excluded["run_id"], parse_excluded["where"], strict=True)
    )
    if records.empty:
        # Before the settings: a directory with no records has no baseline to complain about.
        where = ", ".join(f"{run.run_dir}/records" for run in runs)
        if unreadable:
            raise AnalysisError(
                f"no record in {where} can be read ({len(unreadable)} unreadable line(s), "
                f"the first {unreadable[0]}); restore the records from a copy or run the "
                "experiment again"
            )
        raise AnalysisError(
            f"there are no records in {where}; run the experiment first or check the run path"
        )
    return records, parse_excluded, unreadable


def _settings_at_look(
    runs: Sequence[RunData], baseline: str | None, boot: int, seed: int, endpoint: str | None
) -> tuple[AnalysisSettings, LookState | None]:
    """The analysis settings, at the confidence levels of the look the records reached."""
    settings = settings_for(runs[0], baseline=baseline, boot=boot, seed=seed, endpoint=endpoint)
    if runs[0].plan.sweep is not None:  # its looks borrowed the session level from 1 df
        settings = dataclasses.replace(settings, borrow_min_df=1.0)
    look = _look(runs[0], runs)
    if look is not None:
        settings = dataclasses.replace(
            settings,
            confidence=look.confidence,
            equivalence_confidence=look.equivalence_confidence,
        )
    return settings, look


def _sessions_parts(
    runs: Sequence[RunData], analysed: pd.DataFrame, resampling: tuple[str, int, int]
) -> dict[str, Any]:
    """The result's parts read from the sessions and the analysed records (no contrast); the
    mechanism's against the baseline, resampled at (baseline, boot, seed)."""
    sessions = [(run.run_id, s) for run in runs for s in run.sessions]
    return {
        "calibration": cen.calibration(sessions),
        "truncated": cen.truncated(analysed),
        "degenerate": cen.degenerate(analysed),
        "interval_basis": cen.interval_basis(analysed),
        "host": cen.host_noise(sessions),
        "acceptance": draft_acceptance(analysed),
        "mechanism": _mechanism(runs, analysed, *resampling),
        "question": runs[0].plan.question.strip(),
        "scope": runs[0].plan.scope.strip(),
        "multiplicity": runs[0].plan.analysis.multiplicity.strip(),
        "stops": tuple(stop for run in runs for stop in run.stops),
        "unselected": _plan_sessions(runs, selected=False),
        "record_files": tuple(f for run in runs for f in run.record_files),
    }


def _mechanism(
    runs: Sequence[RunData], analysed: pd.DataFrame, baseline: str, boot: int, seed: int
) -> pd.DataFrame:
    """The drafting mechanism per treatment and subset, arms grouped by the drafter their plan's
    server arguments name (issue 49)."""
    drafters = {t.key: drafter_of(t.args) for run in runs for t in run.plan.treatments}
    return mechanism_table(analysed, baseline, drafters, boot=boot, seed=seed)


def _sweep(
    analysed: pd.DataFrame,
    run: RunData,
    subsets: Sequence[str],
    settings: AnalysisSettings,
    boot: int,
    seed: int,
) -> SweepResult | None:
    """The [sweep] analysis of one run (None without a sweep)."""
    return analyse_sweep(
        analysed,
        run.plan,
        subsets=subsets,
        baseline=settings.baseline,
        endpoint=settings.primary_endpoint,
        boot=boot,
        seed=seed,
        dropped=run.sweep_dropped,
        alpha=1.0 - settings.confidence,
    )


def _with_drops(run: RunData, valid: pd.DataFrame, baseline: str, boot: int, seed: int) -> RunData:
    """The run with the arms its sweep's looks dropped, recomputed from its valid records and
    plan.json (never stop.json's list: a hand edit there cannot steer the report)."""
    if run.plan.sweep is None or run.plan.stop is None:
        return run
    mine = valid[valid["run_id"] == run.run_id]
    return dataclasses.replace(
        run, sweep_dropped=replay_drops(mine, run.plan, baseline, boot, seed)
    )


def _check_baseline(baseline: str, everything: Sequence[str], runs: Sequence[RunData]) -> None:
    if baseline not in everything:
        raise AnalysisError(
            f"baseline {baseline!r} is not a treatment of run "
            f"{', '.join(r.run_id for r in runs)} (treatments: {', '.join(everything)}); pass "
            "--baseline with one of those"
        )


def analyse(
    runs: Sequence[RunData],
    *,
    baseline: str | None = None,
    boot: int = BOOT.default,
    seed: int = BOOT.seed,
    pool: bool = False,
    plot_available: bool = False,
    endpoint: str | None = None,
    host_sensitivity: bool = True,
) -> DecodeAnalysis:
    """Analyse one or (with pool=True) several runs; raises AnalysisError on refusals.

    `endpoint` publishes that endpoint instead of plan.json's primary one (the interval-basis
    analysis the users kept beside the primary). `host_sensitivity` also analyses the runs with
    the host rule's spoiled attempts in place of their re-runs (analysis/hostrule.py)."""
    if not runs:
        raise AnalysisError("no run directory was given; pass the path of a run to analyse")
    records, parse_excluded, unreadable = _parsed(runs)
    settings, look = _settings_at_look(runs, baseline, boot, seed, endpoint)
    check_poolable(runs, [run_keyed(run, records) for run in runs], pool=pool)
    everything = _ordered(_plan_treatments(runs, selected_only=False), records)
    _check_baseline(settings.baseline, everything, runs)
    multi = len(runs) > 1
    # only the chosen comparability group is analysed; the others are counted out
    valid = records[records["valid"]]
    runs = [_with_drops(run, valid, settings.baseline, boot, seed) for run in runs]
    groups, chosen = comparability_groups(valid, settings.baseline, qualify_sessions=multi)
    analysed = valid[valid["group_key"] == chosen] if chosen is not None else valid.iloc[0:0]
    elsewhere = valid[valid["group_key"] != chosen]

    treatments = [
        t
        for t in _ordered(_plan_treatments(runs, selected_only=True), analysed)
        if t != settings.baseline
    ]
    subsets = _subsets(analysed)
    tables = compute_contrasts(analysed, treatments=treatments, subsets=subsets, settings=settings)
    by_unit = analysed.assign(device=unit_of(analysed))  # CPU workers count as devices here
    unit_pairs, _ = pair_cells(cell_means(by_unit), treatments, settings.baseline)
    quarantined = [q for run in runs for q in run.quarantined]
    excluded = cen.all_exclusions(parse_excluded, quarantined, records, analysed, elsewhere, multi)
    equivalence, skipped = equivalence_for(analysed, runs, settings.baseline, treatments)
    result = DecodeAnalysis(
        run_dirs=tuple(run.run_dir for run in runs),
        run_ids=tuple(run.run_id for run in runs),
        ladder=runs[0].ladder,
        settings=settings,
        treatments=tuple(treatments),
        known_treatments=tuple(everything),
        subsets=tuple(subsets),
        contrasts=tables.contrasts,
        census=tables.census,
        gaps=tables.gaps,
        exclusions=excluded,
        per_cycle=tables.per_cycle,
        drift=tables.drift,
        per_device=per_device_table(unit_pairs, treatments),
        pairs=tables.pairs,
        quarantined=cen.quarantine_table(quarantined),
        groups=groups,
        notes=group_notes(runs, groups),
        position_trend=tables.position_trend,
        plot_available=plot_available,
        unreadable=unreadable,
        equivalence=equivalence,
        equivalence_skipped=skipped,
        sequential=look,
        host_rule=_host_rule(runs, host_sensitivity, settings.baseline, boot, seed, pool, endpoint),
        sweep=None if pool else _sweep(analysed, runs[0], subsets, settings, boot, seed),
        **_sessions_parts(runs, analysed, (settings.baseline, boot, seed)),
    )
    # The rule at the run's last look, from these records: what the run-time look saw
    judged = look.judged(headline_cells(result)) if look is not None else None
    result = dataclasses.replace(result, sequential=judged, not_run=_not_run(runs, judged))
    return dataclasses.replace(result, report_md=render_report(result))


def headline_cells(result: DecodeAnalysis) -> tuple[CellState, ...]:
    """The headline cells a [stop] rule looks at: each treatment × prompt subset's published
    decision and 95 % half-width (percent).

    The pooled row is not a headline cell: a gain on one subset and none on the other is an
    answer, and their average would keep the rule from ever being met."""
    cells = []
    for r in result.published.to_dict(orient="records"):
        if r["subset"] == SUBSETS.pooled:
            continue
        low, high = float(r["ci_low"]), float(r["ci_high"])
        half = (high - low) / 2.0 if math.isfinite(low) and math.isfinite(high) else math.inf
        cells.append(
            CellState(f"{r['treatment']}:{r['subset']}", Decision.of(str(r["decision"])), half)
        )
    return tuple(cells)


def _host_rule(
    runs: Sequence[RunData],
    sensitivity: bool,
    baseline: str,
    boot: int,
    seed: int,
    pool: bool,
    endpoint: str | None,
) -> HostRuleEffect:
    """What the host rule did, and (once) the headline with the spoiled attempts instead."""
    effect = hostrule.effect(runs)
    spoiled = hostrule.with_originals(runs) if sensitivity and effect.rerun else None
    if spoiled is None:
        return effect
    try:
        other = analyse(
            spoiled,
            baseline=baseline,
            boot=boot,
            seed=seed,
            pool=pool,
            endpoint=endpoint,
            host_sensitivity=False,
        )
    except AnalysisError:
        return effect
    return dataclasses.replace(effect, with_originals=hostrule.sensitivity_rows(other.published))
