"""Energy per output token of a block, where NVML tells it: the GPUs' total-energy counter read
just before the block's client starts and just after it returns (never inside its timed loop).

The GPUs are the session's: its `CUDA_VISIBLE_DEVICES` where a worker is pinned to devices
given as indices, else every GPU NVML sees. A server that is not on this host has no reading.
The block's energy includes its warm-up requests, so the tokens divided by are the warm-up's
and the measured requests' together.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ....kindapi.rig import Energy
from ..records import J_PER_TOKEN

Reader = Callable[[tuple[int, ...] | None], Energy]


def devices(device: str) -> tuple[int, ...] | None:
    """GPU indices from a CUDA_VISIBLE_DEVICES value ("" or UUIDs: None, every GPU)."""
    parts = [p.strip() for p in device.split(",") if p.strip()]
    return tuple(int(p) for p in parts) if parts and all(p.isdigit() for p in parts) else None


def read(device: str, local: bool, reader: Reader = Energy.read) -> Energy:
    if not local:
        return Energy(None, "the server is not on this host")
    return reader(devices(device))


def block_fields(before: Energy, after: Energy, tokens: int) -> dict[str, Any]:
    """The level line's energy fields: joules, joules per output token, and the scope or the
    reason there is none (a counter that went back, or no tokens, is no reading)."""
    if before.mj is None or after.mj is None:
        return {"energy_j": None, J_PER_TOKEN: None, "energy": before.scope}
    joules = (after.mj - before.mj) / 1000.0
    if joules < 0 or tokens <= 0 or not math.isfinite(joules):
        why = "the energy counter went back" if joules < 0 else "no output tokens"
        return {"energy_j": None, J_PER_TOKEN: None, "energy": f"{before.scope}: {why}"}
    return {"energy_j": joules, J_PER_TOKEN: joules / tokens, "energy": before.scope}
