"""How long the analysis takes: the pure analysis, the `mtpsweep analyse` command end to end,
and `scipy.stats.bootstrap` on the same cells for scale.

    python bench/analysis_speed.py            # 10 treatments × 16 prompts × 2 subsets × 4 cycles
    python bench/analysis_speed.py --importtime   # also the slowest imports of the command

The synthetic run is written by tests/strategies.py's `write_run`. "pure" times `analyse` on the
run held in memory (parse, contrasts, report; nothing written) and, within it,
`compute_contrasts`; "scipy" times one `scipy.stats.bootstrap` call per (endpoint, treatment,
subset) cell on its per-prompt log ratios (2,000 resamples, percentile), the bootstrap alone.
The command runs in a fresh interpreter from this checkout, so imports are counted.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_mtpsweep.kinds.decode.analysis.contrasts import compute_contrasts  # noqa: E402
from pytest_mtpsweep.kinds.decode.analysis.frame import parse_records  # noqa: E402
from pytest_mtpsweep.kinds.decode.analysis.pairing import cell_means, pair_cells  # noqa: E402
from pytest_mtpsweep.kinds.decode.analysis.pipeline import analyse  # noqa: E402
from pytest_mtpsweep.kinds.decode.analysis.runvalues import AnalysisSettings, RunData  # noqa: E402
from tests.strategies import Design, make_records, noisy, run_data, write_run  # noqa: E402

COMMAND = (
    "import sys; from pytest_mtpsweep.cli.main import main; "
    "raise SystemExit(main(['analyse', sys.argv[1], '--out', sys.argv[2]]))"
)


def design(treatments: int, prompts: int, cycles: int) -> Design:
    return Design(
        treatments=("none", *(f"t{i:02d}" for i in range(1, treatments + 1))),
        prompts={
            s: tuple(f"{s}_{i:02d}" for i in range(1, prompts + 1)) for s in ("prose", "structured")
        },
        cycles=cycles,
    )


def best_of(fn: Callable[[], object], repeats: int) -> float:
    """Least CPU seconds of this process over `repeats` calls: on a shared machine wall time
    mostly measures the neighbours, and both routes here run on one thread."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def with_positions(records: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """Give every session's prompts a fresh random order, as a real run records it."""
    rng = np.random.default_rng(seed)
    sessions: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        sessions.setdefault(str(r["session"]), []).append(r)
    for rows in sessions.values():
        for position, r in zip(rng.permutation(len(rows)), rows, strict=True):
            r["position"] = int(position)
    return records


def scipy_route(run: RunData, treatments: list[str], boot: int, seed: int) -> Callable[[], object]:
    """One scipy.stats.bootstrap per cell over the same per-prompt log ratios the analysis uses."""
    from scipy import stats as sps

    records, _ = parse_records(run.record_files, session_facts={}, plan_keyed={})
    pairs, _ = pair_cells(cell_means(records), treatments, "none")
    # A prompt's value is the mean over its cycles of the log ratio, as in the analysis.
    per_prompt = pairs.groupby(["endpoint", "treatment", "subset", "prompt_id"])["log_ratio"]
    clusters = per_prompt.mean().reset_index()
    cells = clusters.groupby(["endpoint", "treatment", "subset"])["log_ratio"]
    samples = [values.to_numpy() for _, values in cells]

    def run_all() -> None:
        rng = np.random.default_rng(seed)
        for x in samples:
            sps.bootstrap(
                (x,), np.mean, n_resamples=boot, method="percentile", vectorized=True, rng=rng
            )

    return run_all


def command_seconds(run: Path, repeats: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) of the command in a fresh interpreter."""
    walls, cpus = [], []
    with tempfile.TemporaryDirectory() as out:
        for _ in range(repeats):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", COMMAND, str(run), out],
                cwd=REPO,
                check=True,
                capture_output=True,
            )
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def slowest_imports(run: Path, top: int) -> list[str]:
    """The `-X importtime` lines of the command with the largest cumulative times."""
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", COMMAND, str(run), out],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        )
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    rows.sort(reverse=True)
    return [f"{us / 1e6:7.3f} s {name}" for us, name in rows[:top]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--treatments", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=16, help="per subset")
    parser.add_argument("--cycles", type=int, default=4)
    parser.add_argument("--boot", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--importtime", action="store_true")
    args = parser.parse_args()

    d = design(args.treatments, args.prompts, args.cycles)
    effects = {t: 1.0 + 0.01 * i for i, t in enumerate(d.treatments)}
    records = with_positions(make_records(d, noisy(d, effects, sd=0.03)), 7)
    run = run_data(d, records)
    treatments = list(d.treatments[1:])
    parsed, _ = parse_records(run.record_files, session_facts={}, plan_keyed={})
    settings = AnalysisSettings(baseline="none", boot=args.boot)

    analyse([run], boot=args.boot)  # warm: first calls load scipy.special and build caches
    pure = best_of(lambda: analyse([run], boot=args.boot), args.repeats)
    contrasts = best_of(
        lambda: compute_contrasts(
            parsed, treatments=treatments, subsets=["prose", "structured"], settings=settings
        ),
        args.repeats,
    )
    scipy_fn = scipy_route(run, treatments, args.boot, 42)
    scipy_fn()
    scipy_s = best_of(scipy_fn, args.repeats)
    with tempfile.TemporaryDirectory() as root:
        path = write_run(Path(root), d, records)
        wall, cpu = command_seconds(path, args.repeats)
        imports = slowest_imports(path, 12) if args.importtime else []

    cells = 2 * len(treatments) * 2
    print(
        f"run: {args.treatments} treatments × {args.prompts} prompts × 2 subsets × "
        f"{args.cycles} cycles, {args.boot} resamples ({len(records)} records, {cells} cells)"
    )
    print("CPU seconds, best of", args.repeats)
    print(f"pure analysis (analyse, in memory):   {pure:.3f} s")
    print(f"  of which compute_contrasts:         {contrasts:.3f} s")
    print(f"scipy.stats.bootstrap, one per cell:  {scipy_s:.3f} s")
    print(f"ratio pure / scipy:                   {pure / scipy_s:.2f}")
    print(f"ratio compute_contrasts / scipy:      {contrasts / scipy_s:.2f}")
    print(
        f"mtpsweep analyse, end to end:         {wall:.3f} s wall, {cpu:.3f} s CPU "
        f"(median of {args.repeats}; forest.png drawn when matplotlib is installed)"
    )
    if imports:
        print("slowest imports of the command (cumulative):")
        print("\n".join(f"  {line}" for line in imports))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
