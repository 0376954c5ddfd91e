"""The two exceptions the analysis raises; both carry one-sentence messages."""


class AnalysisError(Exception):
    """A refusal: incomparable runs, no records, an unknown baseline, bad settings."""


class ExpectationError(ValueError):
    """A `--expect` gate that cannot be understood or names something the run lacks."""
