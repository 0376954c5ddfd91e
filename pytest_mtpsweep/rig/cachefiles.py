"""The build cache's own files, opened safely: a stamp (build.json, prefix.json) read bounded,
a build log's last line read from its end, and a lock file held; a FIFO, a device or a link put in their place is no stamp, or one
ProvisionError, never a hang.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ..base.errors import ProvisionError
from ..base.fileio import loads_bounded

MAX_STAMP_BYTES = 64 * 1024  # a stamp is ~2 KB (the CPU's flags); more was not written by us
MAX_STAMP_DEPTH = 4  # a stamp's deepest value is build_env's strings: {"build_env": {k: v}}
# The fields the stamps hold (build.json, prefix.json, a git build's), with the types written:
# a stamp holding another type there is none the tool wrote.
_TEXT = (
    "requirement",
    "cpu_key",
    "machine",
    "compiler",
    "wheel",
    "wheel_sha256",
    "digest",
    "written",
    "repo",
    "commit",
    "sha",
    "source",
)


def _as_written(stamp: dict[str, object]) -> bool:
    """Whether each known field holds the type the tool writes there."""
    texts = all(isinstance(stamp.get(k, ""), str | None) for k in _TEXT)
    flags = stamp.get("cpu_flags", [])
    env = stamp.get("build_env", {})
    seconds = stamp.get("build_s", 0.0)
    return (
        texts
        and isinstance(flags, list)
        and all(isinstance(f, str) for f in flags)
        and isinstance(env, dict)
        and all(isinstance(v, str) for v in env.values())
        and isinstance(seconds, int | float)
        and not isinstance(seconds, bool)
        and seconds >= 0
    )


def read_stamp(path: Path) -> dict[str, object]:
    """A stamp (build.json, prefix.json) as written, or {} when it is missing, not a regular
    file (a FIFO is never opened for reading: no hang; a link is not followed), over
    MAX_STAMP_BYTES, nested past MAX_STAMP_DEPTH, holding NaN, or not a JSON object whose
    fields hold the types the tool writes: then what it stands for is not trusted and is made
    again."""
    try:
        info = os.stat(path, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_STAMP_BYTES:
            return {}
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_STAMP_BYTES + 1)
        read = loads_bounded(data, MAX_STAMP_DEPTH) if len(data) <= MAX_STAMP_BYTES else None
    except (OSError, ValueError, RecursionError):  # BadFile is a ValueError
        return {}
    return read if isinstance(read, dict) and _as_written(read) else {}


LOG_TAIL_BYTES = 64 * 1024  # what is read of a build log's end for its last line


def last_line(log: Path) -> str:
    """A build log's last non-empty line, read from its end (at most LOG_TAIL_BYTES, opened
    without blocking or following a link; a log of gigabytes costs no more), or ''."""
    try:
        fd = os.open(log, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        f.seek(max(0, os.fstat(f.fileno()).st_size - LOG_TAIL_BYTES))
        text = f.read(LOG_TAIL_BYTES).decode("utf-8", errors="replace")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the lock file `path` (made if missing). Opened without
    following a link and without blocking, so a FIFO or a device put there is one
    ProvisionError, never a hang."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        raise ProvisionError(
            f"the build cache's lock file {path} cannot be opened ({exc.strerror}); remove it "
            "(it must be a regular file) and run again."
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ProvisionError(
                f"the build cache's lock file {path} is not a regular file; remove it and run "
                "again."
            )
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
