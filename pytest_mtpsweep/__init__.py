"""pytest-mtpsweep: LLM inference-server experiments as pytest suites."""

__version__ = "0.1.0"
