"""What each jail may see of the host: the interpreter it needs, and nothing else.

The candidate (the model's artefact) gets the base interpreter, its standard library (without
site-packages), the shared library files its standard library loads and the dynamic loader; the grader gets
that plus the environment that holds pytest. Each list is handed to `jail.py`, which builds a new
root of exactly these paths, read-only: no project checkout, home, run directory or temporary
directory is in it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import struct
import subprocess
import sys
import sysconfig
from dataclasses import dataclass

PT_INTERP = 3
# What pytest needs in the grader (found where they are installed; missing ones are skipped).
GRADER_PACKAGES = (
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "exceptiongroup",
    "tomli",
    "py",
)


@dataclass(frozen=True)
class View:
    """Paths a jail's root holds (read-only), and directories in them hidden by an empty tmpfs."""

    expose: tuple[str, ...]
    hide: tuple[str, ...] = ()


def elf_interpreter(path: str) -> str | None:
    """The dynamic loader an ELF binary names (PT_INTERP), or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit only
                return None
            end = "<" if head[5] == 1 else ">"
            (phoff,) = struct.unpack_from(end + "Q", head, 0x20)
            phentsize, phnum = struct.unpack_from(end + "HH", head, 0x36)
            for i in range(phnum):
                f.seek(phoff + i * phentsize)
                ptype, _, offset, _, _, filesz = struct.unpack(end + "IIQQQQ", f.read(40))
                if ptype == PT_INTERP:
                    f.seek(offset)
                    return f.read(filesz).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


# Run by the interpreter a jail will run: import every compiled module of its standard library
# and list the shared libraries then mapped (the loader and libc included).
_PROBE = """
import os, sys, sysconfig
dyn = sysconfig.get_path("platstdlib") + "/lib-dynload"
for f in sorted(os.listdir(dyn) if os.path.isdir(dyn) else []):
    try:
        __import__(f.split(".")[0])
    except BaseException:
        pass
seen = set()
for line in open("/proc/self/maps"):
    p = line.split(maxsplit=5)[-1].strip()
    if p.startswith("/") and ".so" in os.path.basename(p):
        seen.add(p)
print("\\n".join(sorted(seen)))
"""


def loaded_libraries(python: str, exclude: tuple[str, ...]) -> tuple[str, ...]:
    """The shared libraries `python` maps once its standard library is imported, outside
    `exclude`, with the names the loader finds them by (the symlinks beside each file)."""
    try:
        out = subprocess.run(
            [python, "-E", "-s", "-S", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    files = {os.path.realpath(p) for p in out.splitlines() if p.startswith("/")}
    files = {f for f in files if not _under(f, exclude) and os.path.isfile(f)}
    names = set(files)
    for d in {os.path.dirname(f) for f in files}:
        with os.scandir(d) as entries:
            for e in entries:
                if e.is_symlink() and os.path.realpath(e.path) in files:
                    names.add(e.path)
    return tuple(sorted(names))


def base_python() -> str:
    """The interpreter behind this one's virtual environment, if any (its real file)."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base)


def _stdlib() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The base interpreter's standard library, and its site-packages to hide."""
    base = {"base": sys.base_prefix, "platbase": sys.base_prefix}
    paths = sysconfig.get_paths(vars=base)
    libs = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib")}
    sites = {os.path.realpath(paths[k]) for k in ("purelib", "platlib")}
    hide = tuple(sorted(s for s in sites if _under(s, tuple(libs)) and os.path.isdir(s)))
    shared = []
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        libdir, name = (sysconfig.get_config_var(k) for k in ("LIBDIR", "LDLIBRARY"))
        if libdir and name and os.path.exists(os.path.join(libdir, name)):
            shared.append(os.path.realpath(os.path.join(libdir, name)))
    return tuple(sorted(libs)) + tuple(shared), hide


def _common(python: str) -> list[str]:
    libs, _ = _stdlib()
    interp = elf_interpreter(python)
    prefixes = tuple({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)})
    paths = [python, *libs, *loaded_libraries(python, prefixes)]
    if interp:
        paths.append(interp)
    if os.path.exists("/etc/ld.so.cache"):
        paths.append("/etc/ld.so.cache")
    return paths


@functools.lru_cache(maxsize=1)
def candidate_view() -> View:
    """The base interpreter and its standard library; no site-packages, no environment."""
    _, hide = _stdlib()
    return View(tuple(dict.fromkeys(_common(base_python()))), hide)


@functools.lru_cache(maxsize=1)
def grader_view() -> View:
    """The candidate's view, plus this environment's interpreter and pytest's packages."""
    sites: list[str] = []
    for name in GRADER_PACKAGES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec else None
        if spec and spec.submodule_search_locations:
            origin = next(iter(spec.submodule_search_locations))
        if origin:
            sites.append(os.path.dirname(os.path.realpath(origin)))
    env = [sys.executable, os.path.join(sys.prefix, "pyvenv.cfg")]
    paths = [*_common(os.path.realpath(sys.executable)), *env, *sorted(set(sites))]
    _, hide = _stdlib()
    kept = tuple(s for s in hide if s not in sites)
    return View(tuple(dict.fromkeys(p for p in paths if os.path.lexists(p))), kept)
