"""The probe kind's run side: a case is one GET of the path in a session; its record is the
status and the latency. The template's `run`: cases, warm-up, measure."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from pytest_mtpsweep.kindapi import (
    AnalysisRequest,
    EndAnalysis,
    KindRun,
    Outcome,
    RunRequest,
)
from pytest_mtpsweep.kindapi.ladder import Ladder, Preregistration, SessionSlot
from pytest_mtpsweep.kindapi.records import WarmupFacts, utc_now_iso
from pytest_mtpsweep.kindapi.run import FAIL, PASS, PreflightItem

from .ladder import ProbeSettings

if TYPE_CHECKING:
    from pytest_mtpsweep.kindapi.run import LiveSession

# A probe record, in the order its JSON line holds the fields (then the keyed fields and
# provenance, as every record of the protocol ends).
PROBE_FIELDS = (
    "run_id", "ladder", "treatment", "cycle", "ordinal", "session", "request", "position",
    "valid", "reason", "http_status", "latency_s", "started_at",
)  # fmt: skip


@dataclass(frozen=True)
class ProbeCase:
    slot: SessionSlot
    position: int

    @property
    def id(self) -> str:
        return f"{self.slot.id}-g{self.position + 1}"


@dataclass(frozen=True)
class Probe:
    """What a probe test receives."""

    valid: bool
    reason: str | None
    http_status: int | None = None
    latency_s: float | None = None


class ProbeRun(KindRun):
    """The six methods a kind must write, and the defaults it overrides (keyed fields,
    plan.json, preflight, its multiplicity, session facts and note); the rest are KindRun's."""

    def __init__(self, ladder: Ladder, s: ProbeSettings) -> None:
        self.ladder, self.path, self.requests = ladder, s.path, s.requests

    def cases(self, plan: list[SessionSlot]) -> list[ProbeCase]:
        return [ProbeCase(slot, i) for slot in plan for i in range(self.requests)]

    def keyed(self) -> dict[str, Any]:
        return {"probe_path": self.path}

    def plan_fields(self) -> dict[str, Any]:
        return {"probe": {"path": self.path, "requests": self.requests}}

    def preflight_items(self) -> tuple[PreflightItem, ...]:
        ok = self.path.startswith("/")
        return (PreflightItem("probe_path", "a path on each target", self.path,
                              PASS if ok else FAIL),)  # fmt: skip

    def registration(self, reg: Preregistration) -> Preregistration:
        return replace(reg, multiplicity=reg.multiplicity or "one median per target; no test")

    def prereg_lines(self, reg: Preregistration) -> list[str]:
        return [
            f"- Endpoint: the latency of GET {self.path}, {self.requests} per session; the "
            "median per target.",
            f"- Multiplicity: {reg.multiplicity}",
        ]

    def _get(self, live: LiveSession) -> Probe:
        headers = live.endpoint.headers() if live.endpoint else {}
        t0 = time.perf_counter()
        try:
            r = live.http.get(f"{live.base_url}{self.path}", headers=headers)
        except httpx.HTTPError as exc:
            return Probe(False, f"{type(exc).__name__}: {exc}")
        took = time.perf_counter() - t0
        why = None if r.status_code == 200 else f"HTTP {r.status_code}"
        return Probe(why is None, why, r.status_code, took)

    def warm_up(self, live: LiveSession) -> WarmupFacts:
        got = self._get(live)
        return {"valid": got.valid, "reason": got.reason, "http_status": got.http_status,
                "ttft_s": None}  # fmt: skip

    def measure(self, live: LiveSession, case: ProbeCase) -> Outcome:
        started = utc_now_iso()
        return self._record(live, case, self._get(live), started)

    def unmeasured(self, live: LiveSession, case: ProbeCase, reason: str) -> Outcome:
        return self._record(live, case, Probe(False, reason), utc_now_iso())

    def _record(self, live: LiveSession, case: ProbeCase, got: Probe, started: str) -> Outcome:
        slot, ctx = case.slot, live.ctx
        values = {
            "run_id": ctx.run_id, "ladder": self.ladder.name, "treatment": slot.treatment,
            "cycle": slot.cycle, "ordinal": slot.ordinal, "session": slot.name,
            "request": case.position + 1, "position": case.position, "valid": got.valid,
            "reason": got.reason, "http_status": got.http_status, "latency_s": got.latency_s,
            "started_at": started,
        }  # fmt: skip
        live.writer.append({**{k: values[k] for k in PROBE_FIELDS}, **ctx.keyed,
                            **ctx.provenance()})  # fmt: skip
        if got.latency_s is not None:
            live.extra.setdefault("latencies", []).append(got.latency_s)
        return Outcome(got)

    def session_facts(self, live: LiveSession) -> dict[str, Any]:
        seen = live.extra.get("latencies") or []
        return {"probe_median_s": statistics.median(seen) if seen else None}

    def session_note(self, live: LiveSession) -> str:
        seen = live.extra.get("latencies") or []
        return f"median {statistics.median(seen) * 1000:.1f} ms" if seen else ""

    def analyse(self, run_dir: Path, request: AnalysisRequest) -> EndAnalysis:
        from .analysis import REPORT, summarise

        table = summarise(run_dir)
        if table is None:
            return EndAnalysis(
                error="no probe records were written, so there is nothing to analyse"
            )
        return EndAnalysis(table=table, report=run_dir / "analysis" / REPORT)


def prepare(ladder: Ladder, s: ProbeSettings, request: RunRequest) -> ProbeRun:
    return ProbeRun(ladder, s)


if TYPE_CHECKING:  # the part the kind's declaration names here, typed by the door
    from pytest_mtpsweep.kindapi import PrepareFn

    _prepare: PrepareFn = prepare
