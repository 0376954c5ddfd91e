"""Shared fixtures: the real llama-server and the embedded model, provisioned once."""

from __future__ import annotations

from pathlib import Path

import httpcore  # noqa: F401
import numpy  # noqa: F401
import pandas  # noqa: F401
import pytest
import scipy.stats  # noqa: F401

from pytest_mtpsweep.rig import provision

# Modules first imported inside an in-process pytester run are dropped from sys.modules
# afterwards and re-imported by the next run: httpx would then map exceptions of one httpcore copy
# while the other raises them, and numpy refuses a second import outright. The plugin imports them
# lazily, so import them here to keep one copy for the whole session.
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
