"""What one invocation asks of a run, in domain terms (built by `options.run_request`).

Separate from options.py so that a pytest process without --ladder never builds these classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.constants import BOOT
from .gate import Gate


@dataclass(frozen=True)
class PreflightRequest:
    """The command line's say over preflight."""

    only: bool = False
    waive: frozenset[str] = frozenset()
    against: Path | None = None
    verify_digests: bool = False
    server_build: str | None = None
    wait_for_quiet_s: float = 0.0  # host_quiet: how long to wait for a quiet host (0: no wait)


@dataclass(frozen=True)
class AnalysisRequest:
    """The command line's say over the session-end analysis."""

    enabled: bool = True
    baseline: str | None = None
    boot: int = BOOT.default
    seed: int = BOOT.seed
    expect: tuple[str, ...] = ()  # --expect as typed: parsed into `gates`, read by nothing else
    gates: tuple[Gate, ...] = ()  # each --expect parsed by the kind's grammar (protocol.run)
    history: Path | None = None  # --history: each gate's verdict appended there


@dataclass(frozen=True)
class RunRequest:
    """One invocation's wishes, in domain terms: which ladder, what it overrides, how to run."""

    ladder: str
    search_dirs: tuple[Path, ...]
    cwd: Path
    invocation: tuple[str, ...]
    overrides: Mapping[str, Any] = field(default_factory=dict)  # dotted ladder field -> value
    # the kinds' own options that were given and override no ladder field, by name
    kind_options: Mapping[str, Any] = field(default_factory=dict)
    prompts_dir: Path | None = None
    server_bin: str | None = None
    base_url: str | None = None  # --base-url: attach the ladder's one treatment there
    run_dir: Path | None = None
    resume: Path | None = None
    warmup: bool = True
    calibration: bool = True
    deadline: str | None = None
    time_budget: str | None = None
    preflight: PreflightRequest = field(default_factory=PreflightRequest)
    analysis: AnalysisRequest = field(default_factory=AnalysisRequest)
