"""A process's end in words: the signal by name and what it usually means, never a bare -4."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys

import pytest

from pytest_mtpsweep.rig.exits import describe_exit, exit_of, fault_site, signal_words


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (
            -signal.SIGILL,
            "killed by SIGILL (illegal instruction: the binary uses a CPU instruction",
        ),
        (-signal.SIGKILL, "killed by SIGKILL (often the kernel's out-of-memory killer"),
        (-signal.SIGSEGV, "killed by SIGSEGV (segmentation fault"),
        (-signal.SIGABRT, "killed by SIGABRT (the program aborted itself"),
        (3, "exited with status 3"),
        (0, "exited with status 0"),
        (-99, "killed by signal 99"),
    ],
)
def test_an_end_is_said_in_words(status: int, said: str) -> None:
    words = describe_exit(status)
    assert words.startswith(said)
    assert "-" not in words.split("(")[0]  # never a bare negative status


def test_an_end_gives_its_signal_in_words_or_none() -> None:
    # what a kind reads through the door: `str(exit_of(s))` and `.signal_words`
    assert exit_of(-signal.SIGILL).signal_words == signal_words(signal.SIGILL)
    assert (exit_of(-signal.SIGILL).signal_words or "").startswith("SIGILL (")
    assert exit_of(3).signal_words is None
    assert str(exit_of(-signal.SIGKILL)) == describe_exit(-signal.SIGKILL)


def test_a_shell_reports_a_signal_as_128_plus_its_number() -> None:
    assert describe_exit(132, shell=True).startswith("killed by SIGILL")
    assert describe_exit(132) == "exited with status 132"  # Popen's own status: a plain exit
    assert exit_of(-4).illegal_instruction and not exit_of(4).illegal_instruction


@pytest.mark.parametrize("sig", [signal.SIGILL, signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT])
def test_a_real_process_ended_by_a_signal_is_named(sig: signal.Signals) -> None:
    code = f"import os, resource; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); os.kill(os.getpid(), {int(sig)})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30)
    assert done.returncode == -sig
    assert describe_exit(done.returncode).startswith(f"killed by {sig.name} (")


def test_the_kernel_names_the_library_a_fault_was_in() -> None:
    """A real segfault in a C library: the kernel's trap line says where (read from dmesg)."""
    if shutil.which("dmesg") is None or subprocess.run(["dmesg"], capture_output=True).returncode:
        pytest.skip("the kernel log is not readable here (dmesg needs root or CAP_SYSLOG)")
    code = "import ctypes, resource; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); ctypes.string_at(0)"
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
    assert proc.wait(timeout=30) == -signal.SIGSEGV
    site = fault_site(proc.pid)
    if site is None:  # the kernel rate-limits its trap lines; a missing one is not an error
        pytest.skip("the kernel printed no trap line for this fault (rate-limited or turned off)")
    assert ".so" in site or "python" in site, site


def test_no_trap_line_means_no_site() -> None:
    assert fault_site(2**22 + 12345) is None  # a pid no process had
