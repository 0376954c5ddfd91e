"""pytest-mtpsweep: LLM inference-server experiments as pytest suites.

The names below are imported on first use: pytest loads this package in every run of an
environment where it is installed, so importing it must cost next to nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .results import load_records
    from .schema import CellResult, Measurement

__all__ = ["CellResult", "Measurement", "__version__", "load_records"]


def __getattr__(name: str) -> Any:
    if name in ("Measurement", "CellResult"):
        from . import schema

        return getattr(schema, name)
    if name == "load_records":
        from .results import load_records

        return load_records
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
