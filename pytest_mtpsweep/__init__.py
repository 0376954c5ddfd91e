"""pytest-mtpsweep: LLM inference-server experiments as pytest suites.

The names below are imported on first use: pytest loads this package in every run of an
environment where it is installed, so importing it must cost next to nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .base.schema import Measurement
    from .kinds.authoring.records import CellResult
    from .state.results import load_records

__all__ = ["CellResult", "Measurement", "__version__", "load_records"]


def __getattr__(name: str) -> Any:
    if name == "Measurement":
        from .base.schema import Measurement

        return Measurement
    if name == "CellResult":  # the authoring kind's result, public since before kinds had homes
        from .kinds.authoring.records import CellResult

        return CellResult
    if name == "load_records":
        from .state.results import load_records

        return load_records
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
