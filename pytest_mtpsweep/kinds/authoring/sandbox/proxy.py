"""The `solution` module the checker imports in the grader: every call crosses to the candidate.

Standard library only (copied into the grader's jail as `mtpsweep_proxy.py`, behind a
`solution.py` stub). The candidate's public
names become module attributes: a callable becomes a function that sends its arguments as data
and returns the reply as data; a data value is decoded once. A builtin exception the candidate
raised is re-raised as itself (so `pytest.raises(ValueError)` works); any other, and every
failure of the boundary itself (a timeout, a reply that is not data, a candidate that died), is
a `CandidateError` — never anything the test runner treats as its own outcome.
"""

from __future__ import annotations

import builtins
import contextlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:  # the package (tests, type checks)
    from .wire import Channel, WireError, decode, encode
else:  # in the jail: a top-level module beside this one
    from mtpsweep_wire import Channel, WireError, decode, encode

# Builtin exceptions that mean something to the runner or the interpreter: never re-raised.
_NOT_RERAISED = {
    "SystemExit",
    "KeyboardInterrupt",
    "GeneratorExit",
    "StopIteration",
    "StopAsyncIteration",
    "BaseExceptionGroup",
    "ExceptionGroup",
}


class CandidateError(Exception):
    """The candidate raised a non-builtin exception, or could not be reached in time."""


def rebuilt(reply: dict[str, Any]) -> Exception:
    """The exception to raise in the grader for a reply that carries one, with where it was
    raised in the solution as a note (pytest prints it under the error)."""
    name, message = str(reply.get("raise")), str(reply.get("message", ""))
    kind = getattr(builtins, name, None)
    builtin = reply.get("module") == "builtins" and name not in _NOT_RERAISED
    err: Exception = CandidateError(f"{name}: {message}")
    if builtin and isinstance(kind, type) and issubclass(kind, Exception):
        with contextlib.suppress(Exception):  # a builtin that wants other arguments
            err = kind(message)
    where = solution_frames(str(reply.get("trace", "")))
    if where:
        err.add_note(f"raised in the solution:\n{where}")
    return err


def solution_frames(trace: str) -> str:
    """The part of the candidate's traceback that is the solution's own code (data, shown)."""
    lines = trace.splitlines()
    start = next((i for i, ln in enumerate(lines) if "solution.py" in ln), None)
    return "\n".join(lines[start:][-12:]) if start is not None else ""


class Link:
    """The grader's end of the channel; one call at a time, numbered."""

    def __init__(self, channel: Channel, timeout_s: float) -> None:
        self.channel, self.timeout_s = channel, timeout_s
        self.calls = 0
        self.broken: str | None = None

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        if self.broken is not None:
            raise CandidateError(f"the solution cannot be called any more: {self.broken}")
        try:
            request = {"call": name, "args": encode(list(args)), "kwargs": encode(kwargs)}
        except WireError as exc:
            raise CandidateError(
                f"the checker passed {name}() an argument that cannot cross ({exc}); mark the "
                'task checking = "in-process" in task.toml'
            ) from None
        self.calls += 1
        request["id"] = self.calls
        try:
            self.channel.send(request)
            reply = self.channel.receive(self.timeout_s)
            if reply.get("id") != self.calls:
                raise WireError("the reply answers another call")
            if "unsendable" in reply:
                raise CandidateError(f"{name}() returned {reply['unsendable']}")
            if "raise" in reply:
                raise rebuilt(reply)
            result = decode(reply.get("ok"))
            _update(args, decode(reply.get("args")))
            _update_one(kwargs, decode(reply.get("kwargs")))
        except WireError as exc:
            self.broken = f"{name}() failed: {exc}"
            raise CandidateError(self.broken) from None
        return result


def _update_one(mine: Any, theirs: Any) -> None:
    """An argument the candidate changed in place is changed here too (lists and dicts)."""
    if type(mine) is list and type(theirs) is list:
        mine[:] = theirs
    elif type(mine) is dict and type(theirs) is dict:
        mine.clear()
        mine.update(theirs)


def _update(args: tuple[Any, ...], after: Any) -> None:
    if isinstance(after, list) and len(after) == len(args):
        for mine, theirs in zip(args, after, strict=True):
            _update_one(mine, theirs)


def function(link: Link, name: str) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return link.call(name, args, kwargs)

    forward.__name__ = forward.__qualname__ = name
    return forward


def connect() -> dict[str, Any]:
    """Wait for the candidate's names; an ImportError when it could not be imported."""
    __tracebackhide__ = True
    fds = os.environ["MTPSWEEP_CALL_FDS"].split(",")
    link = Link(Channel(int(fds[0]), int(fds[1])), float(os.environ["MTPSWEEP_CALL_TIMEOUT"]))
    try:
        hello = link.channel.receive(float(os.environ["MTPSWEEP_IMPORT_TIMEOUT"]))
    except WireError as exc:
        raise ImportError(f"the solution did not start: {exc}") from None
    if "import_error" in hello:
        err = hello["import_error"] if isinstance(hello["import_error"], dict) else {}
        trace = solution_frames(str(err.get("trace", ""))) or str(err.get("trace", ""))
        raise ImportError(f"the solution could not be imported:\n{trace}".rstrip())
    names = hello.get("names") if isinstance(hello.get("names"), dict) else {}
    out: dict[str, Any] = {}
    for name, what in (names or {}).items():
        if not isinstance(name, str) or not name.isidentifier() or not isinstance(what, dict):
            continue
        if name.startswith("__") and name.endswith("__"):  # module machinery (__path__, ...)
            continue
        if what.get("callable"):
            out[name] = function(link, name)
        elif "value" in what:
            try:
                out[name] = decode(what["value"])
            except WireError:
                continue
    return out


# What the grader imports as `solution`: nothing but the candidate's names (a task may well ask
# for a function called `encode` or `connect`).
# `__tracebackhide__` keeps this stub and the proxy out of pytest's tracebacks (the feedback).
STUB = (
    "__tracebackhide__ = True\n"
    "from mtpsweep_proxy import connect as _connect\n\n"
    "globals().update(_connect())\n"
)
