"""Analysis of a run directory: comparability, paired cluster bootstrap, census, report, gates.

Only `io` touches the filesystem; every other module is pure functions over DataFrames.
"""

from ..errors import AnalysisError, ExpectationError
from .gates import Expectation, evaluate_expectations, parse_expectation
from .io import analyse_run
from .model import AnalysisResult, AnalysisSettings
from .report import headline_table

__all__ = [
    "AnalysisError",
    "AnalysisResult",
    "AnalysisSettings",
    "Expectation",
    "ExpectationError",
    "analyse_run",
    "evaluate_expectations",
    "headline_table",
    "parse_expectation",
]
