"""Files on disk as every part of the package writes them: atomic, fsync'd, JSON-safe."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    """The user cache: $MTPSWEEP_CACHE, else $XDG_CACHE_HOME (or ~/.cache)/pytest-mtpsweep."""
    explicit = os.environ.get("MTPSWEEP_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "pytest-mtpsweep"


def json_safe(value: Any) -> Any:
    """A value JSON can hold: NaN and inf become null, tuples lists, paths strings."""
    # JSON has no NaN/inf; a rate that could not be computed is null, never a bare NaN token.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    item = getattr(value, "item", None)  # numpy scalars, without importing numpy
    if callable(item) and type(value).__module__ == "numpy":
        return json_safe(item())
    return value


def dumps_line(obj: Any) -> str:
    """One JSON line (no newline), JSON-safe."""
    return json.dumps(json_safe(obj), ensure_ascii=False, allow_nan=False)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a whole file: a temporary file beside it, fsync'd, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "wb", dir=path.parent, prefix=f".{path.name}.", delete=False
    ) as handle:
        try:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException:
            handle.close()
            os.unlink(handle.name)
            raise
    os.replace(handle.name, path)


def atomic_write_text(path: Path, text: str) -> None:
    """`atomic_write_bytes` of the text, UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(json_safe(obj), indent=2, ensure_ascii=False) + "\n")


def write_new_text(path: Path, text: str) -> None:
    """Write a file that must not exist yet, fsync'd (FileExistsError if it does)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
