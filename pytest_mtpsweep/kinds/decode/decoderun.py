"""The decode kind on the protocol: a case is prompt × session; one streamed request each."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import rig, schema
from ...errors import PromptError
from ...ladder import Ladder, Prompt, SessionSlot, load_prompt_set, prompt_digest, select
from ...options import AnalysisRequest, RunRequest
from ...preflight import PreflightItem, check_prompt_set
from ...protocol.attach import counted, counters_now
from ...protocol.rundir import read_records
from .. import EndAnalysis, Outcome
from . import tallies
from .degeneracy import degenerate
from .markers import stop_marker

if TYPE_CHECKING:
    from ...ladder.model import Preregistration
    from ...protocol.context import RunContext
    from ...protocol.lifecycle import LiveSession
    from .. import Case


@dataclass(frozen=True)
class DecodeCase:
    """One measurement: a prompt in a session, at its position in that session's order."""

    slot: SessionSlot
    prompt: Prompt
    position: int
    repeat: int = 1

    repeats: int = 1  # how many times each prompt runs in the session

    @property
    def id(self) -> str:
        tail = f"-r{self.repeat}" if self.repeats > 1 else ""
        return f"{self.slot.id}-{self.prompt.id}{tail}"


def session_order(prompts: tuple[Prompt, ...], cycle: int, seed: int) -> list[Prompt]:
    """The prompts in the order a session of this cycle runs them.

    Every session of a cycle runs the same order, so a treatment and its baseline meet each
    prompt at the same position; odd cycles rotate the set by a seeded offset per cycle pair and
    even cycles run the exact reverse, so over a pair every prompt's positions sum to n−1 and a
    treatment whose speed drifts within a session shows it as a trend on position.
    """
    n = len(prompts)
    pair = (cycle - 1) // 2
    offset = 0 if pair == 0 or n == 0 else random.Random(f"{seed}:{pair}").randrange(n)
    order = list(prompts[offset:] + prompts[:offset])
    return order if cycle % 2 == 1 else order[::-1]


class DecodeRun:
    """One decode run: the prompt set, the keyed fields it adds, measuring and its analysis."""

    name = "decode"
    fixture = "measurement"
    calibrates = True

    def __init__(self, ladder: Ladder, prompts: tuple[Prompt, ...], prompts_dir: Path) -> None:
        self.ladder = ladder
        self.prompts = prompts
        self.prompts_dir = prompts_dir
        self.digest = prompt_digest(prompts)
        self.repeats = int(ladder.kind_fields.get("repeats", 1))
        self.cache_prompt = bool(ladder.kind_fields.get("cache_prompt", False))

    def cases(self, plan: list[SessionSlot]) -> list[DecodeCase]:
        """Each session runs its cycle's order once per repeat (whole passes, so a repeat
        meets the same drift as its first run); the analysis averages repeats before pairing."""
        out: list[DecodeCase] = []
        n = len(self.prompts)
        for slot in plan:
            order = session_order(self.prompts, slot.cycle, self.ladder.seed)
            out += [
                DecodeCase(slot, p, (r - 1) * n + i, r, self.repeats)
                for r in range(1, self.repeats + 1)
                for i, p in enumerate(order)
            ]
        return out

    def keyed(self) -> dict[str, Any]:
        return {"prompt_set_digest": self.digest, "cache_prompt": self.cache_prompt}

    def plan_fields(self) -> dict[str, Any]:
        orders = {
            f"c{c}": [p.id for p in session_order(self.prompts, c, self.ladder.seed)]
            for c in range(1, self.ladder.cycles + 1)
        }
        return {
            "prompts": [{"id": p.id, "subset": p.subset} for p in self.prompts],
            "prompt_order": orders,
            "repeats": self.repeats,
            "cache_prompt": self.cache_prompt,
        }

    def preflight_items(self) -> tuple[PreflightItem, ...]:
        return (check_prompt_set(self.digest),)

    def quarantine_members(self, session: str) -> dict[str, str]:
        return {}

    def prereg_lines(self, reg: Preregistration) -> list[str]:
        from ...protocol.prereg import decode_lines

        return decode_lines(self.ladder, reg)

    def before_session(self, ctx: RunContext, slot: SessionSlot, cases: Sequence[Case]) -> None:
        return None

    def warm_up(self, live: LiveSession) -> schema.WarmupFacts:
        from ...protocol.lifecycle import stream_warm_up

        return stream_warm_up(live)

    def measure(self, live: LiveSession, case: DecodeCase) -> Outcome:
        started_at = schema.utc_now_iso()
        spec = replace(live.request_spec(), cache_prompt=self.cache_prompt)
        before = counters_now(live)  # an attached server's spec-decode totals, untimed
        m = rig.stream_chat(live.http, live.base_url, case.prompt.text, spec)
        m = counted(live, before, m)
        # Judged after the stream has ended, so it never lands inside a timed interval.
        if m.valid:
            m = replace(m, degenerate=degenerate(case.prompt.text, m.content))
        return self._record(live, case, m, started_at, stop_marker(case, m, self.ladder))

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
            schema.decode_record(identity, m, started_at, dict(ctx.keyed), ctx.provenance())
        )
        if m.finish_reason == "length":
            live.extra.setdefault("length_prompts", []).append(case.prompt.id)
        if m.degenerate:
            live.extra.setdefault("degenerate_prompts", []).append(case.prompt.id)
        if m.valid and m.decode_rate_tps_primary is not None:
            live.extra.setdefault("rates", []).append(m.decode_rate_tps_primary)
        return Outcome(m, marker, usable=m.valid and m.decode_rate_tps_primary is not None)

    def session_facts(self, live: LiveSession) -> dict[str, Any]:
        """Finish reasons, draft acceptance, degenerate answers and the shakedown, from the
        session's records."""
        records = read_records(live.writer.path)[0] if live.writer.path.exists() else []
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
            "decode_rate_tps_primary": m.decode_rate_tps_primary,
            "decode_rate_tps_interval": m.decode_rate_tps_interval,
            "interval_basis": m.interval_basis,
            "ttft_s": m.ttft_s,
            "completion_tokens": m.completion_tokens,
            "finish_reason": m.finish_reason,
            "degenerate": m.degenerate,
        }
        return {k: v for k, v in out.items() if v is not None}

    def validate_analysis(self, request: AnalysisRequest) -> None:
        """Every analysis option, checked before the first server starts."""
        from .analysis import validate_request

        validate_request(self.ladder, request)

    def analyse(self, run_dir: Path, request: AnalysisRequest) -> EndAnalysis:
        from .analysis import analyse_at_end

        return analyse_at_end(run_dir, request, self.ladder)

    def finish(self, run_dir: Path, selected: Sequence[Case]) -> list[str]:
        return []  # a decode run's end files are the protocol's and the analysis'


def prepare(ladder: Ladder, request: RunRequest) -> DecodeRun:
    """Load the prompt set the ladder (or --prompts-dir) names, selected by subset."""
    prompt_set = str(ladder.kind_fields.get("prompt_set", "canonical"))
    subset = str(ladder.kind_fields.get("subset", "both"))
    directory = request.prompts_dir or ladder.path.parent.parent / "prompts" / prompt_set
    prompts = select(load_prompt_set(directory), subset)
    if not prompts:
        raise PromptError(
            f"prompt set {directory} has no {subset} prompts; choose another --subset."
        )
    return DecodeRun(ladder, prompts, directory)
