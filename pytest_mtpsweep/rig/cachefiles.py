"""The build cache's own files, opened safely: a stamp (build.json, prefix.json) read bounded,
and a lock file held; a FIFO, a device or a link put in their place is no stamp, or one
ProvisionError, never a hang.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ..errors import ProvisionError

MAX_STAMP_BYTES = 64 * 1024  # a stamp is ~2 KB (the CPU's flags); more was not written by us


def read_stamp(path: Path) -> dict[str, object]:
    """A stamp (build.json, prefix.json) as written, or {} when it is missing, not a regular
    file (a FIFO is never opened for reading: no hang), over MAX_STAMP_BYTES, or not a JSON
    object: then what it stands for is not trusted and is made again."""
    try:
        info = os.stat(path, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_STAMP_BYTES:
            return {}
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_STAMP_BYTES + 1)
        read = json.loads(data) if len(data) <= MAX_STAMP_BYTES else None
    except (OSError, ValueError, RecursionError):
        return {}
    return read if isinstance(read, dict) else {}


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
