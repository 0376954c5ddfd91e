"""Numbers and names more than one layer agrees on, written once.

A prompt set's subsets: a prompt file is `<subset>_<nn>.txt`, a ladder's `subset` (and
`--subset`) runs one of them or both, and the analysis reports each and the two pooled. The
bootstrap's defaults: `--boot` and `--boot-seed` (pytest and `mtpsweep analyse`), the analysis
settings a plan.json leaves out. Imports nothing else but the errors: every pytest process loads
it with the options.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import AnalysisError


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

    def check(self, boot: int, seed: int) -> None:
        """Refuse a resample count outside `min` to `max` or a negative seed (the CLI checks
        early, before any run is read)."""
        if boot < self.min:
            raise AnalysisError(
                f"the resample count {boot} is below {self.min}; pass --boot {self.min} or "
                f"more (default {self.default})"
            )
        if boot > self.max:
            raise AnalysisError(
                f"the resample count {boot} is above {self.max}, more than the bootstrap holds "
                f"in memory; pass --boot {self.max} or fewer (default {self.default})"
            )
        if seed < 0:
            raise AnalysisError(
                f"the bootstrap seed {seed} is negative; pass --boot-seed with a seed of 0 or "
                f"more (default {self.seed})"
            )


BOOT = Boot()


@dataclass(frozen=True)
class Interval:
    """The published interval's rules (analysis/stats.py): when it decides, when it carries
    the session level, what it borrows, how far the bootstrap-t may widen it."""

    # Below 6 prompts the exact sign-flip test cannot reach p < 0.05 (2^(1-n) >= 0.0625) and
    # the t-interval leans wholly on normality, so a subset this small gets no decision.
    min_prompts: int = 6
    # From this many cycles the published interval carries the session level (with fewer, the
    # spread of per-cycle contrasts has under 3 df and its interval would be uselessly wide):
    # the smallest look a `[stop]` design may take without opting in to an earlier one.
    session_cycles: int = 4
    # A contrast table borrows the session level its run's arms share (a kind's session pool)
    # only with this many df, the own estimate's at 4 cycles; a sweep's looks borrow from 1 df.
    min_borrowed_df: int = 3
    # The bootstrap-t quantile may widen Student's t-interval at most this many times. Its
    # resamples that repeat a few near-identical clusters have an SE near 0, so one outlying
    # prompt among tight ones drove it to 100-4000 (a 2x speed-up published as [-89 %,
    # +3492 %]); by bench/coverage.py the cap costs at most 0.003 of coverage in any cell.
    boot_t_max_factor: float = 2.0


INTERVAL = Interval()
