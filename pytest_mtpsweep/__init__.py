"""pytest-mtpsweep: LLM inference-server experiments as pytest suites."""

from __future__ import annotations

from .schema import CellResult, Measurement

__version__ = "0.2.0"
__all__ = ["CellResult", "Measurement", "__version__"]
