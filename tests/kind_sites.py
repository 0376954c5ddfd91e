"""Throwaway installed kinds for the tests: a `*.dist-info` (METADATA, entry_points.txt) and its
module in a directory put on a subprocess's PYTHONPATH, where importlib.metadata finds it as
pip would have installed it. Each broken variant is one distribution `<name>-kind`."""

from __future__ import annotations

import os
from pathlib import Path

from tests.kinds import probe

# A declaration as a third party writes it, the probe kind's parts (tests/kinds/probe.py: the
# new-kind scaffold's) under its own name (its
# ladder side, `<module>_ladder.py`, is the probe's renamed); {fields} go into the Kind.
DECLARATION = """\
from pytest_mtpsweep.kindapi import Kind
from pytest_mtpsweep.wishes.options import Opt

KIND = Kind(name={name!r}, fixture={fixture!r}, ladder=__name__ + "_ladder:SPEC",
            run="probe_kind.run:prepare"{fields})
"""
LADDER_SIDE = """\
import dataclasses

from probe_kind.ladder import SPEC as PROBE

SPEC = dataclasses.replace(PROBE, name={name!r})
"""
# A ladder of kind {name}: two attached targets nothing contacts before the first session.
LADDER = """\
kind = "{name}"
question = "How long does GET /health take?"
baseline = "a"
cycles = 2
requests = 3
[[treatments]]
key = "a"
base_url = "http://127.0.0.1:9"
[[treatments]]
key = "b"
base_url = "http://127.0.0.1:9"
"""

# name -> (the module's text, or the Kind's extra fields; the fixture)
BROKEN: dict[str, str] = {
    "exits": "import sys\nsys.exit(3)\n",
    "interrupts": "raise KeyboardInterrupt\n",
    "raises": "raise RuntimeError('the kind is broken')\n",
    "fixture": DECLARATION.format(name="fixture", fixture="tmp_path", fields=""),
    "pytestopt": DECLARATION.format(
        name="pytestopt", fixture="pytestopt", fields=', options=(Opt("--maxfail", "maxfail_x"),)'
    ),
    "sharedopt": DECLARATION.format(
        name="sharedopt", fixture="sharedopt", fields=', options=(Opt("--seed", "seed2"),)'
    ),
    "kindopt": DECLARATION.format(
        name="kindopt", fixture="kindopt", fields=', options=(Opt("--subset", "subset_x"),)'
    ),
    "badopt": DECLARATION.format(
        name="badopt", fixture="badopt", fields=', options=(Opt("--x", "x", action="count"),)'
    ),
    "notopt": DECLARATION.format(name="notopt", fixture="notopt", fields=', options=("--x",)'),
    "noladder": DECLARATION.format(name="noladder", fixture="noladder", fields="").replace(
        '__name__ + "_ladder:SPEC"', '"no_such_module_at_all:SPEC"'
    ),
    "nocommands": DECLARATION.format(
        name="nocommands", fixture="nocommands", fields=', commands="no_such_commands:register"'
    ),
    # round six (issue 50): what no guard in the process can catch, found by the probe
    "oexit": "import os\nos._exit(0)\n",
    "threads": "import threading, time\n"
    "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    + DECLARATION.format(name="threads", fixture="threads", fields=""),
    # a second kind named `load`, beside the shipped one
    "load": DECLARATION.format(name="load", fixture="load_level2", fields=""),
}


def install(site: Path, name: str, module: str, kind: str | None = None) -> None:
    """Distribution `<name>-kind` 0.1 whose module `<name>_kind` declares kind `kind`."""
    package = f"{name}_kind"
    info = site / f"{package}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-kind\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[pytest_mtpsweep.kinds]\n{kind or name} = {package}:KIND\n"
    )
    (site / f"{package}.py").write_text(module)
    (site / f"{package}_ladder.py").write_text(LADDER_SIDE.format(name=kind or name))


def environment(site: Path, repo: Path) -> dict[str, str]:
    """The environment of a subprocess that sees the kinds of `site` as installed."""
    parts = [str(site), probe.path_entry(), str(repo), os.environ.get("PYTHONPATH")]
    path = os.pathsep.join(filter(None, parts))
    return {**os.environ, "PYTHONPATH": path}
