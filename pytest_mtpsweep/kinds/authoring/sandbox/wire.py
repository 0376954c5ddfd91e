"""Plain data across the grader/candidate boundary: a codec and a framed channel.

Standard library only: this file is copied into both jails as `mtpsweep_wire.py`. Values cross
as JSON with containers tagged (`{"tuple": [...]}`), so a tuple stays a tuple and a dict may
have int keys; nothing is unpickled or executed on the receiving side, and a subclass of a
builtin crosses as its base type (its overridden `__eq__` stays behind). One message is one line
of JSON, at most `MAX_MESSAGE` bytes.
"""

from __future__ import annotations

import base64
import json
import os
import select
import time
from typing import Any

MAX_MESSAGE = 8 << 20  # bytes in one message: a reply larger than this is a failed call
MAX_DEPTH = 64  # nesting: deeper values do not cross
_TAGS = ("list", "tuple", "set", "frozenset", "dict", "bytes")


class WireError(Exception):
    """A value that cannot cross, or a channel that broke."""


def encode(value: Any, depth: int = 0) -> Any:
    """A JSON-ready form of `value`; WireError for what is not plain data."""
    if depth > MAX_DEPTH:
        raise WireError(f"the value is nested deeper than {MAX_DEPTH} levels")
    d = depth + 1
    if value is None or value is True or value is False:
        return value
    # isinstance, then the base type's own conversion: a subclass's methods are not called
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bytes | bytearray):
        return {"bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {"dict": [[encode(k, d), encode(v, d)] for k, v in dict.items(value)]}
    if isinstance(value, tuple):
        return {"tuple": [encode(x, d) for x in tuple.__iter__(value)]}
    if isinstance(value, list):
        return {"list": [encode(x, d) for x in list.__iter__(value)]}
    if isinstance(value, frozenset):
        return {"frozenset": [encode(x, d) for x in frozenset.__iter__(value)]}
    if isinstance(value, set):
        return {"set": [encode(x, d) for x in set.__iter__(value)]}
    raise WireError(f"a value of type {type(value).__name__} cannot cross as data")


def decode(data: Any, depth: int = 0) -> Any:
    """The value `encode` described; WireError for anything else."""
    if depth > MAX_DEPTH:
        raise WireError(f"the value is nested deeper than {MAX_DEPTH} levels")
    d = depth + 1
    if data is None or isinstance(data, bool | int | float | str):
        return data
    if not isinstance(data, dict) or len(data) != 1:
        raise WireError("malformed value")
    ((tag, items),) = data.items()
    if tag == "bytes" and isinstance(items, str):
        return base64.b64decode(items.encode("ascii"), validate=True)
    if tag not in _TAGS or not isinstance(items, list):
        raise WireError("malformed value")
    try:
        if tag == "dict":
            return {decode(k, d): decode(v, d) for k, v in items}
        values = [decode(x, d) for x in items]
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](values)
    except (TypeError, ValueError) as exc:  # an unhashable key, a pair that is not a pair
        raise WireError(f"malformed value ({exc})") from None


class Channel:
    """One end of the boundary: write messages to `out_fd`, read them from `in_fd`."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd, self.out_fd = in_fd, out_fd
        self._buf = b""

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"
        if len(data) > MAX_MESSAGE:
            raise WireError(f"the message is larger than {MAX_MESSAGE >> 20} MiB")
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.out_fd, view) :]
        except OSError as exc:
            raise WireError(f"the other side is gone ({exc.strerror})") from None

    def receive(self, timeout_s: float | None) -> dict[str, Any]:
        """The next message; WireError on a timeout, EOF, an oversized or malformed line."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            if len(self._buf) > MAX_MESSAGE:
                raise WireError(f"the reply is larger than {MAX_MESSAGE >> 20} MiB")
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise WireError(f"no reply within {timeout_s:g} s")
            ready, _, _ = select.select([self.in_fd], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self.in_fd, 1 << 16)
            except OSError as exc:
                raise WireError(f"the other side is gone ({exc.strerror})") from None
            if not chunk:
                raise WireError("the other side ended without a reply")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            raise WireError("the reply is not a message") from None
        if not isinstance(message, dict):
            raise WireError("the reply is not a message")
        return message
