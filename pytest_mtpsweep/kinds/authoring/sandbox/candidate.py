"""The candidate's side of the boundary, run in its own jail: `python -E -s -S candidate.py IN OUT`.

Standard library only (copied into the candidate's jail as `mtpsweep_candidate.py`, beside the
artefact as `solution.py` and the codec as `mtpsweep_wire.py`). It imports the artefact, tells
the grader its public names, then answers calls: each call's arguments arrive as data, the result
(or the exception's type and message) goes back as data, with the arguments' state after the
call so that in-place changes to a list or dict are seen. The artefact runs in this process and
may rewrite all of it: that only changes what this side sends, and the grader trusts nothing
but plain data.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:  # the package (tests, type checks)
    from .wire import Channel, WireError, decode, encode
else:  # in the jail: a top-level module beside this one
    from mtpsweep_wire import Channel, WireError, decode, encode

MAX_TEXT = 4000  # characters of an exception's message or traceback sent back
HERE = os.path.join(os.getcwd(), "")


def describe(module: Any) -> dict[str, Any]:
    """The module's names: callables by name, data by value, anything else as opaque."""
    names: dict[str, Any] = {}
    for name, value in vars(module).items():
        if name.startswith("__"):
            continue
        if callable(value):
            names[name] = {"callable": True}
            continue
        try:
            names[name] = {"value": encode(value)}
        except (WireError, RecursionError):
            names[name] = {"opaque": type(value).__name__}
    return names


def failure(exc: BaseException) -> dict[str, Any]:
    kind = type(exc)
    return {
        "raise": kind.__name__,
        "module": kind.__module__,
        "message": str(exc)[:MAX_TEXT],
        # the work directory's path says nothing to the model: "solution.py", line 2
        "trace": "".join(traceback.format_exception(exc)).replace(HERE, "")[-MAX_TEXT:],
    }


def answer(module: Any, request: dict[str, Any]) -> dict[str, Any]:
    fn = getattr(module, str(request.get("call")), None)
    if not callable(fn):
        return {
            "raise": "AttributeError",
            "module": "builtins",
            "message": f"solution has no callable {request.get('call')!r}",
        }
    try:
        args = decode(request.get("args"))
        kwargs = decode(request.get("kwargs"))
    except WireError as exc:
        return {"raise": "TypeError", "module": "builtins", "message": str(exc)}
    try:
        result = fn(*args, **kwargs)
    except BaseException as exc:
        return failure(exc)
    try:
        return {"ok": encode(result), "args": encode(args), "kwargs": encode(kwargs)}
    except (WireError, RecursionError) as exc:
        return {"unsendable": str(exc)}


def main() -> None:
    channel = Channel(int(sys.argv[1]), int(sys.argv[2]))
    try:
        import solution  # type: ignore[import-not-found]
    except BaseException as exc:
        channel.send({"import_error": failure(exc)})
        return
    channel.send({"names": describe(solution)})
    while True:
        try:
            request = channel.receive(None)
        except WireError:
            return  # the grader is done
        reply = answer(solution, request)
        reply["id"] = request.get("id")
        try:
            channel.send(reply)
        except WireError:
            return


if __name__ == "__main__":
    main()
