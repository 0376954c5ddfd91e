"""The probe kind the tests run: `mtpsweep new-kind probe`'s package, rendered once per test
process into a temporary folder that is put on sys.path (a subprocess gets it through
`path_entry()` on its PYTHONPATH). There is no copy of it in the tree: every test of a third
party's kind runs the scaffold's output, so the template is what they hold to the protocol."""

from __future__ import annotations

import atexit
import importlib
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_mtpsweep.cli import newkind

NAME = "probe"
PACKAGE = f"{NAME}_kind"
ENTRY_POINT = f"{NAME} = {PACKAGE}:KIND"


@cache
def root() -> Path:
    """The rendered kind's folder (pyproject.toml, the package, experiments/), on sys.path."""
    scratch = Path(tempfile.mkdtemp(prefix="mtpsweep-probe-kind-"))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    folder = scratch / "probe-kind"
    newkind.write(NAME, folder, shipped=frozenset())  # no registry read: "probe" is not shipped
    sys.path.insert(0, str(folder))
    return folder


def package_dir() -> Path:
    return root() / PACKAGE


def path_entry() -> str:
    """The PYTHONPATH entry that makes the probe kind's package importable."""
    return str(root())


def module(name: str = "") -> ModuleType:
    """A module of the rendered probe kind (`""`: the package), imported."""
    root()
    return importlib.import_module(f"{PACKAGE}.{name}" if name else PACKAGE)


class StandIn(BaseHTTPRequestHandler):
    """A STAND-IN server: `GET /health` answers 200, every other path 404."""

    def do_GET(self) -> None:
        body = b'{"status": "ok"}' if self.path == "/health" else b"{}"
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the test's output is the inner run's


@contextmanager
def stand_in() -> Iterator[str]:
    """A STAND-IN server on a free port of 127.0.0.1, for the block: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
