"""The run's token budget: a turn is sent only if it cannot take the run past the budget.

What a turn can cost is bounded before it is sent: `max_tokens` of completion plus a bound on
its prompt. After a turn whose usage came back, the next prompt is that turn's prompt and
completion tokens plus the new message; a first turn (or one after a reply without usage) is
bounded by its messages' UTF-8 bytes. A byte-level tokenizer never makes more tokens than
bytes; `TEMPLATE_TOKENS` per message covers the chat template's own tokens (role markers, a
default system prompt). Tokens already spent in the run directory (before a --resume) count.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ....kindapi import SkipSession
from ....kindapi.run import WARMUP

TEMPLATE_TOKENS = 64


class OutOfBudget(SkipSession):
    """The run's token budget is spent: this session does not start; its cases are recorded."""


def message_bytes(messages: Sequence[Mapping[str, str]]) -> int:
    return sum(len(m.get("content", "").encode("utf-8")) for m in messages)


def turn_bound(
    messages: Sequence[Mapping[str, str]],
    max_tokens: int,
    previous: tuple[int, int] | None = None,
    new: Sequence[Mapping[str, str]] = (),
) -> int:
    """The most tokens the next turn can cost.

    `previous` is the last turn's (prompt, completion) tokens when the server reported them;
    `new` are the messages added since (the reply is counted in its completion tokens).
    """
    if previous is None:
        prompt = message_bytes(messages) + TEMPLATE_TOKENS * len(messages)
    else:
        # the reply and the new user turn each get their own template tokens
        prompt = sum(previous) + message_bytes(new) + TEMPLATE_TOKENS * (len(new) + 1)
    return prompt + max_tokens


@dataclass
class Budget:
    """What the run may spend and has spent; once a turn is refused the run is out of budget.

    With cells in flight together (pool.py) a turn reserves its bound before it is sent and
    settles to its charge after, so the budget holds exactly whatever finishes first.
    """

    limit: int | None
    spent: int = 0
    refused: str | None = None  # why the budget stopped the run (None: it has not)
    reserved: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def allows(self, bound: int) -> bool:
        """Whether a turn of at most `bound` tokens fits; the first refusal is remembered."""
        with self._lock:
            return self._fits(bound)

    def _fits(self, bound: int) -> bool:
        if self.refused is not None:
            return False
        if self.limit is None or self.spent + self.reserved + bound <= self.limit:
            return True
        self.refused = (
            f"the token budget of {self.limit} would be exceeded: {self.spent} spent"
            + (f" and {self.reserved} reserved by turns in flight" if self.reserved else "")
            + f", the next turn could take {bound}"
        )
        return False

    def reserve(self, bound: int) -> bool:
        """Hold `bound` tokens for a turn about to be sent; False (and refused) if it cannot fit."""
        with self._lock:
            if not self._fits(bound):
                return False
            self.reserved += bound
            return True

    def settle(self, bound: int, charged: int) -> None:
        """The reserved turn came back: release its bound, spend what it was charged."""
        with self._lock:
            self.reserved -= bound
            self.spent += charged

    def spend(self, tokens: int) -> None:
        with self._lock:
            self.spent += tokens


def warmup_bound() -> int:
    """The most tokens the protocol's warm-up request can cost."""

    return len(WARMUP.prompt.encode("utf-8")) + TEMPLATE_TOKENS + WARMUP.tokens
