"""Shared fixtures: the real llama-server and the embedded model, provisioned once."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mtpsweep import provision

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
