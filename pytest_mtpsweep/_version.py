"""The package's version, written once: pyproject.toml reads it (a dynamic version), plan.json and
preflight's `harness` item record it, `mtpsweep --version` prints it, the report names it and
`pytest_mtpsweep.__version__` re-exports it. docs/releasing.md says when it changes."""

__version__ = "0.3.0"
