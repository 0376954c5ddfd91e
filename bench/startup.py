"""What installing the plugin costs a pytest run that does not use it.

A one-test project in a temporary directory is run with the plugin (as installed: the
`pytest11` entry point) and without it (`-p no:mtpsweep`), in interleaved pairs whose order
alternates (AB, BA, AB, ...) so that a machine getting busier or quieter over the benchmark
weighs on both sides alike. Each child's own CPU time (user + system) and peak resident memory
come from `os.wait4`, which reports the resources of exactly that child. Bytecode is cached
as in any installed environment (into a temporary `PYTHONPYCACHEPREFIX`, whatever
`PYTHONDONTWRITEBYTECODE` says), so neither side pays for compiling on every start.

    python bench/startup.py [--pairs 15] [--bare]

`--bare` measures against pytest alone: every other installed plugin is kept out
(`PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`) and the plugin is loaded with `-p pytest_mtpsweep.plugin`,
so a heavy neighbour (hypothesis' plugin imports hypothesis) cannot dilute the ratio.

Prints the per-pair median CPU ratio (with / without), the CPU and peak-memory differences.
The target is at most 1.05x CPU and at most +5 MiB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

TARGET_RATIO = 1.05
TARGET_MIB = 5.0


@dataclass(frozen=True)
class Cost:
    cpu_s: float
    peak_mib: float


def run_once(project: Path, extra: tuple[str, ...], env: dict[str, str]) -> Cost:
    """One pytest process on the project; its own CPU time and peak RSS."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(project), *extra]
    proc = subprocess.Popen(
        argv, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"pytest failed ({proc.returncode}): {err.decode(errors='replace')}")
    return Cost(usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)  # KiB on Linux


def plugin_is_loaded(project: Path, extra: tuple[str, ...], env: dict[str, str]) -> bool:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", *extra],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return "--ladder" in done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=15, help="paired runs (default 15)")
    parser.add_argument("--bare", action="store_true", help="against pytest with no other plugin")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    on: tuple[str, ...] = ()
    off: tuple[str, ...] = ("-p", "no:mtpsweep")
    if args.bare:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        on, off = ("-p", "pytest_mtpsweep.plugin"), ()
    pairs: list[tuple[Cost, Cost]] = []
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        (project / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
        if not plugin_is_loaded(project, on, env) or plugin_is_loaded(project, off, env):
            raise SystemExit("the mtpsweep plugin is not installed where this python finds it")
        run_once(project, on, env)  # warm the file-system cache and both variants' bytecode
        run_once(project, off, env)
        for i in range(args.pairs):
            if i % 2 == 0:
                with_ = run_once(project, on, env)
                without = run_once(project, off, env)
            else:
                without = run_once(project, off, env)
                with_ = run_once(project, on, env)
            pairs.append((with_, without))
    ratio = statistics.median(w.cpu_s / o.cpu_s for w, o in pairs)
    extra_mib = statistics.median(w.peak_mib - o.peak_mib for w, o in pairs)
    cpu_with = statistics.median(w.cpu_s for w, _ in pairs)
    cpu_without = statistics.median(o.cpu_s for _, o in pairs)
    rss_with = statistics.median(w.peak_mib for w, _ in pairs)
    rss_without = statistics.median(o.peak_mib for _, o in pairs)
    extra_ms = statistics.median((w.cpu_s - o.cpu_s) * 1000 for w, o in pairs)
    against = "pytest alone (--bare)" if args.bare else "pytest with -p no:mtpsweep"
    print(f"pairs:            {len(pairs)} (interleaved, order alternating), against {against}")
    print(f"CPU time:         {cpu_with * 1000:.0f} ms with, {cpu_without * 1000:.0f} ms without")
    print(f"CPU added:        {extra_ms:+.1f} ms (median of pairs)")
    print(f"CPU ratio:        {ratio:.3f}x (median of pairs; target <= {TARGET_RATIO}x)")
    print(f"peak memory:      {rss_with:.1f} MiB with, {rss_without:.1f} MiB without")
    print(
        f"memory added:     {extra_mib:+.1f} MiB (median of pairs; target <= +{TARGET_MIB:g} MiB)"
    )
    met = ratio <= TARGET_RATIO and extra_mib <= TARGET_MIB
    print("target:           " + ("met" if met else "NOT met"))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
