"""A busy host found mid-session or at a re-run, not after a whole session's measurements.

Within a session: once the kind's watched rate (Outcome.rate, a decode rate) falls far below the
session's own reference for several measurements in a row, the host rule is asked about the
session so far; if it says spoiled, the session stops there, spoiled, and the rest of its cases
are recorded as not measured. A re-run that meets a busy host (before it starts, or stopped so
mid-session) stops the run with exit 2, as a server that crashes at load twice does: the records
are kept (the attempts in quarantine/) and --resume runs the session again.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ..ladder.values import HostRule
from ..rig import busyhost
from ..rig import hostnoise as host
from ..state.live import LiveSession
from . import hostrule

# "Far below": under a third of the reference, three measurements in a row. The failure this
# is for slows decode by ~40x (0.9 tok/s where the idle rate is ~35, two server threads on two
# cores with one core taken). Honest spread stays well inside 3x: prompts differ in draft
# acceptance by up to ~2x under speculative decoding, and one slow request (a page-in, a GC
# pause) is one, not three in a row. And the rate only asks the question: the session stops only
# when the host rule's own witnesses say spoiled, so a slow but honest setting runs to its end.
SLOW_FACTOR = 3.0
SLOW_RUN = 3
FIRST = 3  # without a calibration, the session's first measurements are its reference


def reference(
    calibration_tps: object, rates: Sequence[float], earlier_tps: float | None = None
) -> float | None:
    """The rate the session is held to: its start calibration (the same prompt each session,
    measured before the first case), or the run's best earlier calibration if higher (a host
    that turned busy before this session began slows its own calibration too); without one,
    the median of its first FIRST measured rates."""
    if isinstance(calibration_tps, int | float) and calibration_tps > 0:
        return max(float(calibration_tps), earlier_tps or 0.0)
    if len(rates) < FIRST:
        return None
    return float(statistics.median(rates[:FIRST]))


def calibration_of(info: Mapping[str, Any]) -> float | None:
    """A session's start calibration rate, where it has one."""
    tps = (info.get("calibration") or {}).get("start_tps")
    return float(tps) if isinstance(tps, int | float) and tps > 0 else None


def slow(rates: Sequence[float], ref: float | None, calibrated: bool) -> bool:
    """The last SLOW_RUN rates are each under ref / SLOW_FACTOR (past the reference's own)."""
    own = 0 if calibrated else FIRST
    if ref is None or len(rates) - own < SLOW_RUN:
        return False
    return all(r < ref / SLOW_FACTOR for r in rates[-SLOW_RUN:])


def watch(
    live: LiveSession, rate: float | None, rule: HostRule, earlier_tps: float | None = None
) -> str | None:
    """Add the measurement's rate; when the session has gone slow and the host rule's witnesses
    so far say spoiled, the verdict (the host rule's sentence) with how far the session got.
    `earlier_tps`: the best start calibration of the run's earlier sessions the host left alone."""
    if rate is None or live.host_start is None or live.spoiled_early is not None:
        return None
    live.rates.append(rate)
    cal = calibration_of(live.info)
    ref = reference(cal, live.rates, earlier_tps)
    if not slow(live.rates, ref, cal is not None):
        return None
    pids = [live.proc.pid] if live.proc else []
    roots = (live.ctx.run_root_pid,) if live.ctx.run_root_pid else ()
    seen = hostrule.witnesses({"host": host.noise(live.host_start, host.sample(pids, roots))})
    verdict = hostrule.verdict(seen, rule)
    if verdict.spoiled is None:
        return None
    assert ref is not None
    shown = ", ".join(f"{r:.1f}" for r in live.rates[-SLOW_RUN:])
    return (
        f"{verdict.spoiled} (stopped after {live.measured} of "
        f"{live.info.get('planned_measurements', '?')} measurements: the last {SLOW_RUN} rates "
        f"{shown} were under 1/{SLOW_FACTOR:g} of the session's reference {ref:.1f})"
    )


def busy_marker(slot: str, why: str) -> str:
    """The one line a run stops with when a re-run meets the busy host again."""
    return (
        f"** HOST-BUSY={slot}: {why.rstrip('.')}; the session's attempts are kept in quarantine/, so "
        "continue with --resume once the host is quiet."
    )


def busy_before_rerun(rule: HostRule, run_root: int | None) -> str | None:
    """The sentence a busy host is refused with before a re-run starts (None: quiet)."""
    roots = busyhost.run_roots((run_root,) if run_root else ())
    quiet = busyhost.wait_for_quiet(rule, 0.0, roots)
    if not quiet.reasons:
        return None
    return busyhost.sentence(quiet.load, list(quiet.reasons), "before the re-run")
