"""Shared fixtures: the real llama-server and the embedded model, provisioned once."""

from __future__ import annotations

from pathlib import Path

import httpcore  # noqa: F401
import pytest

from pytest_mtpsweep import provision

# httpx imports httpcore lazily; imported during an in-process pytester run, it would be dropped
# from sys.modules afterwards and re-imported by the next run, leaving httpx mapping exceptions of
# one httpcore copy while the other raises them. Importing it here keeps one copy for the session.
pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def server_bin() -> Path:
    """The real llama-server; provisioning errors fail loudly instead of skipping."""
    return provision.resolve_server_bin().path


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The real Gemma 3 270M GGUF from the embedded default."""
    return provision.default_model_path()
