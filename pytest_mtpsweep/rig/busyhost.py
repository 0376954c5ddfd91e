"""A busy host, found before it costs a session: what the run's server would compete with now.

Over a short window: other processes' share of all cores (the machine's busy CPU time less the
run's own process trees, as the host rule's session witness counts it in rig/host.py), the CPU
stall some task suffered (Linux PSI; the load average where the kernel has none), and the
processes that used the most. It is judged by the host rule's own thresholds ([host_rule]
cpu_noise_pct and cpu_stall_pct, ladder.model.HostRule), so preflight, the in-session stop and
the re-run's check refuse exactly what the rule would set aside after a whole session.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import psutil

from ..ladder.values import HostRule
from ..wishes.options import MAX_WAIT_FOR_QUIET_S
from . import hostnoise as host

# Two seconds: psutil's CPU times tick at 10 ms, so a one-core hog reads within a percent, and
# the check costs a run two seconds. At most 30 s, a window that already reads as a wait.
WINDOW_S = 2.0
MAX_WINDOW_S = 30.0
MAX_WAIT_S = MAX_WAIT_FOR_QUIET_S  # --wait-for-quiet's bound, checked when the option is read
TOP = 3  # processes named in the sentence
FIX = (
    "stop them, or pass --wait-for-quiet=SECONDS to wait for a quiet host, or raise "
    "[host_rule] cpu_noise_pct and cpu_stall_pct in the ladder"
)


@dataclass(frozen=True)
class Hog:
    """A process outside the run and the CPU it used in the window (% of one core, as top)."""

    pid: int
    name: str
    cpu_pct: float


@dataclass(frozen=True)
class HostLoad:
    """What other processes used of the machine over one window."""

    window_s: float
    other_cpu_pct: float  # % of all cores, as the host rule's cpu_noise_pct
    # % of the window some task waited for a CPU, the share other processes' CPU caused
    # (None: neither PSI nor a load average here)
    stall_pct: float | None
    stall_source: str  # "PSI" or "load average"; "" when stall_pct is None
    top: tuple[Hog, ...] = ()

    def describe(self) -> str:
        stall = (
            "no stall witness"
            if self.stall_pct is None
            else (f"CPU stall {self.stall_pct:.1f}% ({self.stall_source})")
        )
        return (
            f"other processes {self.other_cpu_pct:.1f}% of the CPU over {self.window_s:.1f} s; "
            f"{stall}; top: {top_text(self.top)}"
        )


def run_roots(extra: Iterable[int] = ()) -> tuple[int, ...]:
    """The roots of the run's own process trees: this process, `extra` (an xdist controller),
    and the outermost unbroken chain of ancestors that run this same Python (pytest, its xdist
    controller and workers, an outer pytest that started this one): their workers and servers
    are the run or its test suite, not a host that competes with it."""
    roots = [os.getpid(), *extra]
    try:
        me = os.path.realpath(sys.executable)
        proc = psutil.Process().parent()
        while proc is not None and proc.pid > 1 and os.path.realpath(proc.exe()) == me:
            roots.append(proc.pid)
            proc = proc.parent()
    except (psutil.Error, OSError):
        pass  # an ancestor we may not inspect ends the chain
    return tuple(dict.fromkeys(roots))


def _tree(roots: Iterable[int]) -> set[int]:
    pids: set[int] = set()
    for pid in roots:
        try:
            root = psutil.Process(pid)
            pids.add(pid)
            pids.update(p.pid for p in root.children(recursive=True))
        except psutil.Error:
            continue
    return pids


def _cpu_by_process(ours: set[int]) -> dict[int, tuple[str, float]]:
    out: dict[int, tuple[str, float]] = {}
    for proc in psutil.process_iter(["name", "cpu_times"]):
        if proc.pid in ours:
            continue
        times = proc.info.get("cpu_times")
        if times is None:  # another user's process we may not read
            continue
        out[proc.pid] = (str(proc.info.get("name") or "?"), times.user + times.system)
    return out


def _hogs(
    start: dict[int, tuple[str, float]], end: dict[int, tuple[str, float]], span: float
) -> tuple[Hog, ...]:
    used = [
        Hog(pid, name, 100.0 * (cpu - start[pid][1]) / span)
        for pid, (name, cpu) in end.items()
        if pid in start and cpu > start[pid][1]
    ]
    used.sort(key=lambda h: -h.cpu_pct)
    return tuple(h for h in used[:TOP] if h.cpu_pct >= 1.0)


def measure(
    window_s: float = WINDOW_S,
    roots: Iterable[int] = (),
    sleep: Callable[[float], None] = time.sleep,
) -> HostLoad:
    """Other processes' CPU and the CPU stall over `window_s` (bounded by MAX_WINDOW_S)."""
    window_s = min(max(window_s, 0.1), MAX_WINDOW_S)
    roots = tuple(roots) or run_roots()
    ours = _tree(roots)
    before = _cpu_by_process(ours)
    start = host.sample((), roots)
    sleep(window_s)
    end = host.sample((), roots)
    after = _cpu_by_process(ours | _tree(roots))
    span = max(end.t - start.t, 1e-9)
    other_s, other_pct = host.others(start, end)
    busy = max(end.busy_s - start.busy_s, 0.0)
    # A stall is only the server's trouble when others want the cores: blame others for the
    # share of the busy time that was theirs (the run's own workers may stall each other).
    share = min(other_s / busy, 1.0) if busy > 0 else 0.0
    stall, source = host.stall_pct(start, end, "cpu"), "PSI"
    if stall is None:
        stall, source = _load_stall(end.load[0]), "load average"
    return HostLoad(
        window_s=span,
        other_cpu_pct=other_pct,
        stall_pct=stall * share,
        stall_source=source,
        top=_hogs(before, after, span),
    )


