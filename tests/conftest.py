"""Shared fixtures: the real llama-server and the embedded model, provisioned once."""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import shutil
import signal
from pathlib import Path

import httpcore  # noqa: F401
import numpy  # noqa: F401
import pandas  # noqa: F401
import pytest
import scipy.stats  # noqa: F401

import pytest_mtpsweep
from pytest_mtpsweep.base.fileio import cache_dir
from pytest_mtpsweep.rig import provision

# Every module of the package, and the libraries a run imports lazily, imported once per test
# process before any in-process pytester run. Pytester drops from sys.modules whatever a run
# imported, so (1) each run imported them again: 17 % of the CPU of the stand-in runs in
# tests/protocol/test_session.py and its neighbours; and (2) a package kept a dropped module as
# its attribute, so `from pytest_mtpsweep.protocol import lifecycle` in one run could reach a
# stale copy while a test patched the fresh one (a fault injection that CI once saw not fire).
for _module in pkgutil.walk_packages(pytest_mtpsweep.__path__, "pytest_mtpsweep."):
    importlib.import_module(_module.name)
with contextlib.suppress(ImportError):  # the plots extra; without it a report draws nothing
    for _name in ("matplotlib.figure", "matplotlib.ticker", "matplotlib.backends.backend_agg"):
        importlib.import_module(_name)


def pytest_configure(config: pytest.Config) -> None:
    # A shell without job control starts a background job with SIGINT ignored, and every
    # child inherits that: the Ctrl-C tests would then see no KeyboardInterrupt at all. They
    # test Python's own handler, the one an interactive shell or a CI runner gives.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# Modules first imported inside an in-process pytester run are dropped from sys.modules
# afterwards and re-imported by the next run: httpx would then map exceptions of one httpcore copy
# while the other raises them, and numpy refuses a second import outright. The plugin imports them
# lazily, so import them here to keep one copy for the whole session.
pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent

# pytester gives each inner run a fresh HOME; the embedded models stay where provision put them
# (else every sandboxed run would assemble half a gigabyte again).
os.environ.setdefault("MTPSWEEP_CACHE", str(cache_dir()))
# The host rule (protocol/hostrule.py) would set aside sessions a busy CI host spoils: off for
# the suite; the tests of the rule turn it on (monkeypatch.setenv("MTPSWEEP_HOST_RULE", "on")).
os.environ.setdefault("MTPSWEEP_HOST_RULE", "off")
# host_idle watches the host for 0.1 s, not 1 s: the suite starts hundreds of runs (docs/ladders.md)
os.environ.setdefault("MTPSWEEP_HOST_IDLE_S", "0.1")


@pytest.fixture(scope="session")
def server_bin() -> Path:
    """The real llama-server; provisioning errors fail loudly instead of skipping."""
    return provision.resolve_server_bin().path


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The embedded default model (Qwen2.5-Coder 0.5B Instruct), provisioned."""
    return provision.default_model_path()


@pytest.fixture(scope="session")
def machinery_model() -> Path:
    """The model the machinery's real-server tests run on: tests/sandbox.py's MACHINERY_MODEL
    (the tiny model, written and sha256-checked once)."""
    from tests.sandbox import MACHINERY_MODEL

    return provision.resolve_model(MACHINERY_MODEL)


# Fixtures that mean a real model server: a test using one is in the full suite only.
SERVER_FIXTURES = frozenset({"server_bin", "model_path", "machinery_model"})


def node_ids(name: str) -> tuple[str, ...]:
    """The node ids a list file in tests/ holds (one a line, `#` comments)."""
    lines = (REPO / "tests" / name).read_text(encoding="utf-8").splitlines()
    return tuple(x.strip() for x in lines if x.strip() and not x.startswith("#"))


SLOW = node_ids("slow_tests.txt")
QUIET = node_ids("quiet_real_tests.txt")


def _listed(item: pytest.Item, nodes: tuple[str, ...]) -> bool:
    node = item.nodeid.split("[")[0]
    return any(node == s or node.startswith(s + "::") for s in nodes)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the marks
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Remove this worker's copy of the STUB server: a test run leaves nothing in /tmp."""
    from tests.sandbox import REPO, STUB_SERVER

    if STUB_SERVER.parent != REPO / "tests":
        shutil.rmtree(STUB_SERVER.parent, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `server` (a real-server fixture), `solo` (a server test not in
    tests/quiet_real_tests.txt: it runs a model server, one at a time) and `slow`
    (tests/slow_tests.txt). The fast tier, `scripts/dev test --fast`, runs `-m "not server and
    not slow"` and points MTPSWEEP_SERVER_BIN at nothing, so a real-server test without the
    mark fails there; the full suite runs `not solo` on three workers, then `solo` alone."""
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)
        if item.get_closest_marker("server") and not _listed(item, QUIET):
            item.add_marker(pytest.mark.solo)
        if _listed(item, SLOW):
            item.add_marker(pytest.mark.slow)
