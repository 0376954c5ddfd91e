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
from functools import cache
from pathlib import Path
from types import ModuleType

from pytest_mtpsweep import newkind

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
