"""Numbers and names more than one layer agrees on, written once.

A prompt set's subsets: a prompt file is `<subset>_<nn>.txt`, a ladder's `subset` (and
`--subset`) runs one of them or both, and the analysis reports each and the two pooled. The
bootstrap's defaults: `--boot` and `--boot-seed` (pytest and `mtpsweep analyse`), the analysis
settings a plan.json leaves out. Imports nothing else: every pytest process loads it with the options.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Subsets:
    """A prompt set's subsets, and the two words around them."""

    names: tuple[str, ...] = ("prose", "structured")  # a prompt file's `<subset>_<nn>.txt`
    both: str = "both"  # a ladder's subset that runs every prompt
    pooled: str = "pooled"  # the analysis' contrast over the subsets together

    @property
    def choices(self) -> tuple[str, ...]:
        """What a ladder's `subset` (and `--subset`) may say: a subset, or both."""
        return (*self.names, self.both)


SUBSETS = Subsets()


@dataclass(frozen=True)
class Boot:
    """The bootstrap's resamples: the default, the seed, and the bounds `--boot` is held to."""

    default: int = 2000
    seed: int = 42
    # Fewer resamples make the studentized quantile and the percentile cross-check visibly noisy.
    min: int = 1000
    # The resamples are a (resamples x clusters) matrix in memory: 50 times the default is past
    # any interval's need and within a laptop's memory at a few hundred prompts.
    max: int = 100_000


BOOT = Boot()
# From this many cycles the published interval carries the session level (analysis/stats.py):
# the smallest look a `[stop]` design may take without opting in to an earlier one.
SESSION_LEVEL_CYCLES = 4
# A contrast table borrows the session level its run's arms share (a kind's session pool) only
# with this many df, the own estimate's at 4 cycles; a sweep's looks borrow from 1 df.
MIN_BORROWED_DF = 3
