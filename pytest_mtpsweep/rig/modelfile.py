"""A model's files and identity: the shards of a split GGUF, the GGUF magic, one sha256.

A split GGUF is given by its first shard, `name-00001-of-0000N.gguf`; llama-server loads the
rest from beside it, so every shard is part of the model's identity.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ..base.errors import ProvisionError
from ..base.fileio import special
from .digests import file_digest

MAGIC = b"GGUF"
_SPLIT = re.compile(r"^(?P<stem>.+)-(?P<i>\d{5})-of-(?P<n>\d{5})\.gguf$")


def shards(path: Path) -> tuple[Path, ...]:
    """Every file the model at `path` is made of: itself, or all shards of a split GGUF."""
    m = _SPLIT.match(path.name)
    if m is None:
        return (path,)
    n = int(m.group("n"))
    return tuple(
        path.with_name(f"{m.group('stem')}-{i:05d}-of-{n:05d}.gguf") for i in range(1, n + 1)
    )


def gguf_problem(path: Path) -> str | None:
    """Why `path` cannot be a GGUF model file (None: it starts like one)."""
    try:
        odd = special(path.stat().st_mode)  # a FIFO would block the open below for ever
        if odd:
            return f"{odd}, not a regular file"
        with path.open("rb") as handle:
            head = handle.read(len(MAGIC))
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if not head:
        return "empty file (0 bytes)"
    if head != MAGIC:
        return f"not a GGUF file (it starts with {head!r}, not {MAGIC!r})"
    return None


def model_sha256(path: Path, *, cache: Path | None, verify: bool = False) -> str:
    """The model's identity as a keyed field: the file's sha256, or for a split GGUF the
    sha256 of its shards' sha256 digests, one per line in shard order."""
    files = shards(path)
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise ProvisionError(
            f"model {path} is split into {len(files)} shards but {missing[0]} is missing; put "
            "every shard beside the first one."
        )
    try:
        digests = [file_digest(f, cache=cache, verify=verify) for f in files]
    except OSError as exc:
        raise ProvisionError(
            f"model file {exc.filename or path} cannot be read ({exc.strerror}); fix its "
            "permissions or the --model path."
        ) from None
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("".join(d + "\n" for d in digests).encode()).hexdigest()
