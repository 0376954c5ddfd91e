"""How a process ended, in words: a signal by name and one line of what it usually means.

A bare "status -4" tells most people nothing. Every place a process of ours ends (a session's
server, a warm-up, a second server, the authoring checker) says it through `describe_exit`.
"""

from __future__ import annotations

import re
import signal
import subprocess
from dataclasses import dataclass

# What each signal usually means for a server or a checker; the likely fix goes with the caller.
_MEANING: dict[int, str] = {
    signal.SIGILL: "illegal instruction: the binary uses a CPU instruction this machine will not run",
    signal.SIGKILL: "often the kernel's out-of-memory killer, or a hard limit",
    signal.SIGSEGV: "segmentation fault: the program read or wrote memory it does not own",
    signal.SIGABRT: "the program aborted itself, usually on a failed assertion",
    signal.SIGBUS: "bus error: often a memory-mapped file that shrank or a full disk",
    signal.SIGFPE: "arithmetic error (an integer division by zero)",
    signal.SIGTERM: "asked to stop (by us, a launcher or another process)",
    signal.SIGINT: "interrupted (Ctrl-C)",
    signal.SIGXCPU: "the CPU-time limit",
    signal.SIGXFSZ: "the file-size limit",
}
# Shells report a signal as 128 + N; a launcher script's status can arrive that way.
_SHELL_SIGNAL_BASE = 128
DMESG_TIMEOUT_S = 5.0
DMESG_MAX_BYTES = 1 << 20  # the kernel ring buffer is a few hundred KB; read no more than this


@dataclass(frozen=True)
class Exit:
    """A process's end: its status and, when a signal ended it, which one."""

    status: int
    signal: signal.Signals | None

    @property
    def illegal_instruction(self) -> bool:
        return self.signal == signal.SIGILL

    @property
    def signal_words(self) -> str | None:
        """`SIGILL (illegal instruction: …)` when a signal ended it (`signal_words`)."""
        return signal_words(self.signal) if self.signal is not None else None

    def __str__(self) -> str:
        return describe_exit(self.status)


def exit_of(status: int, *, shell: bool = False) -> Exit:
    """`status` as Popen reports it (negative: a signal); `shell`: 128+N counts as signal N too."""
    number = -status if status < 0 else None
    if number is None and shell and _SHELL_SIGNAL_BASE < status < _SHELL_SIGNAL_BASE + 65:
        number = status - _SHELL_SIGNAL_BASE
    try:
        sig = signal.Signals(number) if number is not None else None
    except ValueError:
        sig = None
    return Exit(status, sig)


def signal_words(sig: signal.Signals) -> str:
    """`SIGILL (illegal instruction: …)`: the name and one line of meaning."""
    meaning = _MEANING.get(sig)
    return f"{sig.name} ({meaning})" if meaning else sig.name


def describe_exit(status: int, *, shell: bool = False) -> str:
    """`killed by SIGILL (illegal instruction: …)` or `exited with status 3`; never a bare -4."""
    end = exit_of(status, shell=shell)
    if end.signal is not None:
        return f"killed by {signal_words(end.signal)}"
    if status < 0:
        return f"killed by signal {-status}"
    return f"exited with status {status}"


def ended(status: int, *, shell: bool = False) -> str:
    """The verb phrase after a subject: `was killed by SIGILL (…)` or `exited with status 1`."""
    words = describe_exit(status, shell=shell)
    return f"was {words}" if words.startswith("killed") else words


def fault_site(pid: int) -> str | None:
    """Where the kernel saw the fault (`libggml-cpu.so`), from its trap line, when it is readable.

    The kernel logs `traps: NAME[PID] trap invalid opcode ... in LIB[...]` for an unhandled
    SIGILL or SIGSEGV; reading it costs one bounded `dmesg`. None when it cannot be had.
    """
    try:
        done = subprocess.run(
            ["dmesg"], capture_output=True, timeout=DMESG_TIMEOUT_S, check=False, stdin=None
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    text = done.stdout[-DMESG_MAX_BYTES:].decode(errors="replace")
    found = None
    for match in re.finditer(rf"\[{pid}\][^\n]*?\bin ([^\s\[]+)\[", text):
        found = match.group(1)
    return found
