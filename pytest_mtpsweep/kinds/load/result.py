"""What a load test receives (no imports beyond the standard library: a user's test file
imports it for its type hint)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LevelResult:
    """One level block, recorded; valid when every request of it completed within the level's
    timeout. Its figures are the block's own (its level line holds the rest)."""

    valid: bool
    reason: str | None
    level: str
    requests: int = 0
    completed: int = 0
    ttft_p50_ms: float | None = None
    e2e_p50_ms: float | None = None
    output_tok_s: float | None = None
    queued: int | None = None  # requests sent while every slot held another (None: no count)
    lag_flag: str | None = None  # why the client's own lag may show in these latencies
