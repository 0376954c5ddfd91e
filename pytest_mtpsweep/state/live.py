"""A server session in progress: what the protocol and the kind's measurement share.

Below the kind interface (`kindbase.py`): a kind reads and fills it while it measures, the
protocol (`lifecycle.py`, `session.py`) opens and closes it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import rig
from ..base import schema
from ..base.errors import ReplyCut
from ..ladder.runplan import SessionSlot
from ..rig import hostnoise as host
from ..rig.bounds import ReadBound, request_s
from ..rig.specmetrics import METRICS_PATH, SpecCounters, parse_samples, request_counts
from .context import RunContext
from .rundir import RecordWriter

if TYPE_CHECKING:
    from collections.abc import Mapping

    import httpx


@dataclass
class LiveSession:
    """A session in progress: its server, its records file, and its tallies."""

    slot: SessionSlot
    proc: rig.ServerProcess | None
    writer: RecordWriter
    info: schema.SessionFile
    http: httpx.Client
    ctx: RunContext
    t0: float = field(default_factory=time.monotonic)
    measured: int = 0
    valid: int = 0
    usable: int = 0  # valid and carrying what the analysis pairs
    dead: str | None = None  # why the server is gone mid-session
    quarantine: str | None = None  # why this session is set aside
    rerun: bool = False  # this is the one re-run (after a partial census, or host-spoiled)
    quarantined_at: Path | None = None  # where quarantine/ holds it, once set aside
    extra: dict[str, Any] = field(default_factory=dict)  # the kind's own tallies

    base_url: str = ""
    endpoint: rig.Endpoint | None = None  # set when the server is attached, not launched
    spec_metrics: bool = False  # read its spec-decode counters around each request
    last_counters: SpecCounters | None = None  # as the last metered request left them
    host_start: host.CpuSample | None = None  # the machine's CPU use when measuring began
    rates: list[float] = field(default_factory=list)  # the kind's watched rate, in order
    spoiled_early: str | None = None  # the host rule's verdict that stopped it mid-session

    def request_spec(self, max_tokens: int | None = None) -> rig.RequestSpec:
        """One streamed request of this session; bounded in all by the ladder's timeouts."""
        lad = self.ctx.ladder
        tokens = max_tokens or lad.max_tokens
        return rig.RequestSpec(
            alias=lad.alias(self.slot.treatment),
            max_tokens=tokens,
            seed=lad.seed,
            temperature=lad.temperature,
            timeout_s=request_s(tokens, lad.measurement_timeout_s),
            headers=tuple(self.endpoint.headers().items()) if self.endpoint else (),
            stall_s=lad.stall_threshold_s,
        )

    @classmethod
    def new(cls, ctx: RunContext, slot: SessionSlot, rerun: bool) -> LiveSession:
        """A session about to start: its session-file facts so far and its records file."""
        info: schema.SessionFile = {
            "session": slot.name,
            "run_id": ctx.run_id,
            "preregistration_sha256": ctx.prereg_sha256,
            "ordinal": slot.ordinal,
            "treatment": slot.treatment,
            "cycle": slot.cycle,
            "device": ctx.device,
            "worker": ctx.worker,
            "alias": ctx.ladder.alias(slot.treatment),
            "planned_measurements": ctx.planned.get(slot.name, 0),
            "rerun": rerun,
            "started_at": schema.utc_now_iso(),
            **ctx.keyed,  # type: ignore[typeddict-item]
        }
        live = cls(
            slot, None, ctx.run_dir.record_writer(slot.name), info, rig.new_http_client(), ctx
        )
        live.rerun = rerun
        return live

    def counters_now(self) -> SpecCounters | None:
        """An attached server's spec-decode totals before a request (None when this session
        does not read them)."""
        if not self.spec_metrics or self.endpoint is None:
            return None
        return self.endpoint.spec_counters()[0]

    def metrics(
        self, http: httpx.Client, headers: Mapping[str, str], bound: ReadBound
    ) -> dict[str, float] | None:
        """The server's Prometheus `/metrics` now, read whole within `bound`: each metric's
        samples summed over every label set; None when it does not answer 200 in time. `http`:
        the caller's client (a sampling thread's own), `headers`: the key's."""
        import httpx

        try:
            r = bound.fetch(http, "GET", self.base_url + METRICS_PATH, headers=headers)
        except (httpx.HTTPError, ReplyCut):
            return None
        return parse_samples(r.text) if r.status_code == 200 else None

    def counted(self, before: SpecCounters | None, m: schema.Measurement) -> schema.Measurement:
        """The measurement with this request's spec-decode counts, read after its stream
        ended (`before`: `counters_now()` before the request)."""
        if not self.spec_metrics or self.endpoint is None:
            return m
        after = self.endpoint.spec_counters()[0] if before is not None else None
        if before is None or after is None:
            anomalies = {**m.anomalies, "metrics_unread": 1}
            self.last_counters = after
            return dataclasses.replace(m, anomalies=anomalies)
        counts = request_counts(before, after, self.last_counters)
        self.last_counters = after
        return dataclasses.replace(
            m,
            draft_n=counts.draft_n,
            draft_n_accepted=counts.draft_n_accepted,
            draft_source="metrics",
            metrics_moved_between=counts.moved_between,
        )
