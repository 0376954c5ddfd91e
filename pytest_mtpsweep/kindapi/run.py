"""The door's run side: the live session a kind measures on, the run's context, the warm-up
prompt, the preflight rows a kind adds, and an attached server's counters around a request."""

from __future__ import annotations

from ..preflight import check_prompt_set
from ..preflight.items import FAIL, PASS, PreflightItem
from ..protocol.attach import counted, counters_now
from ..state.context import WARMUP_PROMPT, WARMUP_TOKENS, RunContext
from ..state.live import LiveSession

__all__ = [
    "FAIL",
    "PASS",
    "WARMUP_PROMPT",
    "WARMUP_TOKENS",
    "LiveSession",
    "PreflightItem",
    "RunContext",
    "check_prompt_set",
    "counted",
    "counters_now",
]  # fmt: skip
