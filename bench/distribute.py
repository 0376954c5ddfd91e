"""A small CPU ladder run twice, serially (`-n 0`) and over two pytest-xdist workers (`-n 2`):
the wall time of each, their ratio, and how the decode rate shifts when two servers share
the host.

    python bench/distribute.py                 # 2 treatments x 4 cycles x 2 prompts, 48 tokens
    python bench/distribute.py --cycles 2 --max-tokens 32

No thread count is set: serially each server uses llama-server's default (every core); with
`-n 2` the harness splits the host's CPUs between the workers (each worker's servers get their
own CPU share by affinity and `--threads` to match), so on a 2-core host each worker's servers
have one core, and the rest of the machine (pytest itself, other users) competes with them. On separate GPUs the shift would vanish; on shared CPU cores it need not: that is
what this prints, with no assertion. The runs use the real llama-server (MTPSWEEP_SERVER_BIN
or the provisioned one) and the embedded model, in a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

LADDER = """
question = "How much does a ladder over two workers shift the decode rate on one host?"
baseline = "none"
cycles = {cycles}
max_tokens = {max_tokens}
placement = "cpu"
[model]
path = "embedded:qwen2.5-coder-0.5b"
id = "qwen"
[server]
args = ["--parallel", "1"]
port = 0
ctx_size = 2048
ready_timeout_s = 180
[[treatments]]
key = "none"
[[treatments]]
key = "ngram-simple"
args = ["--spec-type", "ngram-simple"]
"""
PROMPTS = ("prose_01", "structured_01")


def sandbox(root: Path, cycles: int, max_tokens: int) -> Path:
    shutil.copytree(REPO / "experiments", root / "experiments")
    ladder = LADDER.format(cycles=cycles, max_tokens=max_tokens)
    (root / "experiments" / "ladders" / "bench-dist.toml").write_text(ladder)
    few = root / "few"
    few.mkdir()
    for pid in PROMPTS:
        shutil.copy(REPO / "experiments" / "prompts" / "canonical" / f"{pid}.txt", few)
    return few


def run(root: Path, few: Path, workers: int) -> tuple[float, Path]:
    """One pytest run; (wall seconds, its run directory)."""
    run_dir = root / f"run-n{workers}"
    argv = [
        sys.executable, "-m", "pytest", "experiments/", "--ladder=bench-dist",
        f"--prompts-dir={few}", f"--run-dir={run_dir}", "-n", str(workers), "-q",
        "-p", "no:cacheprovider", "--boot=1000",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-2000:], sep="\n")
        raise SystemExit(f"-n {workers}: pytest exited {done.returncode}")
    return wall, run_dir


def rates(run_dir: Path) -> dict[str, list[float]]:
    """Valid primary decode rates per treatment."""
    out: dict[str, list[float]] = {}
    for path in sorted((run_dir / "records").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r.get("valid") and r.get("decode_rate_tps_primary"):
                out.setdefault(r["treatment"], []).append(float(r["decode_rate_tps_primary"]))
    return out


def sessions_of(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted((run_dir / "sessions").glob("*.json"))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cycles", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=48)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="mtpsweep-bench-dist-") as tmp:
        root = Path(tmp)
        few = sandbox(root, args.cycles, args.max_tokens)
        serial_s, serial_dir = run(root, few, 0)
        dist_s, dist_dir = run(root, few, 2)
        serial, dist = rates(serial_dir), rates(dist_dir)
        held = sessions_of(dist_dir)
    sessions = 2 * args.cycles
    print(
        f"ladder: 2 treatments x {args.cycles} cycles ({sessions} sessions), "
        f"{len(PROMPTS)} prompts, {args.max_tokens} tokens, default threads (-n 2: the CPUs "
        "split between the workers), "
        f"{os.cpu_count()} CPUs"
    )
    print(f"wall -n 0: {serial_s:7.1f} s")
    print(f"wall -n 2: {dist_s:7.1f} s")
    print(f"ratio (-n 0 / -n 2): {serial_s / dist_s:.2f}x")
    shares = sorted({str(s.get("cpus_allowed")) + " " + str(s.get("worker"))
                     for s in held})  # fmt: skip
    print(f"-n 2 CPU shares (from /proc, per worker): {', '.join(shares)}")
    print("median primary decode rate, tokens/s (n measurements):")
    for t in sorted(serial):
        a, b = statistics.median(serial[t]), statistics.median(dist.get(t, [float("nan")]))
        print(
            f"  {t:13s} -n 0: {a:7.2f} ({len(serial[t])})   -n 2: {b:7.2f} "
            f"({len(dist.get(t, []))})   shift: {(b / a - 1) * 100:+.1f}%"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
