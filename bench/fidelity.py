"""Client vs server decode rate: per treatment, how far the primary endpoint strays from the
server's own interval figure.

    python bench/fidelity.py                      # cpu-demo, fresh run directory
    python bench/fidelity.py --ladder lowerarm-cpu -- -k prose
    python bench/fidelity.py --run runs/cpu-demo/<run-id>   # an existing run, nothing started
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_mtpsweep.state.runread import RunReader

REPO = Path(__file__).resolve().parent.parent


def disagreement(run: Path) -> dict[str, list[float]]:
    """|primary / interval - 1| per treatment, over valid records on the server-timings basis."""
    out: dict[str, list[float]] = {}
    for f in sorted((run / "records").glob("*.jsonl")):
        for r in RunReader(run).session_records(f.stem).records:
            p, i = r.get("decode_rate_tps_primary"), r.get("decode_rate_tps_interval")
            if r.get("valid") and p and i and r.get("interval_basis") == "server_timings":
                out.setdefault(r["treatment"], []).append(abs(p / i - 1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ladder", default="cpu-demo")
    ap.add_argument("--run", type=Path, help="read this run directory instead of running")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args()
    run = args.run
    if run is None:
        run = Path(tempfile.mkdtemp(prefix="mtpsweep-fidelity-")) / "run"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            str(REPO / "experiments"),
            f"--ladder={args.ladder}",
            f"--run-dir={run}",
            "-q",
            "-p",
            "no:cacheprovider",
            *args.pytest_args,
        ]
        print("running:", " ".join(cmd), flush=True)
        subprocess.run(cmd, cwd=REPO, check=False, stdout=subprocess.DEVNULL)
    table = disagreement(run)
    if not table:
        print(f"no valid records with server timings in {run}", file=sys.stderr)
        return 1
    print(f"run: {run}")
    print(f"{'treatment':<16}{'n':>5}{'median %':>11}{'max %':>9}")
    everything: list[float] = []
    for treatment, values in table.items():
        everything += values
        print(
            f"{treatment:<16}{len(values):>5}{100 * statistics.median(values):>11.3f}{100 * max(values):>9.3f}"
        )
    print(
        f"{'all':<16}{len(everything):>5}{100 * statistics.median(everything):>11.3f}{100 * max(everything):>9.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
