"""Analysis of a run directory: comparability, paired cluster bootstrap, census, report, gates.

Only `io` touches the filesystem; every other module is pure functions over DataFrames.
"""

from pytest_mtpsweep.analysis.errors import AnalysisError, ExpectationError
from pytest_mtpsweep.analysis.gates import Expectation, evaluate_expectations, parse_expectation
from pytest_mtpsweep.analysis.io import analyse_run
from pytest_mtpsweep.analysis.model import AnalysisResult, AnalysisSettings
from pytest_mtpsweep.analysis.report import headline_table

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
