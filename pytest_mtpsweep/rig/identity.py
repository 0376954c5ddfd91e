"""Witnesses of what a running server is: its real argv, /props, and its memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import psutil

from ..base.errors import ReplyCut
from . import bounds, gpu
from .bounds import ReadBound


def read_cmdline(pid: int) -> list[str]:
    """The argv the kernel actually holds for the process, not what we meant to pass."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        try:
            return [str(a) for a in psutil.Process(pid).cmdline()]
        except psutil.Error:
            return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def props(base_url: str) -> dict[str, Any]:
    """`/props`, or an empty dict for servers that lack it."""
    try:
        r = bounds.get(f"{base_url}/props", ReadBound.probe(10.0))
        data = r.json() if r.status_code == 200 else {}
    except (httpx.HTTPError, ReplyCut, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def props_diff(before: dict[str, Any], after: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two /props snapshots."""
    changed: list[str] = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            changed += props_diff(a, b, f"{prefix}{key}.")
        elif a != b:
            changed.append(f"{prefix}{key}")
    return changed


def rss_bytes(pid: int) -> int | None:
    """Resident memory of the server and its children."""
    try:
        p = psutil.Process(pid)
        return int(p.memory_info().rss) + sum(
            int(c.memory_info().rss) for c in p.children(recursive=True)
        )
    except psutil.Error:
        return None


def gpu_used_mib() -> int | None:
    """GPU memory in use over all NVIDIA GPUs (None without a driver)."""
    return gpu.used_mib()


def host_available_mib() -> int:
    return int(psutil.virtual_memory().available) // 2**20
