"""The decode kind on the protocol: a case is prompt × session; one streamed request each."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....kindapi import SUBSETS, AnalysisRequest, EndAnalysis, KindRun, Outcome, RunRequest
from ....kindapi.ladder import (
    Ladder,
    Preregistration,
    PromptSet,
    SessionSlot,
)
from ....kindapi.records import RunReader, schema
from ....kindapi.rig import stream_chat
from ....kindapi.run import WARMUP, PreflightItem
from ..analysis.atend import analyse_at_end
from ..analysis.design import design_warnings
from ..analysis.optioncheck import validate_request
from ..ladder import DecodeSettings
from ..records import ENDPOINT_FIELDS, decode_record, mechanism_fields
from . import tallies
from .cases import DecodeCase, decode_cases, measurement_seed
from .degeneracy import degenerate
from .markers import stop_marker

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ....kindapi import Case
    from ....kindapi.run import LiveSession


class DecodeRun(KindRun):
    """One decode run: the prompt set, the keyed fields it adds, measuring and its analysis."""

    calibrates = True
    gate_calibration: Path | None = None  # --gate-calibration: the A/A file not-slower gates cite

    def __init__(self, ladder: Ladder, s: DecodeSettings, prompt_set: PromptSet) -> None:
        self.ladder, self.settings = ladder, s
        self.prompt_set = prompt_set
        self.prompts = prompt_set.prompts
        self.prompts_dir = prompt_set.directory
        self.digest = prompt_set.digest
        self.repeats, self.cache_prompt = s.repeats, s.cache_prompt

    def cases(self, plan: list[SessionSlot]) -> list[DecodeCase]:
        return decode_cases(plan, self.prompt_set, self.repeats, self.ladder.seed)

    def keyed(self) -> dict[str, Any]:
        per = {"request_seeds": "per-measurement"} if self._per_measurement else {}
        return {"prompt_set_digest": self.digest, "cache_prompt": self.cache_prompt, **per}

    @property
    def _per_measurement(self) -> bool:
        return self.settings.request_seeds == "per-measurement"

    def plan_fields(self) -> dict[str, Any]:
        orders = {
            f"c{c}": [p.id for p in self.prompt_set.in_order(c, self.ladder.seed)]
            for c in range(1, self.ladder.cycles + 1)
        }
        return {
            "prompts": [{"id": p.id, "subset": p.subset} for p in self.prompts],
            "prompt_order": orders,
            "repeats": self.repeats,
            "cache_prompt": self.cache_prompt,
            "analysis": {  # merged into plan.json's analysis block, after the baseline
                "margin_pct": self.ladder.analysis.margin_pct,
                "tiebreak_pp": self.ladder.analysis.tiebreak_pp,
                "primary_endpoint": self.ladder.analysis.primary_endpoint,
            },
        }

    def lint_warnings(self) -> list[str]:
        """Where the design cannot reach what it pre-registers (`analysis.planning`)."""

        counts: dict[str, int] = {}
        for p in self.prompts:
            counts[p.subset] = counts.get(p.subset, 0) + 1
        stop = self.ladder.stop
        width = stop.width_pct if stop is not None and stop.rule == "width" else None
        beside = len(self.ladder.treatment_keys) - 1
        return design_warnings(
            counts, self.ladder.cycles, self.ladder.analysis.margin_pct, width, beside
        )

    def preflight_items(self) -> tuple[PreflightItem, ...]:
        return (PreflightItem.prompt_set(self.digest),)

    def stop_cells(self, cases: Sequence[Case]) -> frozenset[str]:
        """Each treatment × prompt subset paired with the baseline on it (the pooled row is no
        headline cell: `analysis.interim`)."""
        have = {(c.slot.treatment, c.prompt.subset) for c in cases if isinstance(c, DecodeCase)}
        base = self.ladder.baseline
        return frozenset(f"{t}:{s}" for t, s in have if t != base and (base, s) in have)

    def gate_cells(self, cases: Sequence[Case]) -> frozenset[str]:
        """The headline cells, and each such treatment's pooled row: what a gate may name."""
        cells = self.stop_cells(cases)
        return cells | {f"{c.rpartition(':')[0]}:{SUBSETS.pooled}" for c in cells}

    def registration(self, reg: Preregistration) -> Preregistration:
        """Every treatment against the baseline, in both subsets and on both endpoints."""
        n = len([t for t in self.ladder.treatments if t.key != self.ladder.baseline])
        return replace(
            reg,
            multiplicity=reg.multiplicity
            or (
                f"{n} treatment(s) x 2 subsets x 2 endpoints = {4 * n} intervals, no correction "
                "for multiplicity; each interval describes a distribution, not a family-wise "
                "guarantee."
            ),
        )

    def prereg_lines(self, reg: Preregistration) -> list[str]:
        """The endpoints and contrasts, as preregistration.md states them."""
        a = self.ladder.analysis
        return [
            f"- Primary endpoint: `decode_rate_tps_{a.primary_endpoint}`, paired within "
            "(prompt, cycle).",
            f"- Primary contrasts: {'; '.join(reg.primary_contrasts) or 'none'}.",
            f"- Secondary contrasts (exploratory): {'; '.join(reg.secondary_contrasts) or 'none'}.",
            f"- Tie-break: if the primary and interval-basis figures differ by more than "
            f"{a.tiebreak_pp:g} pp on a headline cell, the interval-basis figure is published.",
            f"- Decision margin: ±{a.margin_pct:g} %.",
            f"- Multiplicity: {reg.multiplicity}",
        ]

    def warm_up(self, live: LiveSession) -> schema.WarmupFacts:
        """One short streamed request, judged as a measurement is."""

        warm = stream_chat(
            live.http, live.base_url, WARMUP.prompt, live.request_spec(WARMUP.tokens)
        )
        return {
            "valid": warm.valid,
            "reason": warm.reason,
            "http_status": warm.http_status,
            "ttft_s": warm.ttft_s,
        }

    def measure(self, live: LiveSession, case: DecodeCase) -> Outcome:
        started_at = schema.utc_now_iso()
        spec = replace(live.request_spec(), cache_prompt=self.cache_prompt)
        if self._per_measurement:
            spec = replace(spec, seed=measurement_seed(self.ladder.seed, case))
        before = live.counters_now()  # an attached server's spec-decode totals, untimed
        m = stream_chat(live.http, live.base_url, case.prompt.text, spec)
        m = live.counted(before, m)
        # Judged after the stream has ended, so it never lands inside a timed interval.
        if m.valid:
            found = degenerate(case.prompt.text, m.content)
            # a synthetic model's text is never an answer, whatever the witness finds in it
            said = "; ".join(x for x in (live.ctx.not_language, found) if x) or None
            m = replace(m, degenerate=said)
        stops = self.settings.degenerate == "stop"
        return self._record(live, case, m, started_at, stop_marker(case, m, self.ladder, stops))

    def unmeasured(self, live: LiveSession, case: DecodeCase, reason: str) -> Outcome:
        return self._record(
            live, case, schema.Measurement.not_measured(reason), schema.utc_now_iso(), None
        )

    def _record(
        self,
        live: LiveSession,
        case: DecodeCase,
        m: schema.Measurement,
        started_at: str,
        marker: str | None,
    ) -> Outcome:
        ctx, slot = live.ctx, case.slot
        identity = {
            "run_id": ctx.run_id,
            "ladder": self.ladder.name,
            "treatment": slot.treatment,
            "cycle": slot.cycle,
            "ordinal": slot.ordinal,
            "session": slot.name,
            "prompt_id": case.prompt.id,
            "subset": case.prompt.subset,
            "repeat": case.repeat,
            "position": case.position,
        }
        live.writer.append(
            decode_record(identity, m, started_at, dict(ctx.keyed), ctx.provenance())
        )
        if m.finish_reason == "length":
            live.extra.setdefault("length_prompts", []).append(case.prompt.id)
        if m.degenerate:
            live.extra.setdefault("degenerate_prompts", []).append(case.prompt.id)
        if m.valid and m.decode_rate_tps_primary is not None:
            live.extra.setdefault("rates", []).append(m.decode_rate_tps_primary)
        usable = m.valid and m.decode_rate_tps_primary is not None
        return Outcome(m, marker, usable=usable, rate=m.decode_rate_tps_primary if usable else None)

    def session_facts(self, live: LiveSession) -> dict[str, Any]:
        """Finish reasons, draft acceptance, degenerate answers and the shakedown, from the
        session's records."""
        records = RunReader(live.ctx.run_dir.path).session_records(live.slot.name).records
        shake = tallies.shakedown(records)
        return {
            "length_prompts": list(dict.fromkeys(live.extra.get("length_prompts", []))),
            "degenerate_prompts": list(dict.fromkeys(live.extra.get("degenerate_prompts", []))),
            "finish_reasons": tallies.finish_reasons(records),
            **tallies.draft_totals(records),
            "shakedown": {
                **shake,
                "summary": tallies.describe_shakedown(live.slot.name, shake),
            },
        }

    def session_note(self, live: LiveSession) -> str:
        """A closing session's median decode rate (primary endpoint, valid measurements)."""
        rates = live.extra.get("rates") or []
        return f"median {statistics.median(rates):.1f} tok/s" if rates else ""

    def properties(self, case: DecodeCase, result: schema.Measurement) -> dict[str, Any]:
        """A measurement's JUnit properties, named as its record's fields."""
        m = result
        out: dict[str, Any] = {
            "prompt_id": case.prompt.id,
            "subset": case.prompt.subset,
            "position": case.position,
            "valid": m.valid,
            "reason": m.reason,
            ENDPOINT_FIELDS["primary"]: m.decode_rate_tps_primary,
            ENDPOINT_FIELDS["interval"]: m.decode_rate_tps_interval,
            "interval_basis": m.interval_basis,
            "ttft_s": m.ttft_s,
            "completion_tokens": m.completion_tokens,
            "finish_reason": m.finish_reason,
            "degenerate": m.degenerate,
            # a drafting arm's mechanism (issue 49): steps, tokens and drafts per step, why not
            **mechanism_fields(m),
        }
        return {k: v for k, v in out.items() if v is not None}

    def validate_analysis(self, request: AnalysisRequest) -> None:
        """Every analysis option, checked before the first server starts."""

        validate_request(self.ladder, request, self.gate_calibration)

    def analyse(self, run_dir: Path, request: AnalysisRequest) -> EndAnalysis:

        return analyse_at_end(run_dir, request, self.ladder, self.gate_calibration)


def prepare(ladder: Ladder, s: DecodeSettings, request: RunRequest) -> DecodeRun:
    """Load the prompt set the ladder (or --prompts-dir) names, selected by subset."""
    prompts = PromptSet.of_ladder(ladder.path, s.prompt_set, s.subset, request.prompts_dir)
    run = DecodeRun(ladder, s, prompts)
    cited = request.kind_options.get("gate_calibration")
    run.gate_calibration = Path(cited) if cited else None
    return run
