"""Ctrl-C: the first raises KeyboardInterrupt as ever; the handler is given back after the run."""

from __future__ import annotations

import signal

import pytest

from pytest_mtpsweep.protocol import interrupts


def test_the_first_interrupt_is_a_keyboard_interrupt_and_the_handler_is_restored() -> None:
    before = signal.getsignal(signal.SIGINT)
    interrupts.install()
    try:
        handler = signal.getsignal(signal.SIGINT)
        assert handler is not before and callable(handler)
        with pytest.raises(KeyboardInterrupt):
            handler(signal.SIGINT, None)
    finally:
        interrupts.restore()
    assert signal.getsignal(signal.SIGINT) is before
