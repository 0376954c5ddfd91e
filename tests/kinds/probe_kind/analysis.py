"""The probe kind's analysis: the median latency per target over the valid records, and
`mtpsweep analyse` of probe runs. The template's `analysis`."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_mtpsweep.kindapi import EXIT_ERROR, EXIT_OK
from pytest_mtpsweep.kindapi.records import RECORDS_DIR, RunReader
from pytest_mtpsweep.kindapi.report import write_report

from .report import report

if TYPE_CHECKING:
    import argparse

    from pytest_mtpsweep.kindapi.records import PlanDoc

SUMMARY_CSV = "probe.csv"
REPORT = "report.md"


def summarise(run_dir: Path) -> str | None:
    """The median latency per target over the valid records: analysis/probe.csv, and report.md
    and report.html from one report model (the package's renderers; nothing of analysis/)."""
    by_target: dict[str, list[float]] = {}
    read = RunReader(run_dir).records(RECORDS_DIR)
    for r in read.records:
        if r.get("valid") and isinstance(r.get("latency_s"), float):
            by_target.setdefault(str(r["treatment"]), []).append(r["latency_s"])
    if not by_target:
        return None
    rows = [(t, len(v), statistics.median(v)) for t, v in sorted(by_target.items())]
    out = run_dir / "analysis"
    out.mkdir(exist_ok=True)
    lines = ["target,requests,median_s", *(f"{t},{n},{m:.6f}" for t, n, m in rows)]
    (out / SUMMARY_CSV).write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_report(report(run_dir, rows, len(read.unreadable)), out, run_dir)
    return "\n".join(f"{t}: {n} GETs, median {m * 1000:.2f} ms" for t, n, m in rows)


def analyse_command(
    args: argparse.Namespace, runs: Sequence[Path], plans: Sequence[PlanDoc]
) -> int:
    """`mtpsweep analyse RUN...` of probe runs: each run's medians, again."""
    for run_dir, plan in zip(runs, plans, strict=True):
        table = summarise(run_dir)
        if table is None:
            print(f"{run_dir}: no probe records", flush=True)
            return EXIT_ERROR
        print(f"{run_dir} ({json.dumps(plan.kind_fields.get('probe'))}):\n{table}")
    return EXIT_OK


if TYPE_CHECKING:  # the part the kind's declaration names here, typed by the door
    from pytest_mtpsweep.kindapi import AnalyseFn

    _analyse_command: AnalyseFn = analyse_command
