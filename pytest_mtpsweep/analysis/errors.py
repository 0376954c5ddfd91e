"""The analysis' exceptions live in the package's one exceptions module; named here for imports."""

from pytest_mtpsweep.errors import AnalysisError, ExpectationError

__all__ = ["AnalysisError", "ExpectationError"]
