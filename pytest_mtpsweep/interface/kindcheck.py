"""Checks on an installed kind before anything uses it: its import, guarded, its declaration,
and what its `prepare` returns.

An installed kind is code of another distribution that every process of the environment may
reach, so what it does at import (raise anything, `sys.exit`, a stray `KeyboardInterrupt`,
swap the SIGINT handler) and what it declares (a malformed option, a fixture name that is not
one) must end as one line about that kind, never as a broken pytest or `mtpsweep`. A real
Ctrl-C of the user during the import is still a Ctrl-C: it is told from a kind's own
`KeyboardInterrupt` by a SIGINT handler held around the import.

What no guard in this process can catch (`os._exit`, an import that never ends, a thread
started at import that outlives it) is found by importing a third party's entry point first
in a probe process of its own, bounded by PROBE_TIMEOUT_S (`probe_problem`).
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..wishes.options import Opt
from .kind import PARTS, Kind, KindRun

T = TypeVar("T")
_FLAG = re.compile(r"--[A-Za-z0-9][A-Za-z0-9-]*")
_REF = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
_ACTIONS = (None, "store_true", "append")
# Names the plugin itself gives a test: a kind's fixture may not take them.
RESERVED_PREFIX = "mtpsweep"
RESERVED = frozenset({"request"})
_MAX = 240  # characters of a kind's own exception text in a one-line message
# A kind's declaration imports next to nothing (~0.3 s with the interpreter's start); ten
# seconds is an import that waits on something, and every ladder command would wait with it.
PROBE_TIMEOUT_S = 10.0
_PROBED = "mtpsweep-probe-threads:"
_PROBE = f"""
import json, os, sys, threading
sys.path[:] = json.loads(sys.argv[1])
from importlib.metadata import EntryPoint
raised = ""
try:
    EntryPoint(sys.argv[2], sys.argv[3], sys.argv[4]).load()
except BaseException as exc:  # the guarded import in the parent names it
    raised = type(exc).__name__
alive = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
print("\\n{_PROBED}" + json.dumps(alive), flush=True)
os._exit(0)  # a thread that would outlive the import is counted, not waited for
"""


def probe_problem(name: str, value: str, group: str) -> str | None:
    """Why entry point `name = value` cannot be imported in this process, found by importing it
    in a probe process first: it ended the process, took over PROBE_TIMEOUT_S, or left
    threads running. None when it imports cleanly, or raises and leaves no thread (the
    guarded import here then names the exception)."""
    argv = [sys.executable, "-c", _PROBE, json.dumps(sys.path), name, value, group]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=PROBE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"importing {value} took over {PROBE_TIMEOUT_S:.0f} s in a probe process"
    except OSError as exc:
        return f"a probe process could not import {value} ({exception_text(exc)})"
    said = [ln for ln in done.stdout.splitlines() if ln.startswith(_PROBED)]
    if said:
        alive = json.loads(said[-1][len(_PROBED) :])
        if alive:
            return (
                f"importing {value} left {len(alive)} thread(s) running "
                f"({', '.join(map(str, alive))[:80]}); a kind's declaration may start none"
            )
        return None
    return f"importing {value} ended the process (exit status {done.returncode})"


def exception_text(exc: BaseException) -> str:
    """`Type: message` on one line, cut to a length a terminal line holds."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split()).removesuffix(":")
    return text if len(text) <= _MAX else text[: _MAX - 3] + "..."


@contextmanager
def _watching_ctrl_c() -> Iterator[list[bool]]:
    """Note whether SIGINT arrives while the body runs; the handler around it is restored
    afterwards, whatever the body set (a kind may not keep pytest's Ctrl-C)."""
    pressed = [False]
    if threading.current_thread() is not threading.main_thread():
        yield pressed  # signals reach the main thread only: any KeyboardInterrupt here is code's
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # ignored or the default: a Ctrl-C raises nothing to tell apart
        try:
            yield pressed
        finally:
            signal.signal(signal.SIGINT, previous)
        return

    def noted(signum: int, frame: Any) -> None:
        pressed[0] = True
        previous(signum, frame)

    signal.signal(signal.SIGINT, noted)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, previous)


