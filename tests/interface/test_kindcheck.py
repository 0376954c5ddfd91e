"""An installed kind's import is guarded (anything it raises, but the user's own Ctrl-C) and its
declaration checked before anything registers it."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from pytest_mtpsweep.interface import kindcheck as kindcheck
from pytest_mtpsweep.interface.kindcheck import declaration_problem, exception_text, guarded
from pytest_mtpsweep.kindapi import Kind
from pytest_mtpsweep.wishes.options import Opt


def _exit() -> None:
    sys.exit(3)


def _interrupt() -> None:
    raise KeyboardInterrupt


def test_whatever_a_kind_raises_is_caught_and_said_on_one_line() -> None:
    for call, said in ((_exit, "SystemExit: 3"), (_interrupt, "KeyboardInterrupt")):
        value, failed = guarded(call)
        assert value is None and failed is not None and exception_text(failed) == said
    assert guarded(lambda: 7) == (7, None)
    assert exception_text(ValueError("a\nb " + "x" * 400)).endswith("...")


def test_a_real_ctrl_c_during_the_import_is_not_swallowed() -> None:
    before = signal.getsignal(signal.SIGINT)

    def pressed() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the signal interrupts this at once

    with pytest.raises(KeyboardInterrupt):
        guarded(pressed)
    assert signal.getsignal(signal.SIGINT) is before


def test_a_kind_that_swaps_the_sigint_handler_does_not_keep_it() -> None:
    before = signal.getsignal(signal.SIGINT)
    guarded(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert signal.getsignal(signal.SIGINT) is before


GOOD = Kind(name="k", fixture="k_case", ladder="pkg.ladder:SPEC", run="pkg.run:prepare")


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"name": "other"}, "its Kind is named 'other', not 'k'"),
        ({"fixture": "not a name"}, "its fixture 'not a name' is not a Python name"),
        ({"fixture": "class"}, "is not a Python name"),
        ({"fixture": "mtpsweep_case"}, "a name the plugin keeps for itself"),
        ({"ladder": "no-colon"}, "its ladder part 'no-colon' is not a 'module:attribute'"),
        ({"commands": 3}, "its commands part 3 is not"),
        ({"options": ["--x"]}, "its options are list, not a tuple"),
        ({"options": ("--x",)}, "its options hold '--x', which is not an options.Opt"),
        ({"options": (Opt("x", "x"),)}, "its option flag 'x' is not a long option"),
        ({"options": (Opt("--x", "x-y"),)}, "has the name 'x-y', which is not an identifier"),
        ({"options": (Opt("--x", "x", action="count"),)}, "its option --x is malformed"),
        ({"options": (Opt("--x", "x", type=5),)}, "its option --x is malformed"),  # type: ignore[arg-type]
        ({"options": (Opt("--x", "x"), Opt("--y", "x"))}, "it declares x twice"),
        ({"options": (Opt("--x", "x", "h", int, action="store_true"),)}, "--x is malformed ("),
        ({"resume_fields": "ab"}, "its resume_fields are not a tuple"),
    ],
)
def test_a_malformed_declaration_is_named(changes: dict[str, object], said: str) -> None:
    import dataclasses

    assert declaration_problem(GOOD, "k") is None
    problem = declaration_problem(dataclasses.replace(GOOD, **changes), "k")  # type: ignore[arg-type]
    assert problem is not None and said in problem, problem


def test_what_is_not_a_kind_is_named() -> None:
    assert declaration_problem(None, "k") == "it is NoneType, not a kindapi.Kind"


@pytest.mark.parametrize(
    ("module", "says"),
    [
        ("import os\nos._exit(7)\n", "ended the process (exit status 7)"),
        ("import time\ntime.sleep(60)\n", "took over 1 s in a probe process"),
        (
            "import threading, time\nthreading.Thread(target=time.sleep, args=(60,)).start()\n",
            "left 1 thread(s) running",
        ),
        ("KIND = 1\n", None),  # imports cleanly: the declaration check comes next
        ("raise RuntimeError('x')\n", None),  # raises: the guarded import names it
    ],
)
def test_a_probe_process_finds_what_no_guard_here_can_catch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, says: str | None
) -> None:
    # round six (issue 50): os._exit, a hang or a thread at import took every command down
    (tmp_path / "probed_kind.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(kindcheck, "PROBE_TIMEOUT_S", 1.0)
    problem = kindcheck.probe_problem("probed", "probed_kind:KIND", "pytest_mtpsweep.kinds")
    if says is None:
        assert problem is None
    else:
        assert problem is not None and says in problem and "probed_kind:KIND" in problem
