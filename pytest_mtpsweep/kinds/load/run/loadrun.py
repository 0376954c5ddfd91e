"""The load kind on the protocol: a case is one level block of a session; each block is a
short warm-up, then the level's requests on the schedule every treatment shares.

The schedule: request i of every level sends prompt `order[i]` (`rig.arrivals.prompt_order`:
whole seeded permutations of the prompt set; a timed block cycles a long one), and an open-loop
level's arrival times are one seeded Poisson draw per rate (a timed block: those within its
duration), so a treatment's request i and its baseline's request i in the same cycle and level
are the same prompt at the same intended time: they pair by slot. A timed closed-loop block
reaches as many slots as its server serves in the time; the analysis counts the slots one
treatment reached and the other did not.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....kindapi import (
    AnalysisRequest,
    EndAnalysis,
    KindRun,
    OptionError,
    Outcome,
    RunRequest,
)
from ....kindapi.ladder import (
    Ladder,
    Preregistration,
    PromptSet,
    SessionSlot,
)
from ....kindapi.records import schema
from ....kindapi.rig import stream_chat
from ....kindapi.run import WARMUP, PreflightItem
from .. import conversation
from ..analysis.atend import analyse_at_end
from ..analysis.capacity_stats import wilson
from ..analysis.gates import CAPACITY, treatment_problem
from ..ladder import Level, LoadSettings
from ..loadgen.arrivals import poisson_schedule, poisson_until, prompt_order
from ..loadgen.payload import PromptLike
from ..records import E2E_MS, OUTPUT_TOK_S, TTFT_MS
from ..result import LevelResult
from . import prereg, probe, replay
from .cases import LoadCase, load_cases
from .measure import append, identity, measure_level, not_run, planned_requests, session_facts

if TYPE_CHECKING:
    from ....kindapi import Case
    from ....kindapi.run import LiveSession

PARALLEL_FLAGS = ("--parallel", "-np")


def declared_slots(args: Sequence[str]) -> int | None:
    """The slot count a server's argv asks for (`--parallel N`), None when it names none."""
    found = None
    for flag, value in itertools.pairwise(args):
        if flag in PARALLEL_FLAGS and value.lstrip("-").isdigit():
            found = int(value)
    return found