def guarded(call: Callable[[], T]) -> tuple[T | None, BaseException | None]:
    """`call()`'s value, or what it raised, anything at all but a real Ctrl-C (re-raised)."""
    with _watching_ctrl_c() as pressed:
        try:
            return call(), None
        except KeyboardInterrupt as exc:
            if pressed[0]:
                raise
            return None, exc
        except BaseException as exc:  # SystemExit and the rest: the kind's, not the run's
            return None, exc


def _option_problem(opt: object, seen: dict[str, str]) -> str | None:
    if not isinstance(opt, Opt):
        return f"its options hold {opt!r}, which is not an options.Opt"
    if not isinstance(opt.flag, str) or not _FLAG.fullmatch(opt.flag):
        return f"its option flag {opt.flag!r} is not a long option like --my-option"
    if not isinstance(opt.name, str) or not opt.name.isidentifier():
        return f"its option {opt.flag} has the name {opt.name!r}, which is not an identifier"
    typed = (
        isinstance(opt.help, str)
        and (opt.type is None or callable(opt.type))
        and opt.action in _ACTIONS
        and (opt.metavar is None or isinstance(opt.metavar, str))
        and (opt.overrides is None or isinstance(opt.overrides, str))
        and (opt.choices is None or all(isinstance(c, str) for c in opt.choices))
    )
    if not typed:
        return (
            f"its option {opt.flag} is malformed (help and metavar are text, type a callable, "
            f"action one of store_true or append, choices text)"
        )
    for key in (opt.flag, opt.name):
        if key in seen:
            return f"it declares {key} twice ({seen[key]} and {opt.flag})"
        seen[key] = opt.flag
    _, failed = guarded(
        lambda: argparse.ArgumentParser(add_help=False).add_argument(opt.flag, **opt.kwargs())
    )
    if failed is not None:
        return f"its option {opt.flag} is malformed ({exception_text(failed)})"
    return None


def declaration_problem(kind: object, entry_name: str) -> str | None:
    """What is wrong with what an entry point named `entry_name` loaded, or None."""
    if not isinstance(kind, Kind):
        return f"it is {type(kind).__name__}, not a kindapi.Kind"
    if kind.name != entry_name:
        return f"its Kind is named {kind.name!r}, not {entry_name!r} as its entry point"
    fixture = kind.fixture
    if not isinstance(fixture, str) or not fixture.isidentifier() or keyword.iskeyword(fixture):
        return f"its fixture {fixture!r} is not a Python name a test can ask for"
    if fixture.startswith(RESERVED_PREFIX) or fixture in RESERVED:
        return f"its fixture {fixture!r} is a name the plugin keeps for itself"
    for part in PARTS:
        ref = getattr(kind, part)
        required = part in ("ladder", "run")
        if (ref is not None or required) and not (isinstance(ref, str) and _REF.fullmatch(ref)):
            return f"its {part} part {ref!r} is not a 'module:attribute' reference"
    if not isinstance(kind.options, tuple):
        return f"its options are {type(kind.options).__name__}, not a tuple of options.Opt"
    seen: dict[str, str] = {}
    for opt in kind.options:
        problem = _option_problem(opt, seen)
        if problem is not None:
            return problem
    if not isinstance(kind.resume_fields, tuple) or not all(
        isinstance(f, str) for f in kind.resume_fields
    ):
        return "its resume_fields are not a tuple of field names"
    return None


def run_problem(run: object) -> str | None:
    """What is wrong with what a kind's `prepare` returned, or None: it must be a
    `kindapi.KindRun` (whose abstract methods Python has then seen written)."""
    if not isinstance(run, KindRun):
        return f"returned {type(run).__name__}, not a kindapi.KindRun (subclass it)"
    return None