def _load_stall(load1: float) -> float:
    """Where there is no PSI: the share of runnable tasks that found no core (1-minute load)."""
    cores = psutil.cpu_count() or 1
    if load1 <= 0:
        return 0.0
    return 100.0 * max(load1 - cores, 0.0) / load1


def over(load: HostLoad, rule: HostRule) -> list[str]:
    """Each host-rule threshold the load is over (strictly, as the rule judges a session)."""
    out = []
    if load.other_cpu_pct > rule.cpu_noise_pct:
        out.append(
            f"other processes used {load.other_cpu_pct:.1f}% of the CPU "
            f"(over cpu_noise_pct {rule.cpu_noise_pct:g})"
        )
    if load.stall_pct is not None and load.stall_pct > rule.cpu_stall_pct:
        out.append(
            f"some task waited for a CPU {load.stall_pct:.1f}% of the time, by "
            f"{load.stall_source} (over cpu_stall_pct {rule.cpu_stall_pct:g})"
        )
    return out


def top_text(top: Iterable[Hog]) -> str:
    named = [f"pid {h.pid} {h.name} ({h.cpu_pct:.0f}% of a core)" for h in top]
    return ", ".join(named) or "no one process above 1% of a core"


def sentence(load: HostLoad, reasons: list[str], where: str = "before the run") -> str:
    """The one sentence a busy host is refused with: what, the top processes, the fix."""
    return (
        f"the host is busy {where}: {'; '.join(reasons)} over {load.window_s:.1f} s; top "
        f"processes: {top_text(load.top)}; {FIX}."
    )


@dataclass(frozen=True)
class Quiet:
    """The last window read, what it is over (empty: quiet), and how long was waited."""

    load: HostLoad
    reasons: tuple[str, ...]
    waited_s: float


def wait_for_quiet(
    rule: HostRule,
    wait_s: float = 0.0,
    roots: Iterable[int] = (),
    on_wait: Callable[[str], None] | None = None,
    window_s: float = WINDOW_S,
    clock: Callable[[], float] = time.monotonic,
) -> Quiet:
    """Read the host; while it is busy and `wait_s` (at most MAX_WAIT_S) has not passed, say
    so through `on_wait` and read it again. Each read takes `window_s`, so it ends by
    `wait_s` + `window_s`."""
    wait_s = min(max(wait_s, 0.0), MAX_WAIT_S)
    roots = tuple(roots)
    t0 = clock()
    while True:
        load = measure(window_s, roots)
        reasons = over(load, rule)
        waited = clock() - t0
        if not reasons or waited >= wait_s:
            return Quiet(load, tuple(reasons), waited)
        if on_wait is not None:
            on_wait(
                f"waiting for a quiet host ({waited:.0f} of {wait_s:g} s): {'; '.join(reasons)}; "
                f"top: {top_text(load.top)}"
            )
