"""Files on disk as every part of the package writes them: atomic, fsync'd, JSON-safe."""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .errors import ProvisionError
from .schema import PLAN_FILE  # a folder holding one is a run directory


def cache_dir() -> Path:
    """The user cache: $MTPSWEEP_CACHE, else $XDG_CACHE_HOME (or ~/.cache)/pytest-mtpsweep."""
    explicit = os.environ.get("MTPSWEEP_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "pytest-mtpsweep"


def cache_folder(*parts: str) -> Path:
    """A folder of the cache, made if need be: a ProvisionError in one sentence when it cannot
    be made or written (a file in its way, no permission), never a traceback mid-provision."""

    where = cache_dir().joinpath(*parts)
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = exc.strerror or str(exc)
    else:
        if os.access(where, os.W_OK | os.X_OK):
            return where
        why = "permission denied"
    raise ProvisionError(
        f"the cache folder {where} cannot be made or written ({why}); set MTPSWEEP_CACHE to a "
        "folder this user can write, or fix its permissions."
    )


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


# Every file the tool reads back is read bounded: never more than this, never a FIFO or a
# device (which could block forever or never end), never JSON nested past a depth any
# document the tool writes reaches (the parser would recurse out of the stack).
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
MAX_JSON_DEPTH = 64
# A record file (records/*.jsonl, quarantine/*/records.jsonl) is read whole up to this: the
# file, its lines and their records are held at once, a few times this in memory, so a bigger
# one (past 800,000 load requests of ~600 bytes in one session, or /dev/zero, or a GiB
# `truncate` made) is named unreadable, never read. A line of it longer than
# MAX_RECORD_LINE_BYTES is no record the tool writes (its longest, an authoring turn's reply,
# is a few hundred KiB) and is named unreadable without being parsed.
MAX_RECORD_FILE_BYTES = 512 * 1024 * 1024
MAX_RECORD_LINE_BYTES = 8 * 1024 * 1024


class BadFile(ValueError):
    """A file that cannot be read as asked; `str()` is the clause saying why ("is a FIFO, not
    a regular file"), for the caller's one sentence naming the file and the fix."""


class BadJson(BadFile):
    """A file that was read but does not parse as JSON."""


def special(mode: int) -> str:
    """What a file that is no regular file is ("" for a regular file)."""
    kinds = (
        (stat.S_ISREG, ""),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")


def read_bounded(path: Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> bytes:
    """A regular file's bytes, at most `max_bytes`: checked with stat before it is opened and
    opened non-blocking, so a FIFO, device or folder is refused, never waited on. BadFile
    (its clause) when it is missing, no regular file, unreadable or too big."""
    try:
        before = os.stat(path)
    except FileNotFoundError:
        raise BadFile("is a link to nothing" if path.is_symlink() else "does not exist") from None
    except OSError as exc:
        raise BadFile(f"cannot be read ({exc.strerror or exc})") from None
    odd = special(before.st_mode)
    if odd:
        raise BadFile(f"is {odd}, not a regular file")
    if before.st_size > max_bytes:
        raise BadFile(f"is {before.st_size} bytes, over the {max_bytes} a read takes")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise BadFile(f"cannot be read ({exc.strerror or exc})") from None
    try:
        odd = special(os.fstat(fd).st_mode)  # swapped for a FIFO between stat and open
        if odd:
            raise BadFile(f"is {odd}, not a regular file")
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise BadFile(f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise BadFile(f"is over the {max_bytes} bytes a read takes")
    return data


def loads_bounded(text: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """JSON as the tool writes it: BadFile (a ValueError) when it does not parse, holds NaN or
    Infinity (the tool writes null) or a number past a float's range, or nests deeper than
    `max_depth`."""

    def no_constant(name: str) -> Any:
        raise BadFile(f"holds {name}, which the tool never writes (it writes null)")

    def finite(digits: str) -> float:
        value = float(digits)  # 1e400 parses as inf: no number the tool writes
        if not math.isfinite(value):
            raise BadFile(f"holds {digits[:20]}, a number past any float the tool writes")
        return value

    try:
        value = json.loads(text, parse_constant=no_constant, parse_float=finite)
    except RecursionError:
        raise BadFile(f"nests deeper than the {max_depth} levels a document has") from None
    except json.JSONDecodeError as exc:
        raise BadJson(f"is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except BadFile:
        raise
    except ValueError:  # an integer of more digits than int() takes
        raise BadFile("holds a number longer than any the tool writes") from None
    if _depth(value) > max_depth:
        raise BadFile(f"nests deeper than the {max_depth} levels a document has")
    return value


def load_json_bounded(
    path: Path, max_bytes: int = MAX_DOCUMENT_BYTES, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """`read_bounded` then `loads_bounded` (a torn UTF-8 character replaced)."""
    return loads_bounded(read_bounded(path, max_bytes).decode("utf-8", errors="replace"), max_depth)


def _depth(value: Any) -> int:
    """How deep containers nest (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


HEAD_BYTES = 4096  # what `output_problem` reads of a file it would overwrite or append to


def output_problem(
    path: Path, *, looks_right: Callable[[bytes], bool], what: str, run_file: str = ""
) -> str | None:
    """Why the tool may not write `path` (a clause for the caller's sentence), or None.

    An output is new or a regular file that already holds `what` (`looks_right` of its first
    `HEAD_BYTES`), never a link (it could point anywhere), a folder, FIFO or device, never a
    run directory's own document (only `run_file` at a run's top level may be written
    there), in a folder that exists and can be written. Checked before the work, so a bad
    target never costs a run."""
    if path.is_symlink():
        return "is a link, which could point anywhere"
    try:
        mode: int | None = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if mode is not None and special(mode):
        return f"is {special(mode)}, not a regular file"
    run = next((p for p in path.absolute().parents if (p / PLAN_FILE).is_file()), None)
    if run is not None and not (run_file and path.absolute() == run / run_file):
        inside = f"only {run / run_file} may be written there" if run_file else "write elsewhere"
        return f"is inside the run directory {run}, whose files are the run's own ({inside})"
    if not path.parent.is_dir():
        return f"is in {path.parent}, which is not a folder that exists"
    if mode is not None:
        try:
            head = _head(path)
        except BadFile as exc:
            return str(exc)
        if head and not looks_right(head):
            return f"holds something other than {what}, which writing would destroy"
    if not os.access(path if mode is not None else path.parent, os.W_OK):
        return "cannot be written (permission denied)"
    return None


def _head(path: Path, *, tail: bool = False) -> bytes:
    """A regular file's first (or with `tail`, last) `HEAD_BYTES`, opened non-blocking and
    never through a link (BadFile when it cannot be)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        raise BadFile(f"cannot be read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if special(info.st_mode):
            raise BadFile(f"is {special(info.st_mode)}, not a regular file")
        if tail:
            os.lseek(fd, max(0, info.st_size - HEAD_BYTES), os.SEEK_SET)
        return os.read(fd, HEAD_BYTES)
    finally:
        os.close(fd)


def tail_of(path: Path) -> bytes:
    """A regular file's last `HEAD_BYTES` (b"" when it is no regular file or cannot be read):
    what `output_dir_problem`'s callers read of a file to tell whether the tool wrote it."""
    try:
        return _head(path, tail=True)
    except (BadFile, OSError):
        return b""


ANALYSIS_FOLDER = "analysis"  # the one folder of a run an output folder may be (or be under)


def folder_problem(path: Path) -> str | None:
    """Why `path` is no folder the tool may write into (a clause), or None: it is new or a
    folder, never a link (it could point anywhere: a run's `analysis` linked to /etc), a
    regular file, a FIFO or a device. The least every output folder passes, even one the
    tool names itself, checked again where the files are written."""
    if path.is_symlink():
        return "is a link, which could point anywhere"
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # new, or under a file (said elsewhere)
        return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None if stat.S_ISDIR(mode) else f"is {special(mode) or 'a file'}, not a folder"


def output_dir_problem(
    path: Path,
    *,
    new: bool = False,
    looks_right: Callable[[Path], bool] | None = None,
    what: str = "",
) -> str | None:
    """Why the tool may not write its files into the folder `path` (a clause), or None.

    An output folder passes `folder_problem`; inside a run directory it is that run's
    `analysis` folder or under it, never the run itself or its records, sessions or quarantine
    (a table written there would be read back as the run's own); with `new`, it must not exist
    yet; outside a run, an existing folder that holds anything must hold `what`
    (`looks_right` of the folder), never a folder of the user's whose files writing would
    replace. Checked before the work, so a bad target never costs an analysis or a run."""
    why = folder_problem(path)
    if why is not None:
        return why
    if new and path.is_dir():
        return "already exists"
    absolute = Path(os.path.abspath(path))
    runs = [run for run in (absolute, *absolute.parents) if (run / PLAN_FILE).is_file()]
    for run in runs:
        if not absolute.is_relative_to(run / ANALYSIS_FOLDER):
            return (
                f"is inside the run directory {run}, whose folders are the run's own (write "
                f"into {run / ANALYSIS_FOLDER} or outside the run)"
            )
    existing = next((p for p in (absolute, *absolute.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        return f"is under {existing}, which is not a folder"
    # outside a run, a folder of the user's: written into only when empty or the tool's
    ours = looks_right is None or runs or existing != absolute or looks_right(absolute)
    if not ours and next(iter(absolute.iterdir()), None) is not None:
        return f"holds files but not {what}, and writing would replace them"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"cannot be made or written in {existing} (permission denied)"
    return None
