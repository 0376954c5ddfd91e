"""What a GGUF file says about itself, read from its header: name, architecture, chat template.

Enough of the format to walk the metadata table (version 2 and 3) and return the string and
scalar values asked for; arrays (the vocabulary) are skipped, tensors never read.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

MAGIC = b"GGUF"
CHAT_TEMPLATE = "tokenizer.chat_template"
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9


class GGUFError(ValueError):
    """The file is not a GGUF this reader understands; the message says what was found."""


def _read(f: IO[bytes], n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise GGUFError("the file ends inside its metadata")
    return data


def _string(f: IO[bytes]) -> str:
    (n,) = struct.unpack("<Q", _read(f, 8))
    return _read(f, n).decode("utf-8", errors="replace")


def _value(f: IO[bytes], kind: int, keep: bool) -> Any:
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, _read(f, struct.calcsize(fmt)))[0]
    if kind == _STRING:
        if keep:
            return _string(f)
        (n,) = struct.unpack("<Q", _read(f, 8))
        f.seek(n, 1)
        return None
    if kind == _ARRAY:
        inner, count = struct.unpack("<IQ", _read(f, 12))
        if inner in _SCALARS:  # fixed width: skip in one seek
            f.seek(count * struct.calcsize(_SCALARS[inner]), 1)
        else:
            for _ in range(count):
                _value(f, inner, keep=False)
        return None
    raise GGUFError(f"unknown metadata value type {kind}")


def read_metadata(path: Path, keys: Iterable[str]) -> dict[str, Any]:
    """The wanted metadata values that the file holds (absent keys are left out)."""
    wanted = set(keys)
    out: dict[str, Any] = {}
    with path.open("rb") as f:
        head = f.read(4)
        if head != MAGIC:
            raise GGUFError(f"it does not start with the GGUF magic (found {head!r})")
        version, _tensors, n_kv = struct.unpack("<IQQ", _read(f, 20))
        if version not in (2, 3):
            raise GGUFError(f"GGUF version {version} is not one this reader knows (2 or 3)")
        for _ in range(n_kv):
            key = _string(f)
            (kind,) = struct.unpack("<I", _read(f, 4))
            value = _value(f, kind, keep=key in wanted)
            if key in wanted:
                out[key] = value
                if len(out) == len(wanted):
                    break
    return out


def template_identity(template: str | None) -> tuple[str | None, str | None]:
    """(sha256, first non-empty line) of a chat template; (None, None) without one.

    The digest is of the text with surrounding whitespace stripped: llama-server serves a GGUF's
    template without its trailing newline, and the two must name the same template.
    """
    if not template or not template.strip():
        return None, None
    import hashlib

    text = template.strip()
    return hashlib.sha256(text.encode()).hexdigest(), text.splitlines()[0].strip()[:120]
