"""sha256 of files (models, launchers, ladders), cached by (path, size, mtime, inode)."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

from ..base.fileio import atomic_write_text, cache_dir, load_json_bounded

_CACHE_FORMAT = 1


def default_digest_cache() -> Path:
    """Where model digests are cached: digests.json in the package's cache directory."""
    return cache_dir() / "digests.json"


def file_digest(path: Path, *, cache: Path | None, verify: bool = False) -> str:
    """sha256 of a file, reused from ``cache`` while (realpath, size, mtime_ns, inode) hold.

    ``cache`` None hashes every time; ``verify`` re-hashes and refreshes the cache entry.
    """
    real = os.path.realpath(path)
    before = _stat_key(real)
    if cache is not None and not verify:
        entry = _read_cache(cache).get(real)
        if isinstance(entry, dict) and _key_of(entry) == before:
            return str(entry["sha256"])
    digest = _sha256_file(real)
    # A file written to while we hashed it would cache a digest of neither version.
    if cache is not None and _stat_key(real) == before:
        _write_cache_entry(cache, real, before, digest)
    return digest


def sha256_file(path: str | Path) -> str:
    """A file's sha256, read now (no cache: a replaced wheel must show)."""
    return _sha256_file(str(path))


def _sha256_file(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _stat_key(path: str) -> tuple[int, int, int]:
    info = os.stat(path)
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def _key_of(entry: dict[str, Any]) -> tuple[Any, Any, Any]:
    return (entry.get("size"), entry.get("mtime_ns"), entry.get("inode"))


def _read_cache(cache: Path) -> dict[str, Any]:
    # The cache only saves time: an unreadable or foreign file is treated as empty.
    try:
        data = load_json_bounded(cache)  # never a FIFO waited on, nor a huge file read
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != _CACHE_FORMAT:
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _write_cache_entry(cache: Path, real: str, key: tuple[int, int, int], digest: str) -> None:
    # Re-read just before writing so entries added by a concurrent session survive; drop
    # entries for files that no longer exist so the cache does not grow forever.
    files = {k: v for k, v in _read_cache(cache).items() if os.path.exists(k)}
    size, mtime_ns, inode = key
    files[real] = {"size": size, "mtime_ns": mtime_ns, "inode": inode, "sha256": digest}
    try:
        atomic_write_text(cache, json.dumps({"format": _CACHE_FORMAT, "files": files}, indent=1))
    except OSError as exc:
        warnings.warn(
            f"cannot write the digest cache {cache}: {exc.strerror}; models will be re-hashed "
            "next run, so make that folder writable.",
            stacklevel=2,
        )
