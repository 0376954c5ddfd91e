"""The installed plugin costs nothing to test runs that do not use it: importing it pulls in
no analysis or network stack (pandas, numpy, scipy, httpx, psutil)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("pandas", "numpy", "scipy", "httpx", "psutil", "matplotlib")


def modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    loaded = modules_after("import pytest_mtpsweep.plugin")
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


def test_the_package_itself_is_light() -> None:
    loaded = modules_after("import pytest_mtpsweep")
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


def pytest_run_modules(root: Path, *args: str) -> set[str]:
    """The modules a small pytest run has loaded by its end."""
    code = (
        "import json, sys, pytest\n"
        "class Probe:\n"
        "    def pytest_sessionfinish(self):\n"
        "        print('MODS', json.dumps(sorted(sys.modules)))\n"
        f"pytest.main([{str(root)!r}, '-q', '-p', 'no:cacheprovider', *{list(args)!r}],"
        " plugins=[Probe()])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=root
    ).stdout
    # the progress dot may share the line: take what follows the marker
    line = next(x for x in out.splitlines() if "MODS [" in x)
    return set(json.loads(line.split("MODS ", 1)[1]))


def test_a_pytest_run_without_ladder_loads_nothing_heavy_for_the_plugin(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    with_plugin = pytest_run_modules(tmp_path)
    without = pytest_run_modules(tmp_path, "-p", "no:mtpsweep")
    assert "pytest_mtpsweep.plugin" in with_plugin and "pytest_mtpsweep.plugin" not in without
    extra = {m for m in with_plugin - without if not m.startswith("pytest_mtpsweep")}
    assert not [m for m in extra if m.split(".")[0] in HEAVY], sorted(extra)
    ours = {m for m in with_plugin if m.startswith("pytest_mtpsweep")}
    # the options, and the kind registry with each shipped kind's declaration (a kind's
    # options are registered with pytest's parser; a third party's kind is imported only with
    # --ladder, tests/test_kind_isolation.py) and the light front door it imports (the kind
    # interface, the errors, `Opt`, the requests, the gate values) and the option types a
    # declaration parses with (`kinds/load/optiontypes.py`: argparse and math) and decode's gate
    # grammar (`kinds/decode/grammar.py`): nothing else
    light = {"", "._version", ".plugin", ".runner", ".runner.registration", ".wishes", ".wishes.options",
             ".base", ".base.constants", ".base.errors", ".interface", ".interface.kind",
             ".kindapi", ".wishes.request", ".wishes.gate", ".interface.kindcheck",
             ".interface.registry", ".kinds", ".kinds.decode", ".kinds.authoring", ".kinds.load",
             ".kinds.load.optiontypes", ".kinds.decode.grammar"}  # fmt: skip
    assert ours <= {f"pytest_mtpsweep{m}" for m in light}, sorted(ours)
