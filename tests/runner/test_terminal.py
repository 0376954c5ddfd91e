"""Live progress on pytest's terminal: rewritten in place on a TTY, plain lines elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_mtpsweep.runner.terminal import PLAIN_EVERY_S, TerminalProgress, fit, plain


class FakeReporter:
    """Records what pytest's TerminalReporter would have been asked to write."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self.calls: list[tuple[str, str]] = []

    def isatty(self) -> bool:
        return self.tty

    def ensure_newline(self) -> None:
        self.calls.append(("ensure_newline", ""))

    def write(self, content: str, *, flush: bool = False, **markup: bool) -> None:
        self.calls.append(("write", content))

    def write_line(self, line: str | bytes, **markup: bool) -> None:
        self.calls.append(("write_line", str(line)))

    def rewrite(self, line: str, **markup: bool) -> None:
        self.calls.append(("rewrite", line))


class FakeCapture:
    def __init__(self) -> None:
        self.suspended = 0

    def global_and_fixture_disabled(self) -> Any:
        import contextlib

        capture = self

        @contextlib.contextmanager
        def cm() -> Any:
            capture.suspended += 1
            yield

        return cm()


LOG = "\x1b[32mllama_model_loader: loaded meta data\x1b[0m\r"


def test_on_a_tty_the_status_line_is_rewritten_then_replaced() -> None:
    rep, cap = FakeReporter(tty=True), FakeCapture()
    progress = TerminalProgress(rep, cap, width=60)
    progress.loading("01_none_c1", "none, cycle 1", 1.02, LOG)
    progress.loading("01_none_c1", "none, cycle 1", 2.04, "")
    progress.ready("01_none_c1", "none, cycle 1", 2.31)
    kinds = [k for k, _ in rep.calls]
    assert kinds == ["ensure_newline", "rewrite", "rewrite", "rewrite", "write"]
    first = rep.calls[1][1]
    assert first.startswith("mtpsweep 01_none_c1 (none, cycle 1): loading, 1 s: llama_m")
    assert len(first) <= 59 and first.endswith("…")  # fits the terminal, cut visibly
    assert "\x1b" not in first and "\r" not in first
    assert rep.calls[3][1] == "mtpsweep 01_none_c1 (none, cycle 1): ready in 2.3 s"
    assert rep.calls[4][1] == "\n"
    assert cap.suspended == 3  # every write happens with output capturing suspended


def test_elsewhere_plain_lines_every_30_s_and_no_control_characters() -> None:
    rep = FakeReporter(tty=False)
    progress = TerminalProgress(rep, None, width=80)
    for second in range(1, 75):
        progress.loading("02_gate_c1", "gate, cycle 1", float(second), LOG)
    progress.ready("02_gate_c1", "gate, cycle 1", 74.5)
    progress.closed("02_gate_c1", "16/16 valid, median 38.2 tok/s")
    assert [k for k, _ in rep.calls] == ["write_line"] * 4
    lines = [text for _, text in rep.calls]
    assert lines[0].startswith(
        f"mtpsweep 02_gate_c1 (gate, cycle 1): loading, {PLAIN_EVERY_S:.0f} s"
    )
    assert "loading, 60 s: llama_model_loader: loaded meta data" in lines[1]
    assert lines[2] == "mtpsweep 02_gate_c1 (gate, cycle 1): ready in 74.5 s"
    assert lines[3] == "mtpsweep 02_gate_c1 closed: 16/16 valid, median 38.2 tok/s"
    assert not any(c in "".join(lines) for c in "\r\x1b\t")


def test_a_server_that_never_got_ready_ends_its_status_line() -> None:
    rep = FakeReporter(tty=True)
    progress = TerminalProgress(rep, None, width=100)
    progress.loading("01_none_c1", "none, cycle 1", 1.0, "")
    progress.closed("01_none_c1", "0/16 valid, error: the server exited")
    progress.loading("02_x_c1", "x, cycle 1", 1.0, "")  # a new status line starts afresh
    assert [k for k, _ in rep.calls] == [
        "ensure_newline",
        "rewrite",
        "write",
        "write_line",
        "ensure_newline",
        "rewrite",
    ]


def test_plain_and_fit() -> None:
    assert plain("a\x1b[1;31mb\x1b[0m\tc\x07") == "abc"
    assert fit("abcdef", 4) == "abc…" and fit("abc", 4) == "abc"


class DottedReporter(FakeReporter):
    """A reporter in the middle of a line of progress letters for a test file."""

    def __init__(self, start: Path) -> None:
        super().__init__(tty=False)
        self.startpath = start
        self.currentfspath: Path | None = start / "experiments" / "test_decode.py"

    def ensure_newline(self) -> None:
        super().ensure_newline()
        self.currentfspath = None

    def write_line(self, line: str | bytes, **markup: bool) -> None:
        self.ensure_newline()
        super().write_line(line)


def test_the_letters_line_is_resumed_after_a_progress_line(tmp_path: Path) -> None:
    rep = DottedReporter(tmp_path)
    progress = TerminalProgress(rep, None, width=80)
    progress.closed("01_a_c1", "2/2 valid")
    progress.ready("02_b_c1", "b, cycle 1", 0.9)
    assert rep.calls == [
        ("ensure_newline", ""),
        ("write_line", "mtpsweep 01_a_c1 closed: 2/2 valid"),
        ("write", "experiments/test_decode.py "),
        ("ensure_newline", ""),
        ("write_line", "mtpsweep 02_b_c1 (b, cycle 1): ready in 0.9 s"),
        ("write", "experiments/test_decode.py "),
    ]
    assert rep.currentfspath == tmp_path / "experiments" / "test_decode.py"
