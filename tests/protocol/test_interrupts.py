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


def test_a_first_interrupt_inside_held_waits_for_the_block_to_end() -> None:
    interrupts.install()
    try:
        handler = signal.getsignal(signal.SIGINT)
        assert callable(handler)
        done = []
        with pytest.raises(KeyboardInterrupt), interrupts.held():
            handler(signal.SIGINT, None)  # held: the block goes on
            done.append("filed")
        assert done == ["filed"]
        # once raised, nothing is pending: a later held block ends quietly
        with interrupts.held():
            pass
    finally:
        interrupts.restore()


def test_held_without_an_interrupt_raises_nothing() -> None:
    interrupts.install()
    try:
        with interrupts.held(), interrupts.held():  # nested: the outer block decides
            pass
    finally:
        interrupts.restore()
