"""The package's version, written once: pyproject.toml reads it (a dynamic version), plan.json and
preflight's `harness` item record it, `pytest_mtpsweep.__version__` re-exports it."""

__version__ = "0.2.0"
