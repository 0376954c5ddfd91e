"""The server's own view of a level: how many slots were busy and how many requests waited,
sampled from llama-server's `/slots` and its (or vLLM's) Prometheus `/metrics` where enabled,
and its spec-decode totals before and after the block.

A thread samples every `period_s` while the level runs (a GET each, a few per second: on the
client's CPU that is small beside the streams, and the client's own lag monitor would show it);
everything is read outside the client's timed loop, which runs on its own event loop.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ....kindapi import ReplyCut
from ....kindapi.rig import ReadBound

if TYPE_CHECKING:
    import httpx

    from ....kindapi.run import LiveSession

SLOTS_PATH = "/slots"
METRICS_PATH = "/metrics"
# (running, waiting) gauges by server: llama-server's, vLLM's
GAUGES = (
    ("llamacpp:requests_processing", "llamacpp:requests_deferred"),
    ("vllm:num_requests_running", "vllm:num_requests_waiting"),
)
# (drafted, accepted) token totals by server
SPEC_TOTALS = (
    (
        "llamacpp:spec_decode_num_draft_tokens_total",
        "llamacpp:spec_decode_num_accepted_tokens_total",
    ),
    ("vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total"),
)
PERIOD_S = 0.25
PROBE = ReadBound.probe(2.0)  # one GET of /slots or /metrics, read whole


@dataclass(frozen=True)
class Sources:
    """What this server offers: a `/slots` list, and which metrics family (None: neither)."""

    slots: bool
    gauges: tuple[str, str] | None
    spec: tuple[str, str] | None

    def describe(self) -> str:
        found = [p for p, on in ((SLOTS_PATH, self.slots), (METRICS_PATH, self.gauges)) if on]
        return " and ".join(found) if found else "none (no /slots, no /metrics gauges)"


def busy_slots(doc: Any) -> int | None:
    """How many of llama-server's `/slots` entries are processing (None: not that shape)."""
    if not isinstance(doc, list) or not all(isinstance(s, dict) for s in doc):
        return None
    return sum(bool(s.get("is_processing")) for s in doc)


def pick(
    samples: Mapping[str, float], families: tuple[tuple[str, str], ...]
) -> tuple[str, str] | None:
    return next((f for f in families if f[0] in samples and f[1] in samples), None)


def _get(http: httpx.Client, url: str, headers: Mapping[str, str]) -> httpx.Response | None:
    import httpx

    try:
        r = PROBE.fetch(http, "GET", url, headers=headers)
    except (httpx.HTTPError, ReplyCut):
        return None
    return r if r.status_code == 200 else None


def discover(http: httpx.Client, live: LiveSession, headers: Mapping[str, str]) -> Sources:
    """Which occupancy sources this server answers, asked once per session."""
    r = _get(http, live.base_url + SLOTS_PATH, headers)
    try:
        slots = r is not None and busy_slots(r.json()) is not None
    except ValueError:
        slots = False
    samples = live.metrics(http, headers, PROBE) or {}
    return Sources(slots, pick(samples, GAUGES), pick(samples, SPEC_TOTALS))


def spec_totals(
    http: httpx.Client, live: LiveSession, headers: Mapping[str, str], sources: Sources
) -> tuple[float, float] | None:
    """(drafted, accepted) token totals now, or None."""
    if sources.spec is None:
        return None
    s = live.metrics(http, headers, PROBE)
    if s is None:
        return None
    drafted, accepted = sources.spec
    return (s[drafted], s[accepted]) if drafted in s and accepted in s else None


@dataclass
class Sampler:
    """Samples occupancy in a thread from `start()` to `stop()`."""

    http: httpx.Client
    live: LiveSession
    headers: Mapping[str, str]
    sources: Sources
    period_s: float = PERIOD_S
    busy: list[int] = field(default_factory=list)
    running: list[float] = field(default_factory=list)
    waiting: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="load-occupancy", daemon=True)

    def start(self) -> Sampler:
        if self.sources.slots or self.sources.gauges:
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            if self.sources.slots:
                r = _get(self.http, self.live.base_url + SLOTS_PATH, self.headers)
                try:
                    n = busy_slots(r.json()) if r is not None else None
                except ValueError:
                    n = None
                if n is not None:
                    self.busy.append(n)
            if self.sources.gauges:
                s = self.live.metrics(self.http, self.headers, PROBE)
                if s is not None:
                    run, wait = self.sources.gauges
                    if run in s and wait in s:
                        self.running.append(s[run])
                        self.waiting.append(s[wait])

    def stop(self) -> dict[str, Any]:
        """What was seen: the source, the sample counts, the most busy and waiting."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
        return summary(self.sources, self.busy, self.running, self.waiting, self.period_s)


def summary(
    sources: Sources, busy: list[int], running: list[float], waiting: list[float], period_s: float
) -> dict[str, Any]:
    """The occupancy facts of one level (pure)."""
    out: dict[str, Any] = {"source": sources.describe(), "period_s": period_s}
    if sources.slots:
        out |= {
            "slots_samples": len(busy),
            "busy_slots_max": max(busy, default=None),
            "busy_slots_mean": sum(busy) / len(busy) if busy else None,
        }
    if sources.gauges:
        out |= {
            "metrics_samples": len(running),
            "running_max": max(running, default=None),
            "waiting_max": max(waiting, default=None),
        }
    return out
