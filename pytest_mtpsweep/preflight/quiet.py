"""Preflight's `host_quiet`: the host is quiet enough that the host rule would not set the first
session aside, read now (rig/busyhost.py); with --wait-for-quiet, waited for up to a bound."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..ladder.values import HostRule
from ..rig import busyhost
from .items import FAIL, PASS, SKIP, PreflightItem, make_item

ITEM = "host_quiet"


@dataclass(frozen=True)
class QuietCheck:
    """What `host_quiet` needs: the rule (None: not applied, `off` says why), how long it may
    wait, who hears about the wait, and the roots of the run's own process trees."""

    rule: HostRule | None
    off: str = ""
    wait_s: float = 0.0
    on_wait: Callable[[str], None] | None = None
    roots: Sequence[int] = ()


def check_host_quiet(check: QuietCheck | None) -> PreflightItem:
    """Other processes' CPU and the CPU stall over a short window, against the host rule's
    cpu_noise_pct and cpu_stall_pct; a busy host fails the item with the sentence that names
    the top processes and the fix."""
    if check is None or check.rule is None:
        why = check.off if check is not None and check.off else "the host rule is not applied"
        return make_item(ITEM, "the host rule's thresholds", f"skipped: {why}", SKIP)
    rule = check.rule
    expected = (
        f"others <= {rule.cpu_noise_pct:g}% of the CPU, CPU stall <= {rule.cpu_stall_pct:g}% "
        "(host rule)"
    )
    quiet = busyhost.wait_for_quiet(
        rule, check.wait_s, check.roots or busyhost.run_roots(), check.on_wait
    )
    observed = quiet.load.describe()
    if check.wait_s > 0:
        observed += f"; waited {quiet.waited_s:.0f} of {check.wait_s:g} s for quiet"
    if not quiet.reasons:
        return make_item(ITEM, expected, observed, PASS, stable="quiet")
    fix = busyhost.sentence(quiet.load, list(quiet.reasons))
    return make_item(ITEM, expected, observed, FAIL, fix=fix[0].upper() + fix[1:], stable="busy")