class LoadRun(KindRun):
    """One load run: the prompts and their schedule, the levels, measuring and the analysis."""

    calibrates = True  # the calibration prompt at start and end: a session's drift witness

    def __init__(self, ladder: Ladder, prompt_set: PromptSet, s: LoadSettings) -> None:
        prompts = prompt_set.prompts
        self.ladder, self.prompts, self.settings = ladder, prompts, s
        self.prompts_dir, self.digest = prompt_set.directory, prompt_set.digest
        self.order = prompt_order(s.order_length(len(prompts)), len(prompts), ladder.seed)
        self.scheduled: tuple[PromptLike, ...] = tuple(prompts[i] for i in self.order)
        if s.conversation is not None:  # each conversation's prompt, then its follow-ups
            self.scheduled = conversation.schedule(prompts, s.conversation, ladder.seed)
        self.subsets = {p.id: p.subset for p in prompts}
        self.replay: replay.Replay | None = None
        if s.trace is not None:  # one block of the trace's records, each real text (replay.py)
            from ..trace import load

            self.replay = replay.build(
                load(s.trace, ladder.path), s.trace, prompts, ladder.seed, ladder.max_tokens
            )
            self.scheduled = self.replay.prompts()

    def stop_cells(self, cases: Sequence[Case]) -> frozenset[str] | None:
        """Each treatment's level paired with the baseline at it, and per mode the interaction of
        its highest with its lowest such level (`analysis.cells`); a capacity search picks its
        levels as it runs, so its cells cannot be known before it (None)."""
        if self.settings.capacity is not None:
            return None
        have = {(c.slot.treatment, c.level.label) for c in cases if isinstance(c, LoadCase)}
        base, out = self.ladder.baseline, set()
        for t in {t for t, _ in have} - {base}:
            paired = [
                lv for lv in self.settings.levels if {(t, lv.label), (base, lv.label)} <= have
            ]
            out |= {f"{t}:{lv.label}" for lv in paired}
            for mode in dict.fromkeys(lv.mode for lv in paired):
                same = [lv.label for lv in paired if lv.mode == mode]
                if len(same) >= 2:
                    out.add(f"{t}:{same[-1]}/{same[0]}")
        return frozenset(out)

    def lint_warnings(self) -> list[str]:
        """A capacity search whose probes are too few for any level to be surely within the
        target: the 95 % bracket would have no lower end."""

        c, n = self.settings.capacity, (self.settings.requests or 0) * self.ladder.cycles
        if c is None or n == 0 or wilson(n, n)[0] >= c.attainment:
            return []
        return [
            f"[capacity]: {n} requests a level ({self.settings.requests} a probe x "
            f"{self.ladder.cycles} cycles) cannot show a share surely at or above "
            f"slo_attainment = {c.attainment:g} (all {n} attaining gives a Wilson lower bound of "
            f"{wilson(n, n)[0]:.2f}), so the report's 95 % bracket will have no lower end; raise "
            "requests or cycles, or lower slo_attainment."
        ]

    def cases(self, plan: list[SessionSlot]) -> list[LoadCase]:
        return load_cases(plan, self.settings)

    def keyed(self) -> dict[str, Any]:
        out = {"prompt_set_digest": self.digest, "cache_prompt": self.settings.cache_prompt}
        return out | ({"trace_sha256": self.replay.trace.sha256} if self.replay else {})

    def plan_fields(self) -> dict[str, Any]:

        s = self.settings

        def arrivals(rate: float) -> tuple[int, ...]:
            if s.duration_s is not None:
                return poisson_until(rate, s.duration_s, self.ladder.seed)
            assert s.requests is not None
            return poisson_schedule(rate, s.requests, self.ladder.seed)

        opens = [lv for lv in s.levels if lv.mode == "open"]
        return {
            "load": {
                **s.plan_entry(),
                "prompts": [{"id": p.id, "subset": p.subset} for p in self.prompts],
                "prompt_order": [p.id for p in self.scheduled],
                "block_order": {
                    f"c{c}": [lv.label for lv in s.block_order(c)]
                    for c in range(1, self.ladder.cycles + 1)
                },
                "arrivals_ms": {
                    lv.label: [round(t / 1e6, 3) for t in arrivals(lv.value)] for lv in opens
                },
                **({"trace": self.replay.plan_entry()} if self.replay else {}),
            },
            # merged into plan.json's analysis block; the margin an `equivalent` cell needs
            "analysis": {"endpoint": s.endpoint, "margin_pct": self.ladder.analysis.margin_pct},
        }

    def preflight_items(self) -> tuple[PreflightItem, ...]:
        return (PreflightItem.prompt_set(self.digest), self._slots_item())

    def _slots_item(self) -> PreflightItem:
        """The slots each launched treatment asks for against the highest concurrency: a level
        above them queues requests (counted and said), which may be the experiment."""
        highest = max(
            (int(lv.value) for lv in self.settings.levels if lv.mode == "closed"), default=None
        )
        seen = []
        for t in self.ladder.treatments:
            if t.attached:
                seen.append(f"{t.key}: attached (/props at each session)")
                continue
            n = declared_slots([*self.ladder.server_args, *t.args])
            seen.append(f"{t.key}: {'--parallel ' + str(n) if n else 'not declared (/props)'}")
        expected = (
            f"slots >= highest concurrency {highest}, or queued requests counted"
            if highest is not None
            else "open loop: requests in flight counted against slots"
        )
        return PreflightItem("load_slots", expected, "; ".join(seen), PreflightItem.PASS)

    def registration(self, reg: Preregistration) -> Preregistration:
        return replace(
            reg, multiplicity=reg.multiplicity or prereg.multiplicity(self.ladder, self.settings)
        )

    def prereg_lines(self, reg: Preregistration) -> list[str]:
        out = prereg.lines(self.ladder, self.settings, len(self.prompts), reg)
        if self.replay is None:
            return out
        # its own lines in place of the levels', the block order's and the schedule's
        return [*self.replay.prereg_lines(self.settings.prompt_set), *out[3:]]

    def warm_up(self, live: LiveSession) -> schema.WarmupFacts:
        """One short streamed request, judged as decode judges one (each block warms up too)."""

        spec = live.request_spec(WARMUP.tokens)
        # no longer than a block may take: the ladder's bound for this kind's requests
        spec = replace(spec, timeout_s=min(spec.timeout_s, self.settings.level_timeout_s))
        warm = stream_chat(live.http, live.base_url, WARMUP.prompt, spec)
        return {
            "valid": warm.valid,
            "reason": warm.reason,
            "http_status": warm.http_status,
            "ttft_s": warm.ttft_s,
        }

    def measure(self, live: LiveSession, case: LoadCase) -> Outcome:
        if case.probe:
            return self._probe(live, case)
        line = measure_level(
            self.ladder, self.settings, self.scheduled, self.subsets, live, case, self.replay
        )
        return self._outcome(live, case, line)

    def _probe(self, live: LiveSession, case: LoadCase) -> Outcome:
        """One probe of a capacity search: its level from the probes before it (the leader's
        replayed first), the block, then the search's line; a converged search skips the rest."""
        assert self.settings.capacity is not None
        search = probe.Search(self.settings.capacity, live, case)
        level = search.level()
        if level is None:
            append(live, search.done_line())
            result = LevelResult(
                valid=True, reason=None, level=f"probe{case.probe}", requests=0, completed=0
            )
            return Outcome(result, skip=search.skip_reason(), usable=True)
        case = replace(case, level=Level(self.settings.capacity.mode, level))
        line = measure_level(self.ladder, self.settings, self.scheduled, self.subsets, live, case)
        append(live, search.record(line))
        outcome = self._outcome(live, case, line)
        if line.get("good") is None:  # the block did not run: a failed probe, as a block's
            return outcome
        # a request that missed an SLO, or failed, is the search's data, not a failed probe
        assert isinstance(outcome.result, LevelResult)
        return Outcome(replace(outcome.result, valid=True), usable=True)

    def unmeasured(self, live: LiveSession, case: LoadCase, reason: str) -> Outcome:
        n = (
            len(self.replay)
            if self.replay
            else planned_requests(self.settings, case, self.ladder.seed)
        )
        line = not_run(identity(self.ladder, live, case), n, reason)
        append(live, line)
        return self._outcome(live, case, line)

    def _outcome(self, live: LiveSession, case: LoadCase, line: dict[str, Any]) -> Outcome:
        e2e, ttft = line.get(E2E_MS) or {}, line.get(TTFT_MS) or {}
        result = LevelResult(
            valid=bool(line["valid"]),
            reason=line.get("reason"),
            level=case.level.label,
            requests=int(line.get("requests") or 0),
            completed=int(line.get("completed") or 0),
            ttft_p50_ms=ttft.get("p50"),
            e2e_p50_ms=e2e.get("p50"),
            output_tok_s=line.get(OUTPUT_TOK_S),
            queued=line.get("queued"),
            lag_flag=line.get("lag_flag"),
        )
        live.extra.setdefault("levels", {})[case.level.label] = line
        return Outcome(result, usable=result.valid)

    def session_facts(self, live: LiveSession) -> dict[str, Any]:
        return session_facts(self.settings, live)

    def session_note(self, live: LiveSession) -> str:
        """The output tok/s of each level measured, in block order."""
        levels = live.extra.get("levels") or {}
        rates = [
            f"{k} {v[OUTPUT_TOK_S]:.1f}"
            for k, v in levels.items()
            if v.get(OUTPUT_TOK_S) is not None
        ]
        return f"{', '.join(rates)} tok/s" if rates else ""

    def properties(self, case: LoadCase, result: LevelResult) -> dict[str, Any]:
        out = {k: v for k, v in vars(result).items() if v is not None}
        return {"position": case.position, **out}

    def validate_analysis(self, request: AnalysisRequest) -> None:

        keys = self.ladder.treatment_keys
        base = request.baseline or self.ladder.baseline
        searched = self.settings.capacity is not None
        for gate in request.gates:  # a load run's one gate: TREATMENT:LEVEL:not-slower:M
            problem = treatment_problem(gate, keys, base)
            if problem is not None:
                raise OptionError(f"{problem}.")
            if searched != (gate.cell == CAPACITY):
                raise OptionError(
                    f"--expect {gate}: a [capacity] search is gated as "
                    f"{gate.treatment}:{CAPACITY}:not-slower:M and a level ladder by its "
                    f"levels; name {CAPACITY if searched else 'a level'} in the gate."
                )
        if request.baseline is not None and request.baseline not in keys:
            raise OptionError(
                f"--baseline {request.baseline}: not a treatment of ladder {self.ladder.name}; "
                f"use one of {', '.join(keys)}."
            )

    def analyse(self, run_dir: Path, request: AnalysisRequest) -> EndAnalysis:

        return analyse_at_end(run_dir, request)


def prepare(ladder: Ladder, s: LoadSettings, request: RunRequest) -> LoadRun:
    """Load the prompt set the ladder (or --prompts-dir) names, selected by subset."""
    prompts = PromptSet.of_ladder(ladder.path, s.prompt_set, s.subset, request.prompts_dir)
    run = LoadRun(ladder, prompts, s)
    if s.conversation is not None:  # the longest conversation within the context
        conversation.fits(s.conversation, [p.text for p in run.scheduled], ladder, ladder.path)
    return run
