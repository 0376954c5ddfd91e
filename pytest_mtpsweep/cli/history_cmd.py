"""`mtpsweep history FILE`: each gate's trend from the history file, and a drift no gate caught.

One table per comparability group (the same gate on the same host and model; never pooled:
a gate seen on two hosts is two trends, and the output says so), its last `--last` entries:
time, estimate with its interval, decision, the CUSUM statistic (analysis/drift.py), and a
sparkline. Exit 0: no drift flagged now; 1: a trend's latest gate is flagged; 2: bad input.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ..analysis.drift import THRESHOLD, Drift, Point, drift, sparkline
from ..base.recordlines import summary
from ..base.textwidth import shorten_middle
from ..state.history import GateEntry, HistoryError, read

DEFAULT_LAST = 20
MAX_LAST = 1000
EXIT_DRIFT = 1
BUILDS = 30  # characters of the builds column


def _last(text: str) -> int:
    if not text.isdigit() or not 2 <= int(text) <= MAX_LAST:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a count of gates from 2 to {MAX_LAST} (default {DEFAULT_LAST})"
        )
    return int(text)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "history",
        help="each gate's trend from a --history file, and a slow drift no gate caught",
        description="One table per gate and comparability group (host, model): time, estimate "
        "with its interval, decision, and a one-sided CUSUM of the standardised estimates that "
        "flags a run of small losses. Exit 0: no drift; 1: drift flagged at a trend's latest "
        "gate; 2: the file cannot be read.",
    )
    p.add_argument("file", metavar="FILE", help="the history file --history wrote")
    p.add_argument(
        "--last",
        type=_last,
        default=DEFAULT_LAST,
        metavar="N",
        help=f"the last N gates of each trend (2 to {MAX_LAST}, default {DEFAULT_LAST}); the "
        "false-alarm rate grows with N (docs/history.md)",
    )
    p.set_defaults(func=run)


def point(e: GateEntry) -> Point | None:
    if e.estimate_pct is None or e.lower_pct is None or e.upper_pct is None:
        return None
    return Point(e.estimate_pct, e.lower_pct, e.upper_pct, e.confidence)


def groups(entries: Sequence[GateEntry], last: int) -> dict[tuple[str, ...], list[GateEntry]]:
    """Entries by comparability group, each in time order, its last `last` kept."""
    out: dict[tuple[str, ...], list[GateEntry]] = {}
    for e in sorted(entries, key=lambda e: e.when):  # stable: file order within a second
        out.setdefault(e.group, []).append(e)
    return {g: es[-last:] for g, es in out.items()}


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:+.2f}"


def _rows(entries: Sequence[GateEntry], d: Drift) -> list[str]:
    head = (
        f"  {'time':20}  {'estimate %':>10}  {'interval %':18}  {'decision':9}  {'S':>5}  "
        f"{'builds (treatment vs baseline)':{BUILDS}}"
    )
    rows = [head]
    for e, s, flag in zip(entries, d.statistic, d.flagged, strict=True):
        interval = f"[{_pct(e.lower_pct)}, {_pct(e.upper_pct)}]" if point(e) is not None else "—"
        builds = shorten_middle(f"{e.treatment_build or '?'} vs {e.baseline_build or '?'}", BUILDS)
        rows.append(
            f"  {e.time:20}  {_pct(e.estimate_pct):>10}  {interval:18}  {e.decision:9}  "
            f"{s:5.2f}  {builds:{BUILDS}}{'  DRIFT' if flag else ''}".rstrip()
        )
    return rows


def _verdict(entries: Sequence[GateEntry], d: Drift) -> str:
    usable = sum(z is not None for z in d.z)
    if d.now and d.since is not None:
        began = entries[d.since]
        losses = len(entries) - d.since
        return (
            f"  drift: FLAGGED: S = {d.statistic[-1]:.2f} > {THRESHOLD:g} over the {losses} "
            f"gate(s) since {began.time} (run {began.run or '?'}): small losses that no "
            "single gate caught add up"
        )
    unusable = len(entries) - usable
    note = f" ({unusable} gate(s) without an interval not counted)" if unusable else ""
    return f"  drift: none flagged (S = {d.statistic[-1]:.2f}, flags above {THRESHOLD:g}){note}"


def render(entries: Sequence[GateEntry], last: int) -> tuple[list[str], bool]:
    """The report's lines and whether any trend is flagged at its latest gate."""
    grouped = groups(entries, last)
    split: dict[tuple[str, ...], int] = {}
    for g in grouped:
        split[g[:4]] = split.get(g[:4], 0) + 1
    lines: list[str] = []
    flagged = False
    for g, es in grouped.items():
        treatment, baseline, subset, metric, host, model = g
        d = drift([point(e) for e in es])
        flagged |= d.now
        lines.append(
            f"{treatment} vs {baseline or '?'} on {subset or 'all'} ({metric or 'its metric'}): "
            f"host {host or '?'}, model {model or '?'}; {len(es)} gate(s)"
        )
        if split[g[:4]] > 1:
            lines.append(
                f"  note: this gate has entries from {split[g[:4]]} host/model groups; each is "
                "its own trend (never pooled)"
            )
        lines += _rows(es, d)
        lines.append(f"  trend: {sparkline([e.estimate_pct for e in es])}")
        lines.append(_verdict(es, d))
        lines.append("")
    return lines, flagged


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise HistoryError(f"{path} is not a file; name the file --history wrote.")
    got = read(path)
    if not got.entries and got.unreadable:
        raise HistoryError(
            f"{path} holds no readable gate entry ({summary(got.unreadable)}); name the file "
            "--history wrote."
        )
    if got.skipped_bytes or got.skipped_lines:
        print(
            f"note: read the last part of {path} only (its first {got.skipped_bytes} bytes "
            f"and {got.skipped_lines} lines beyond the read bounds are left out)"
        )
    if got.unreadable:
        print(f"note: {summary(got.unreadable)} unreadable and left out; the rest are shown")
    if not got.entries:
        print(f"{path}: no gate entries yet")
        return 0
    lines, flagged = render(got.entries, args.last)
    print("\n".join(lines).rstrip())
    return EXIT_DRIFT if flagged else 0
