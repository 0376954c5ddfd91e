"""The load kind's analysis: at session end and `mtpsweep analyse` of its run directories.

The edge: it reads the run's records and plan.json, calls the pure parts (`frame`,
`contrast`, `report`, `plots`) and writes RUN/analysis/: load_levels.csv (the percentiles and
throughput per treatment and level), load_blocks.csv (each block), load_contrasts.csv,
load_interaction.csv, load_crossover.csv (where a gain crosses zero) and, with matplotlib,
load_latency.png, load_throughput.png, load_gain.png, and for a trace replay load_timeline.png;
then report.md and report.html, both rendered from the one report model `report.report` builds
of what the analysis holds (no file it wrote is read back but the PNGs the page inlines).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import recordlines as rl
from ... import schema
from ...constants import DEFAULT_BOOT, DEFAULT_BOOT_SEED
from ...kindapi import EXIT_ERROR, EXIT_OK, EndAnalysis
from ...request import AnalysisRequest
from ...state.runread import RunReader

if TYPE_CHECKING:
    import argparse

    from ...analysis.sequential import CellState, LookState
    from ...report.model import Report
    from ...state.plandoc import PlanDoc
    from .capacity_stats import CapacityResult
    from .contrast import Row
    from .crossover import Crossover
    from .turns import TurnReport

OUT = "analysis"
REPORT = "report.md"


@dataclass(frozen=True)
class LoadAnalysis:
    """What one analysis produced: its terminal lines, the report, the headline."""

    lines: tuple[str, ...]
    report: Path
    headline: Mapping[str, str]
    cells: tuple[CellState, ...] = ()  # what a stop rule looks at
    model: Report | None = None  # what report.md and report.html were both rendered from


def records_of(run_dir: Path) -> tuple[list[dict[str, Any]], list[rl.Unreadable]]:
    """Every readable line of records/, and each line that is not (file:line and why)."""
    from .frame import REQUIRED, types_for

    read = RunReader(run_dir).records(schema.RECORDS_DIR, types_for, REQUIRED)
    return read.records, list(read.unreadable)


def plan_of(run_dir: Path) -> PlanDoc:
    """plan.json (empty without one; RunReadError, an AnalysisError, when it is malformed)."""
    return RunReader(run_dir).plan


def contrast_pairs(plan: PlanDoc, baseline: str) -> list[tuple[str, str]]:
    keys = list(plan.treatment_keys)
    return [(t, baseline) for t in keys if t != baseline]


def analyse(
    run_dir: Path, *, baseline: str | None = None, boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_BOOT_SEED,
) -> LoadAnalysis | str:  # fmt: skip
    """Analyse what the run directory holds now; a one-line reason when there is nothing."""
    from ...errors import AnalysisError
    from ...report.save import write_report
    from . import capacity_stats, census, contrast, crossover, frame, report, turns
    from .timeline import report_lines

    try:
        plan = plan_of(run_dir)
    except AnalysisError as exc:  # it names the file and the fix
        return str(exc)
    records, unreadable = records_of(run_dir)
    requests, levels = frame.frames(records)
    if levels.empty and unreadable:
        return (f"no level line in {run_dir / schema.RECORDS_DIR} can be read "
                f"({rl.summary(unreadable, 3)}); restore the records from a copy or run the "
                "ladder again")  # fmt: skip
    if levels.empty:
        return "no load records were written, so there is nothing to analyse"
    base = baseline or plan.analysis.baseline
    present = set(levels["treatment"])
    if base not in present:
        return (f"the baseline {base!r} has no records in {run_dir} (treatments with records: "
                f"{', '.join(sorted(present))}), so no contrast can be formed")  # fmt: skip
    pairs = [p for p in contrast_pairs(plan, base) if p[0] in present]
    order = frame.level_order(levels)
    modes: dict[str, list[str]] = {}
    for label in order:
        mode = str(levels.loc[levels["level"] == label, "mode"].iloc[0])
        modes.setdefault(mode, []).append(label)
    keys = [base, *(k for k in plan.treatment_keys if k != base)]
    table = frame.percentile_table(requests, levels, keys)
    look = look_of(plan, levels)
    level = 0.95 if look is None else look.confidence
    rows = contrast.contrast_rows(requests, levels, pairs, order, boot=boot, seed=seed,
                                  confidence=level)  # fmt: skip
    inter = contrast.interaction_rows(requests, levels, pairs, modes, boot=boot, seed=seed,
                                      confidence=level)  # fmt: skip
    load = plan.kind_fields.get("load") or {}
    endpoint = str(load.get("endpoint", "e2e"))
    if look is not None:  # the rule at the run's last look, from these records
        look = look.judged(cells(rows, inter, endpoint))
    searched = capacity_stats.analyse(load, requests, keys, pairs, boot=boot,
                                      seed=seed)  # fmt: skip
    crossings = crossover.crossovers(requests, levels, pairs, modes, endpoint, boot=boot, seed=seed)
    per_turn = turns.analyse(requests, plan, keys, base, order, boot=boot, seed=seed)
    out = run_dir / OUT
    out.mkdir(exist_ok=True)
    table.to_csv(out / "load_levels.csv", index=False)
    levels.to_csv(out / "load_blocks.csv", index=False)
    contrast.rows_frame(rows).to_csv(out / "load_contrasts.csv", index=False)
    contrast.rows_frame(inter).to_csv(out / "load_interaction.csv", index=False)
    crossover.frame(crossings).to_csv(out / "load_crossover.csv", index=False)
    if searched is not None:
        capacity_stats.frame(searched).to_csv(out / "load_capacity.csv", index=False)
    if per_turn is not None:
        per_turn.table.to_csv(out / turns.CSV, index=False)
    plots = _plots(out, table, levels, rows, order, base, crossings, searched, records, per_turn)
    sessions = list(RunReader(run_dir).sessions().facts)
    found = capacity_stats.lines(searched) if searched is not None else []
    where = [str(u) for u in unreadable]
    # where the stop rule stopped (or why it went on) opens the report, under the title
    model = report.report(plan, requests, table, levels, rows, inter, plots, base, sessions,
                          crossings=crossings, capacity=found, unreadable=where,
                          replay=report_lines(records, plan), turns=per_turn, records=records,
                          look=look.sentence() if look is not None else "")  # fmt: skip
    try:
        write_report(model, out, run_dir)
    except AnalysisError as exc:
        return str(exc)
    lines = [*found, *report.headline_lines(rows, inter, endpoint)]
    lines += per_turn.headline if per_turn is not None else ()
    lines += [crossover.sentence(c, report.NAMES[endpoint]) for c in crossings]
    lines += census.terminal_notes(requests, levels, where)
    headline = {f"mtpsweep.load.{t}": line for (t, _), line in zip(pairs, lines, strict=False)}
    if look is not None:
        lines.append(look.sentence())
    return LoadAnalysis(tuple(lines), out / REPORT, headline, cells(rows, inter, endpoint), model)


def look_of(plan: PlanDoc, levels: Any) -> LookState | None:
    """The sequential look the records reached (None: fixed cycles), not yet judged; stop.json
    is never read: the looks come from the records (a malformed design is refused when the
    reader parses plan.json)."""
    from ...analysis.sequential import look_state

    cycles = int(levels["cycle"].max()) if len(levels) else 1
    return look_state(plan.stop, cycles)


def cells(rows: Sequence[Row], inter: Sequence[Row], endpoint: str) -> tuple[CellState, ...]:
    """The headline cells a stop rule looks at: the headline endpoint's gain per treatment and
    level, and its interaction(s); decided when the interval excludes no gain."""
    from ...analysis.sequential import CellState

    out = []
    for r in [*rows, *inter]:
        if r.endpoint != endpoint:
            continue
        decision = "faster" if r.ci_low > 0 else "slower" if r.ci_high < 0 else "inconclusive"
        half = (r.ci_high - r.ci_low) / 2.0
        out.append(CellState(f"{r.treatment}:{r.level}", decision, half))
    return tuple(out)


def interim(run_dir: Path, request: AnalysisRequest) -> tuple[CellState, ...]:
    """What a [stop] rule looks at: the headline cells of the records so far."""
    done = analyse(run_dir, baseline=request.baseline, boot=request.boot, seed=request.seed)
    return () if isinstance(done, str) else done.cells


def _plots(
    out: Path, table: Any, levels: Any, rows: Sequence[Row], order: list[str], baseline: str,
    crossings: Sequence[Crossover] = (), searched: CapacityResult | None = None,
    records: Sequence[Mapping[str, Any]] = (),
    per_turn: TurnReport | None = None,
) -> list[str]:  # fmt: skip
    """Save the plots where matplotlib is there; their file names (none without it)."""
    from ...report.images import available as plotting_available
    from . import plots, turns
    from .timeline import timeline_figure

    if not plotting_available() or table.empty:
        return []
    figures = {
        "load_latency.png": plots.latency_figure(table, order),
        "load_throughput.png": plots.throughput_figure(table, levels, order),
        "load_gain.png": plots.gain_figure(rows, order, baseline, crossings),
        "load_capacity.png": plots.capacity_figure(searched) if searched is not None else None,
        "load_timeline.png": timeline_figure(records),  # a trace replay's, else None
        turns.PNG: turns.figure(per_turn.table) if per_turn is not None else None,
    }
    saved = []
    for name, fig in figures.items():
        if fig is not None:
            fig.savefig(out / name, dpi=110)
            saved.append(name)
    return saved


def analyse_at_end(run_dir: Path, request: AnalysisRequest) -> EndAnalysis:
    done = analyse(run_dir, baseline=request.baseline, boot=request.boot, seed=request.seed)
    if isinstance(done, str):
        return EndAnalysis(error=done)
    return EndAnalysis(table="\n".join(done.lines), report=done.report, headline=done.headline)


def analyse_command(
    args: argparse.Namespace, runs: Sequence[Path], plans: Sequence[PlanDoc]
) -> int:
    """`mtpsweep analyse RUN...` of load runs: each run's headline and report again."""
    status = EXIT_OK
    if getattr(args, "expect", None):
        print("mtpsweep analyse: error: a load run has no --expect gates; drop --expect",
              file=sys.stderr)  # fmt: skip
        return EXIT_ERROR
    for run_dir in runs:
        done = analyse(run_dir, baseline=args.baseline, boot=args.boot, seed=args.boot_seed)
        if isinstance(done, str):
            print(f"mtpsweep analyse: error: {run_dir}: {done}", file=sys.stderr)
            status = EXIT_ERROR
            continue
        print("\n".join(done.lines))
    return status
