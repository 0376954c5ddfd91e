"""What a headline cell says, shared by every kind and read by the stop rule.

A kind's analysis publishes its own wording in its tables (decode's `insufficient`, load's
contrast rows); the cells it hands the stop rule carry one of these. `faster`, `slower` and
`equivalent` are the answers of a contrast; `pass` and `fail` are a non-inferiority gate's;
`undecided` is everything else (an interval that excludes neither, too few prompts, no data).
"""

from __future__ import annotations

from enum import StrEnum


class Decision(StrEnum):
    """A headline cell's decision; a `str`, so stop.json and the tables hold its value."""

    FASTER = "faster"
    SLOWER = "slower"
    EQUIVALENT = "equivalent"
    PASS = "pass"  # a non-inferiority gate: the treatment is not worse beyond its margin
    FAIL = "fail"  # a non-inferiority gate: shown worse than its margin (or undecided at the end)
    UNDECIDED = "undecided"

    @property
    def decided(self) -> bool:
        """Whether the `decided` stop rule counts this cell as settled."""
        return self is not Decision.UNDECIDED

    @classmethod
    def of(cls, text: str) -> Decision:
        """The decision a kind's wording names; any other word (`inconclusive`,
        `insufficient`, "") is undecided."""
        try:
            return cls(text)
        except ValueError:
            return cls.UNDECIDED
