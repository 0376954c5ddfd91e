"""The version a user pins (pytest_mtpsweep/_version.py): `mtpsweep --version` prints it, a run
records it (plan.json's harness_version, preflight's `harness` item) and its report names it."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from pytest_mtpsweep._version import __version__
from pytest_mtpsweep.cli.main import main
from tests.protocol.test_session import STUB, stub_project
from tests.sandbox import only_run

REPO = Path(__file__).resolve().parent.parent


def test_mtpsweep_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"pytest-mtpsweep {__version__}\n"


def test_a_run_records_the_version_and_its_report_names_it(pytester: pytest.Pytester) -> None:
    few = stub_project(pytester, [], prompts=1)
    # in a process of its own: an in-process run drops the modules it imported first, and a
    # later test of this worker that patches one of them would patch a copy no one calls
    argv = [f"--server-bin={STUB}", f"--prompts-dir={few}", "--boot=1000", "--no-calibration"]
    done = pytester.runpytest_subprocess("experiments/", "--ladder=stub", *argv, "-k", "c1")
    done.assert_outcomes(passed=2)
    run = only_run(pytester.path)
    assert json.loads((run / "plan.json").read_text())["harness_version"] == __version__
    items = {i["name"]: i for i in json.loads((run / "preflight.json").read_text())}
    assert items["harness"]["observed"].startswith(f"pytest-mtpsweep {__version__}; ")
    said = f"Recorded and analysed by pytest-mtpsweep {__version__}."
    assert (run / "analysis" / "report.md").read_text().endswith(f"\n\n{said}\n")
    assert f"<footer>{said} " in (run / "analysis" / "report.html").read_text()


def test_the_package_under_test_is_the_one_the_run_names() -> None:
    """`scripts/dev test` installs the release wheel and sets MTPSWEEP_UNDER_TEST=wheel: its
    first pass must import that copy, not the source tree that pytest's rootdir and
    `python -m` put on sys.path; any other run tests the tree itself (editable or PYTHONPATH)."""
    import pytest_mtpsweep
    from pytest_mtpsweep import plugin
    from pytest_mtpsweep.kinds import decode

    where = [Path(m.__file__ or "").resolve() for m in (pytest_mtpsweep, plugin, decode)]
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    if os.environ.get("MTPSWEEP_UNDER_TEST") == "wheel":
        assert all(w.is_relative_to(site) for w in where), (where, site)
        dist = importlib.metadata.distribution("pytest-mtpsweep")
        assert dist.version == __version__
        assert dist.read_text("direct_url.json") is None or "editable" not in str(
            dist.read_text("direct_url.json")
        )
    else:
        assert all(w.is_relative_to(REPO / "pytest_mtpsweep") for w in where), where


def tracked(under: str) -> set[str]:
    """The files git tracks under `under` (a path relative to the repository)."""
    done = subprocess.run(
        ["git", "ls-files", "-z", "--", under], cwd=REPO, capture_output=True, check=True
    )
    return {p for p in done.stdout.decode().split("\0") if p}


def release_files(tmp_path: Path) -> tuple[Path, Path]:
    """The sdist and the wheel built from it: those `scripts/dev test` built (MTPSWEEP_DIST), else
    `python -m build` run here on a copy of what git tracks, as a clean clone would build."""
    given = os.environ.get("MTPSWEEP_DIST")
    out = Path(given) if given else tmp_path / "dist"
    if not given:
        if importlib.util.find_spec("build") is None:
            pytest.fail(
                "python -m build is not installed; install the dev extra: pip install -e '.[dev]'"
            )
        clone = tmp_path / "clone"
        for rel in tracked("."):
            (clone / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, clone / rel)
        # -P: a `build/` folder of the working directory must not shadow the frontend
        argv = [sys.executable, "-P", "-m", "build", "-q", "-o", str(out), str(clone)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = out.glob(f"pytest_mtpsweep-{__version__}-py3-none-any.whl")
    (sdist,) = out.glob(f"pytest_mtpsweep-{__version__}.tar.gz")
    return sdist, wheel


def test_the_wheel_and_the_sdist_hold_every_file_of_the_package(tmp_path: Path) -> None:
    sdist, wheel = release_files(tmp_path)
    package = tracked("pytest_mtpsweep")
    with zipfile.ZipFile(wheel) as z:
        shipped = set(z.namelist())
        entry_points = z.read(f"pytest_mtpsweep-{__version__}.dist-info/entry_points.txt")
    assert package - shipped == set()  # py.typed, templates and data as well as modules
    assert [n for n in shipped if "__pycache__" in n or n.endswith((".pyc", ".pyo"))] == []
    # the plugin and the shipped kinds register from the wheel's metadata as from pyproject's
    assert b"[pytest11]\nmtpsweep = pytest_mtpsweep.plugin" in entry_points
    assert b"decode = pytest_mtpsweep.kinds.decode:KIND" in entry_points
    with tarfile.open(sdist) as t:
        top = f"pytest_mtpsweep-{__version__}/"
        held = {n.removeprefix(top) for n in t.getnames()}
    assert package | {"pyproject.toml", "README.md", "LICENSE"} <= held
    assert not any(n.startswith("tests/") for n in held)  # MANIFEST.in: the suite needs it all
