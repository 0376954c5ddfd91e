"""`mtpsweep new-kind NAME`: the package it writes from the template (package data), what it
refuses before writing anything, and the rendered package held lint-clean and mypy --strict
clean by its own pyproject.toml's settings. The probe kind every third-party test runs is this
template rendered (tests/kinds/probe.py); docs/write-a-kind.md installs and runs one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mtpsweep.cli import newkind
from pytest_mtpsweep.cli.main import main
from pytest_mtpsweep.cli.newkind import ScaffoldError, render, spellings, write

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "pytest_mtpsweep" / newkind.TEMPLATE
SHIPPED = frozenset({"decode", "authoring", "load"})
LONGEST = "a" * (newkind.MAX_NAME - 5) + "_long"  # the longest name, with an underscore
RUFF = (sys.executable, "-m", "ruff")  # the dev environment's ruff


def test_it_writes_a_whole_kind_package(tmp_path: Path) -> None:
    written = write("ttft", tmp_path / "out", SHIPPED)
    got = sorted(p.relative_to(tmp_path / "out").as_posix() for p in written)
    assert got == [
        "README.md",
        "experiments/ladders/ttft.toml",
        "experiments/test_ttft.py",
        "pyproject.toml",
        "ttft_kind/__init__.py",
        "ttft_kind/analysis.py",
        "ttft_kind/ladder.py",
        "ttft_kind/py.typed",
        "ttft_kind/report.py",
        "ttft_kind/run.py",
    ]
    pyproject = (tmp_path / "out" / "pyproject.toml").read_text()
    assert '[project.entry-points."pytest_mtpsweep.kinds"]\nttft = "ttft_kind:KIND"' in pyproject
    assert 'name = "ttft-kind"' in pyproject


@pytest.mark.parametrize("name", ["x", "ttft", "my_probe", LONGEST])
def test_every_token_of_the_template_is_replaced(name: str) -> None:
    files = render(name)
    left = {str(p): re.findall(r"\{\{\w*\}\}", t) for p, t in files.items() if "{{" in t}
    assert left == {}
    assert all("NAME" not in p.name and "package" not in p.parts for p in files)


def test_every_template_file_is_package_data_the_wheel_carries() -> None:
    # the wheel's glob is kindtemplate/**/*.tmpl: a file without the suffix would be left out
    files = [p for p in TEMPLATE.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert files and all(p.name.endswith(newkind.SUFFIX) for p in files), files
    tokens = {t for p in files for t in re.findall(r"\{\{(\w+)\}\}", p.read_text())}
    assert tokens == set(spellings("x")), tokens  # every spelling used, none missing


def test_an_installation_without_the_template_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(newkind, "TEMPLATE", "no_such_template")
    with pytest.raises(ScaffoldError, match=re.escape("has no template (no_such_template/ beside")):
        write("ttft", tmp_path / "out", SHIPPED)
    assert not (tmp_path / "out").exists()


def test_the_kind_modules_import_the_package_through_the_door_alone() -> None:
    for path, text in render("ttft").items():
        if path.suffix == ".py" and path.parts[0] == "ttft_kind":
            named = re.findall(r"^\s*(?:from|import) (pytest_mtpsweep\S*)", text, re.M)
            assert all(m.startswith("pytest_mtpsweep.kindapi") for m in named), (path, named)


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("Ttft", "'Ttft' is not a kind name: use a lowercase Python name"),
        ("1x", "'1x' is not a kind name"),
        ("my-kind", "'my-kind' is not a kind name"),
        ("class", "'class' is not a kind name"),
        ("x_", "'x_' is not a kind name"),
        (LONGEST + "x", f"at most {newkind.MAX_NAME} characters"),
        (
            "decode",
            "'decode' is a shipped kind's name (authoring, decode, load); a third party "
            "may not take it: choose another name.",
        ),
        ("request", "'request' is a name pytest or the plugin keeps for itself"),
        ("mtpsweep_x", "keeps for itself; choose another name."),
        ("kind", "keeps for itself"),
    ],
)
def test_a_name_that_cannot_be_a_kind_is_refused(tmp_path: Path, name: str, said: str) -> None:
    with pytest.raises(ScaffoldError) as err:
        write(name, tmp_path / "out", SHIPPED)
    assert said in str(err.value) and str(err.value).count(". ") == 0
    assert not (tmp_path / "out").exists()


def test_a_folder_that_is_not_empty_or_not_a_folder_is_refused(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    a_file = tmp_path / "file"
    a_file.write_text("mine")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "plan.json").write_text("{}")
    cases = {
        full: "already exists and is not empty; name a new folder with --dir, or empty that one",
        a_file: "holds something other than a new kind package, which writing would destroy",
        link: "is a link, which could point anywhere; name a new folder with --dir.",
        tmp_path / "no" / "such": "which is not a folder that exists; name a new folder",
        run / "kind": "is inside the run directory",
    }
    for target, said in cases.items():
        with pytest.raises(ScaffoldError, match=re.escape(said)):
            write("ttft", target, SHIPPED)
    assert [p.name for p in full.iterdir()] == ["keep.txt"] and a_file.read_text() == "mine"
    assert not (tmp_path / "elsewhere").exists() and not (run / "kind").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert len(write("ttft", empty, SHIPPED)) == 10  # an empty folder is fine


def test_the_command_writes_the_package_and_refuses_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["new-kind", "ttft"]) == 0
    assert (tmp_path / "ttft-kind" / "ttft_kind" / "run.py").is_file()
    assert "wrote kind 'ttft': 10 files in ttft-kind/" in capsys.readouterr().out
    assert main(["new-kind", "ttft"]) == 2  # the default folder is there now
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "mtpsweep: ttft-kind already exists and is not empty; name a new folder with --dir, or "
        "empty that one first."
    ]
    assert main(["new-kind", "load", "--dir", "elsewhere"]) == 2  # a shipped kind's, installed
    assert "'load' is a shipped kind's name" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere").exists()


def checked(name: str, where: Path) -> Path:
    """Kind `name` written into `where`, its ruff and format checks run there (its own
    pyproject.toml's settings); the folder."""
    folder = where / f"{name}-kind"
    write(name, folder, SHIPPED)
    for argv in (
        [*RUFF, "check", "--no-cache", "."],
        [*RUFF, "format", "--no-cache", "--check", "."],
    ):
        done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{name}: {' '.join(argv[3:])}\n{done.stdout}{done.stderr}"
    return folder


@pytest.mark.parametrize("name", ["x", "probe", "ttft", "my_probe", LONGEST])
def test_the_written_package_is_lint_clean(tmp_path: Path, name: str) -> None:
    checked(name, tmp_path)


def test_the_lint_check_fails_on_a_bad_line(tmp_path: Path) -> None:
    folder = checked("x", tmp_path)
    (folder / "x_kind" / "run.py").write_text("import os\n", encoding="utf-8")
    done = subprocess.run([*RUFF, "check", "--no-cache", "."], cwd=folder, check=False)
    assert done.returncode == 1  # F401: the check above would have said so


def test_the_written_package_is_mypy_strict_clean(tmp_path: Path) -> None:
    """mypy --strict from the package's own pyproject.toml (its package and experiments/),
    with this tree's pytest_mtpsweep; a planted error is seen, so the check can fail."""
    folder = checked("my_probe", tmp_path)
    env = {**os.environ, "MYPYPATH": str(REPO)}
    argv = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")]
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues found in 6 source files" in done.stdout
    run = folder / "my_probe_kind" / "run.py"
    run.write_text(run.read_text() + "\nWRONG: int = RECORD_FIELDS\n")
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "run.py" in done.stdout
