"""The load kind's analysis as a result: `compute` reads the run's records and plan.json and
calls the pure parts (`frame`, `contrast`, `report`, `plots`), writing nothing. Its tables are
load_levels.csv (the percentiles and throughput per treatment and level), load_blocks.csv
(each block), load_contrasts.csv, load_interaction.csv, load_crossover.csv (where a gain crosses
zero); its figures, as data, load_latency.png, load_throughput.png, load_gain.png, and for a
trace replay load_timeline.png; its report model what report.md and report.html are both
rendered from. `analyse` saves it into RUN/analysis/ through the one writer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....kindapi import BOOT, AnalysisError
from ....kindapi.analysis import CellState, Decision, LookState
from ....kindapi.records import RunReader, schema
from ....kindapi.records import recordlines as rl
from ....kindapi.report import AnalysisResult, Figure, FigureData
from ..planfields import check_plan
from ..report import plots
from ..report import sections as report
from ..report.listings import PLOTS
from ..report.timeline import replayed, report_lines, timeline_figure
from . import capacity_stats, census, contrast, crossover, frame, turns
from .frame import REQUIRED, SESSION_TYPES, types_for

if TYPE_CHECKING:
    from ....kindapi.analysis import CellState, Decision, LookState
    from ....kindapi.records import PlanDoc
    from ....kindapi.report import AnalysisResult, FigureData, Report
    from .capacity_stats import CapacityResult, Ratio
    from .contrast import Row
    from .crossover import Crossover
    from .turns import TurnReport

OUT = "analysis"
# the margin a run written before load recorded its own in plan.json was judged with: the
# ladder's default then (`[analysis] margin_pct`), as decode keeps its own for its old runs
DEFAULT_MARGIN_PCT = 1.0
REPORT = "report.md"


@dataclass(frozen=True)
class LoadAnalysis:
    """What one analysis produced: its terminal lines, the report, the headline."""

    lines: tuple[str, ...]
    report: Path
    headline: Mapping[str, str]
    cells: tuple[CellState, ...] = ()  # what a stop rule looks at
    model: Report | None = None  # what report.md and report.html were both rendered from
    rows: tuple[Row, ...] = ()  # the contrast rows, what --expect not-slower gates read
    endpoint: str = "e2e"  # the headline endpoint
    level: float = 0.95  # the rows' two-sided level (a [stop] look's own)
    ratios: tuple[Ratio, ...] = ()  # a capacity search's ratios, what capacity gates read


@dataclass(frozen=True)
class _Computed:
    """A result with what the not-slower gates read beside it (an internal step's value)."""

    result: AnalysisResult
    rows: tuple[Row, ...]
    endpoint: str
    level: float
    ratios: tuple[Ratio, ...] = ()


def records_of(run_dir: Path) -> tuple[list[dict[str, Any]], list[rl.Unreadable]]:
    """Every readable line of records/, and each line that is not (file:line and why)."""

    read = RunReader(run_dir).records(schema.RECORDS_DIR, types_for, REQUIRED)
    return read.records, list(read.unreadable)


def plan_of(run_dir: Path) -> PlanDoc:
    """plan.json ({} without one; RunReadError, an AnalysisError, when it is malformed or its
    load block holds what no load ladder could set)."""

    plan = RunReader(run_dir).plan
    check_plan(plan, f"plan file {run_dir / schema.PLAN_FILE}")
    return plan


def contrast_pairs(plan: PlanDoc, baseline: str) -> list[tuple[str, str]]:
    keys = list(plan.treatment_keys)
    return [(t, baseline) for t in keys if t != baseline]


@dataclass(frozen=True)
class _Read:
    """What the analysis reads of a run directory, framed (an internal step's value)."""

    plan: PlanDoc
    records: list[dict[str, Any]]
    unreadable: list[rl.Unreadable]
    requests: Any  # DataFrame: a request a row
    levels: Any  # DataFrame: a level block a row
    base: str
    pairs: list[tuple[str, str]]
    order: list[str]
    modes: dict[str, list[str]]
    keys: list[str]


def _read(run_dir: Path, baseline: str | None) -> _Read:
    """The plan, the records and their frames, the baseline and the contrasts to form;
    AnalysisError in one line when there is nothing to analyse."""

    plan = plan_of(run_dir)  # its AnalysisError names the file and the fix
    records, unreadable = records_of(run_dir)
    requests, levels = frame.frames(records)
    if levels.empty and unreadable:
        raise AnalysisError(
            f"no level line in {run_dir / schema.RECORDS_DIR} can be read "
            f"({rl.summary(unreadable, 3)}); restore the records from a copy or run the "
            "ladder again"
        )
    if levels.empty:
        raise AnalysisError("no load records were written, so there is nothing to analyse")
    base = baseline or plan.analysis.baseline
    present = set(levels["treatment"])
    if base not in present:
        raise AnalysisError(
            f"the baseline {base!r} has no records in {run_dir} (treatments with records: "
            f"{', '.join(sorted(present))}), so no contrast can be formed"
        )
    order = frame.level_order(levels)
    modes: dict[str, list[str]] = {}
    for label in order:
        mode = str(levels.loc[levels["level"] == label, "mode"].iloc[0])
        modes.setdefault(mode, []).append(label)
    keys = [base, *(k for k in plan.treatment_keys if k != base)]
    pairs = [p for p in contrast_pairs(plan, base) if p[0] in present]
    return _Read(plan, records, unreadable, requests, levels, base, pairs, order, modes, keys)


def compute(
    run_dir: Path,
    *,
    baseline: str | None = None,
    boot: int = BOOT.default,
    seed: int = BOOT.seed,
) -> AnalysisResult:
    """The analysis of what the run directory holds now, as a result; it writes nothing
    (AnalysisError when there is nothing to analyse). `AnalysisResult.save` saves it."""
    return compute_parts(run_dir, baseline=baseline, boot=boot, seed=seed).result


def compute_parts(run_dir: Path, *, baseline: str | None, boot: int, seed: int) -> _Computed:

    read = _read(run_dir, baseline)
    plan, requests, levels, pairs = read.plan, read.requests, read.levels, read.pairs
    table = frame.percentile_table(requests, levels, read.keys)
    look = look_of(plan, levels)
    level = 0.95 if look is None else look.confidence
    rows = contrast.contrast_rows(
        requests, levels, pairs, read.order, boot=boot, seed=seed, confidence=level
    )
    inter = contrast.interaction_rows(
        requests, levels, pairs, read.modes, boot=boot, seed=seed, confidence=level
    )
    load = plan.kind_fields.get("load") or {}
    endpoint = str(load.get("endpoint", "e2e"))
    headline = cells(rows, inter, endpoint, margin_of(plan))
    if look is not None:  # the rule at the run's last look, from these records
        look = look.judged(headline)
    searched = capacity_stats.analyse(load, requests, read.keys, pairs, boot=boot, seed=seed)
    crossings = crossover.crossovers(
        requests, levels, pairs, read.modes, endpoint, boot=boot, seed=seed
    )
    per_turn = turns.analyse(requests, plan, read.keys, read.base, read.order, boot=boot, seed=seed)
    tables = {
        "load_levels.csv": table,
        "load_blocks.csv": levels,
        "load_contrasts.csv": contrast.rows_frame(rows),
        "load_interaction.csv": contrast.rows_frame(inter),
        "load_crossover.csv": crossover.frame(crossings),
        **({"load_capacity.csv": capacity_stats.frame(searched)} if searched is not None else {}),
        **({turns.CSV: per_turn.table} if per_turn is not None else {}),
    }
    figures = _figures(read, table, rows, crossings, searched, per_turn)
    result = _result(
        run_dir,
        read,
        table,
        rows,
        inter,
        look,
        headline,
        tables,
        figures,
        crossings,
        searched,
        per_turn,
    )
    return _Computed(
        result, tuple(rows), endpoint, level, searched.ratios if searched is not None else ()
    )


def _result(
    run_dir: Path,
    read: _Read,
    table: Any,
    rows: Sequence[Row],
    inter: Sequence[Row],
    look: LookState | None,
    headline: tuple[CellState, ...],
    tables: Mapping[str, Any],
    figures: tuple[FigureData, ...],
    crossings: Sequence[Crossover],
    searched: CapacityResult | None,
    per_turn: TurnReport | None,
) -> AnalysisResult:
    """The report model and the terminal's lines put together with the tables and figures."""

    plan, requests, levels, pairs = read.plan, read.requests, read.levels, read.pairs
    endpoint = str((plan.kind_fields.get("load") or {}).get("endpoint", "e2e"))

    read_sessions = RunReader(run_dir).sessions(SESSION_TYPES)
    sessions = list(read_sessions.facts)
    found = capacity_stats.lines(searched) if searched is not None else []
    # a session file set aside (a fact outside its bounds, not JSON) is named with the lines
    where = [str(u) for u in read.unreadable] + list(read_sessions.unreadable)
    # where the stop rule stopped (or why it went on) opens the report, under the title
    model = report.report(
        plan,
        requests,
        table,
        levels,
        rows,
        inter,
        [f.name for f in figures],
        read.base,
        sessions,
        crossings=crossings,
        capacity=found,
        unreadable=where,
        replay=report_lines(read.records, plan),
        turns=per_turn,
        records=read.records,
        look=look.sentence() if look is not None else "",
    )
    lines = [*found, *report.headline_lines(rows, inter, endpoint)]
    lines += per_turn.headline if per_turn is not None else ()
    lines += [crossover.sentence(c, report.NAMES[endpoint]) for c in crossings]
    lines += census.terminal_notes(requests, levels, where)
    named = {f"mtpsweep.load.{t}": line for (t, _), line in zip(pairs, lines, strict=False)}
    if look is not None:
        lines.append(look.sentence())
    made = {*tables, *(f.name for f in figures)}
    known = ("load_capacity.csv", turns.CSV, *(name for name, _, _ in PLOTS))
    return AnalysisResult(
        report=model,
        cells=headline,
        tables=tables,
        figures=figures,
        lines=tuple(lines),
        headline=named,
        stale=tuple(n for n in known if n not in made),
    )


def analyse(
    run_dir: Path,
    *,
    baseline: str | None = None,
    boot: int = BOOT.default,
    seed: int = BOOT.seed,
    out: Path | None = None,
) -> LoadAnalysis:
    """Analyse what the run directory holds now and save it into `out` (RUN/analysis/);
    AnalysisError in one line when there is nothing to analyse or it cannot be written."""

    got = compute_parts(run_dir, baseline=baseline, boot=boot, seed=seed)
    done = got.result
    saved = done.save(out or run_dir / OUT, run_dir)
    return LoadAnalysis(
        done.lines,
        saved,
        done.headline,
        done.cells,
        done.report,
        got.rows,
        got.endpoint,
        got.level,
        got.ratios,
    )


def _figures(
    read: _Read,
    table: Any,
    rows: Sequence[Row],
    crossings: Sequence[Crossover],
    searched: CapacityResult | None,
    per_turn: TurnReport | None,
) -> tuple[FigureData, ...]:
    """The plots as data, each with the function that draws it (none without matplotlib)."""

    if not Figure.can_draw() or table.empty:
        return ()
    order, levels = read.order, read.levels
    figures = [
        FigureData("load_latency.png", (table, order), lambda d: plots.latency_figure(*d)),
        FigureData(
            "load_throughput.png", (table, levels, order), lambda d: plots.throughput_figure(*d)
        ),
        FigureData(
            "load_gain.png", (rows, order, read.base, crossings), lambda d: plots.gain_figure(*d)
        ),
    ]
    if searched is not None:
        figures.append(FigureData("load_capacity.png", searched, plots.capacity_figure))
    if replayed(read.records):  # a trace replay's
        figures.append(FigureData("load_timeline.png", read.records, timeline_figure))
    if per_turn is not None:
        figures.append(FigureData(turns.PNG, per_turn.table, turns.figure))
    return tuple(figures)


def look_of(plan: PlanDoc, levels: Any) -> LookState | None:
    """The sequential look the records reached (None: fixed cycles), not yet judged; stop.json
    is never read: the looks come from the records (a malformed design is refused when the
    reader parses plan.json)."""

    cycles = int(levels["cycle"].max()) if len(levels) else 1
    return LookState.at(plan.stop, cycles)


def margin_of(plan: PlanDoc) -> float:
    """The equivalence margin (percent) plan.json's analysis block registers; a run written
    before load recorded it gets the ladder's default then, `DEFAULT_MARGIN_PCT`."""

    got = plan.analysis.kind_settings.get("margin_pct")
    return float(got) if isinstance(got, int | float) else DEFAULT_MARGIN_PCT


def interval_decision(low: float, high: float, margin: float | None = None) -> Decision:
    """A gain's interval (percent) read as a decision: faster or slower when it excludes no
    change, equivalent when it lies within ±margin (None: never), else undecided."""

    if low > 0:
        return Decision.FASTER
    if high < 0:
        return Decision.SLOWER
    if margin is not None and -margin < low and high < margin:
        return Decision.EQUIVALENT
    return Decision.UNDECIDED


def cells(
    rows: Sequence[Row], inter: Sequence[Row], endpoint: str, margin: float | None = None
) -> tuple[CellState, ...]:
    """The headline cells a stop rule looks at: the headline endpoint's gain per treatment and
    level, and its interaction(s). Faster or slower when the interval excludes no gain;
    equivalent when it lies within ±margin (the look's 95 % interval: stricter than the 90 %
    one of two one-sided tests, so no level is spent on it)."""

    out = []
    for r in [*rows, *inter]:
        if r.endpoint != endpoint:
            continue
        half = (r.ci_high - r.ci_low) / 2.0
        decision = interval_decision(r.ci_low, r.ci_high, margin)
        out.append(CellState(f"{r.treatment}:{r.level}", decision, half))
    return tuple(out)
