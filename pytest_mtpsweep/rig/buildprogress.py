"""A build that says where it is: its stage and elapsed time at least every 30 s, read from the
build's own output (CMake's configure lines, make's `[ 45%]`, ninja's `[214/389]`), and a
warning up front when the host is already busy.

A quarter of an hour of silence reads as a hang; a line every half minute that names the stage
and the objects compiled so far does not.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

Say = Callable[[str], None]
EVERY_S = 30.0  # the longest silence while a build runs
BUSY_LOAD_PER_CORE = 0.5  # a 1-minute load above half the cores: the build shares the CPUs
_NINJA = re.compile(r"^\[(\d+)/(\d+)\]")
_MAKE = re.compile(r"^\[\s*(\d+)%\]")
_OBJECT = re.compile(r"Building (?:C|CXX|CUDA|ASM) object|\.o$|\.obj$")


def minutes(seconds: float) -> str:
    """`16 min 13 s`, `42 s`: a duration as a person reads it."""
    s = max(0, round(seconds))
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"


@dataclass
class Progress:
    """What the build's output has said so far: its stage, and how far the compile is."""

    stage: str = "starting"
    done: int = 0  # objects compiled (ninja's numerator, or make's "Building … object" lines)
    total: int = 0  # ninja's denominator (make says only a percentage)
    percent: int | None = None

    def feed(self, line: str) -> None:
        text = line.strip()
        ninja, make = _NINJA.match(text), _MAKE.match(text)
        if ninja:
            self.done, self.total = int(ninja.group(1)), int(ninja.group(2))
            self.stage = "linking" if "Linking" in text else "compiling"
        elif make:
            self.percent = int(make.group(1))
            if _OBJECT.search(text):
                self.done += 1
            self.stage = "linking" if "Linking" in text else "compiling"
        elif text.startswith("-- ") and self.stage in ("starting", "configuring"):
            self.stage = "configuring"
        elif "Building wheel" in text or "Created wheel" in text:
            self.stage = "compiling" if self.stage == "starting" else self.stage
        elif text.startswith(("copying ", "creating ", "adding ")) and self.done:
            self.stage = "packing the wheel"

    def describe(self) -> str:
        if self.stage not in ("compiling", "linking"):
            return self.stage
        if self.total:
            return f"{self.stage}: {self.done}/{self.total} objects"
        part = f"{self.percent} %, " if self.percent is not None else ""
        return f"{self.stage}: {part}{self.done} objects"


def load_warning(load1: float, cores: int, usual: str) -> str | None:
    """Why the build will be slow, when the host is busy before it starts (None: it is not)."""
    if cores <= 0 or load1 <= BUSY_LOAD_PER_CORE * cores:
        return None
    return (
        f"this host is busy before the build starts (load {load1:.1f} on {cores} cores): the "
        f"build shares the CPUs with that work and will take longer than {usual}."
    )


def host_load_warning(usual: str) -> str | None:
    """load_warning for this host (None where the load average cannot be read)."""
    try:
        load1 = os.getloadavg()[0]
    except OSError:
        return None
    return load_warning(load1, os.cpu_count() or 1, usual)


class BuildTimeout(Exception):
    """The build ran past its limit and was stopped."""


def run_with_progress(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    log: Path,
    what: str,
    timeout_s: float,
    say: Say,
    every_s: float = EVERY_S,
) -> int:
    """Run `argv`, its output into `log`, saying `what: stage, elapsed` every `every_s`;
    its exit status (BuildTimeout past `timeout_s`, the process group stopped)."""
    t0 = time.monotonic()
    progress = Progress()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        reader = threading.Thread(target=_pump, args=(proc, out, progress), daemon=True)
        reader.start()
        next_say = t0 + every_s
        while proc.poll() is None:
            now = time.monotonic()
            if now - t0 > timeout_s:
                _stop(proc)
                reader.join(timeout=5)
                raise BuildTimeout(what)
            if now >= next_say:
                say(f"{what}: {progress.describe()}, {minutes(now - t0)}")
                next_say = now + every_s
            time.sleep(min(0.5, max(0.01, next_say - now)))
        reader.join(timeout=10)
    return proc.returncode


def _pump(proc: subprocess.Popen[bytes], out: BinaryIO, progress: Progress) -> None:
    assert proc.stdout is not None
    for raw in proc.stdout:
        out.write(raw)
        progress.feed(raw.decode(errors="replace"))


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
