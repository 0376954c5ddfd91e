"""How long one stop-rule look takes on a finished run directory: the kind's interim analysis,
stop.json's record and, where the kind's interim hands back a result, its saving.

    python bench/look_time.py RUN [--repeat 5] [--boot 2000]

Each repetition copies RUN into a temporary directory first (the copy is not timed; RUN is
never written) and takes look 1 of a `decided` design (a look after the run's cycles) through
`protocol.looks.Looks`, as a run does between cycles. It prints each repetition's wall time, of
which the interim analysis, and the median and fastest. The script runs against whichever
checkout PYTHONPATH names, so the same run directory times the code before and after a change.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MAX_REPEAT = 50
MAX_BOOT = 100_000


def bounded(low: int, high: int) -> Any:
    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{high}")
        return value

    return parse


def one_look(run: Path, boot: int) -> tuple[float, float]:
    """(the look's wall seconds, the interim's) on a copy of `run`; a look that leaves no
    report.md (its save failed) is an error, not a fast look."""
    from pytest_mtpsweep.analysis.sequential import Design
    from pytest_mtpsweep.base import schema
    from pytest_mtpsweep.base.fileio import atomic_write_json
    from pytest_mtpsweep.interface import registry
    from pytest_mtpsweep.protocol import looks
    from pytest_mtpsweep.wishes.request import AnalysisRequest

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / run.name
        shutil.copytree(run, copy)
        plan = json.loads((copy / schema.PLAN_FILE).read_text())
        cycles = max(int(s["cycle"]) for s in plan["sessions"])
        cycles += cycles % 2  # a look comes after a counterbalanced pair
        design = Design.plan("decided", cycles, cycles + 2, "obrien-fleming", None)
        interim = looks.interim_of(registry.kind(str(plan["kind"])))
        request = AnalysisRequest(boot=boot)
        spent: list[float] = []

        def timed() -> Any:
            start = time.perf_counter()
            try:
                return interim(copy, request)
            finally:
                spent.append(time.perf_counter() - start)

        def write(doc: Any) -> None:  # a StopDoc, as RunDir.write_stop takes it
            atomic_write_json(copy / "stop.json", doc.to_json())

        look = looks.Looks(design, timed, write)
        if hasattr(looks, "saver"):  # the look saves what the interim computed (not before)
            look.save = looks.saver(copy)
        start = time.perf_counter()
        look.take(1)
        took = time.perf_counter() - start
        if not (copy / schema.ANALYSIS_DIR / "report.md").is_file():
            raise SystemExit(f"look_time: the look left no report.md in {copy}; see its stop.json")
        return took, spent[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--repeat", type=bounded(1, MAX_REPEAT), default=5, help="1..50")
    parser.add_argument("--boot", type=bounded(100, MAX_BOOT), default=2000, help="100..100000")
    args = parser.parse_args()
    if not (args.run / "plan.json").is_file():
        print(f"look_time: {args.run} holds no plan.json; pass a finished run directory")
        return 2
    one_look(args.run, args.boot)  # warm: the imports and the first pandas/matplotlib calls
    looks, interims = [], []
    for i in range(args.repeat):
        total, interim = one_look(args.run, args.boot)
        looks.append(total)
        interims.append(interim)
        print(f"look {i + 1}: {total:.3f} s, of which the interim analysis {interim:.3f} s")
    print(
        f"median {statistics.median(looks):.3f} s (fastest {min(looks):.3f} s); interim median "
        f"{statistics.median(interims):.3f} s over {args.repeat} looks, boot {args.boot}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
