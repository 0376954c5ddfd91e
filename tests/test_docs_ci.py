"""docs/ci.md runs: the workflow's commands are the commands this package accepts.

Every `run:` line of the GitHub workflow is either run here as written (lint, provision, the
gated ladder run on the real llama-server and model, the job-summary step) or, for the
install, checked against pyproject.toml; the GitLab job must hold the same commands.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.sandbox import MACHINERY_MODEL

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "ci.md"


def yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)


def github_runs() -> list[str]:
    block = yaml_blocks()[0]
    assert not re.search(r"^\s*run: [|>]", block, flags=re.M), "keep every run: on one line"
    return [m.strip() for m in re.findall(r"^\s*(?:- )?run: (.+)$", block, flags=re.M)]


def gitlab_script() -> list[str]:
    block = yaml_blocks()[1]
    script = block.split("  script:\n", 1)[1].split("\n  after_script:", 1)[0]
    return [line.strip()[2:] for line in script.splitlines() if line.strip().startswith("- ")]


def shell(cmd: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """One workflow line, as a runner's shell runs it, with this venv's commands on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        ["bash", "-e", "-c", cmd],
        cwd=cwd,
        env={**os.environ, "PATH": path, **env},
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )


def the(commands: list[str], start: str) -> str:
    """The one command that starts so (the lint line appears in both jobs, identically)."""
    (found,) = {c for c in commands if c.startswith(start)}
    return found


def test_each_command_is_one_plain_yaml_scalar() -> None:
    # The lines are read here without a YAML parser, so they must be what YAML reads them as:
    # a plain scalar ends at ": " or " #" (PyYAML confirmed the page parses, by hand).
    for command in github_runs() + gitlab_script():
        assert ": " not in command and " #" not in command, command
        assert command[0] not in "'\"[{&*!|>%@`", command


def test_the_gitlab_job_runs_the_same_commands() -> None:
    runs = github_runs()
    script = gitlab_script()
    experiment = runs[runs.index(the(runs, "mtpsweep provision")) - 1 :]
    assert script == experiment[: len(script)]
    assert the(runs, "mtpsweep lint") == the(script, "mtpsweep lint")


def test_the_install_lines_name_real_extras() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    installs = [c for c in github_runs() if c.startswith("python -m pip install")]
    assert installs == ["python -m pip install -e .", 'python -m pip install -e ".[demo]"']
    assert "demo" in extras
    # provision builds llama-server for the runner's CPU with its own flags (rig/build.py): a
    # workflow's CMAKE_ARGS would only reach a pip build it no longer makes
    assert "CMAKE_ARGS" not in yaml_blocks()[0]
    assert "path: ~/.cache/pytest-mtpsweep" in yaml_blocks()[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A checkout as the runner has it: the experiments directory."""
    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    return tmp_path


def test_lint_passes_as_written(project: Path) -> None:
    done = shell(the(github_runs(), "mtpsweep lint"), project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(": ok (") == len(list((project / "experiments/ladders").iterdir()))


def test_the_ladder_run_collects_what_the_page_says(project: Path) -> None:
    run = the(github_runs(), "pytest experiments/")
    done = shell(f"{run} --collect-only -q", project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "32 tests collected" in done.stdout  # 2 treatments x 2 cycles x 8 edits


@pytest.mark.server
def test_the_workflow_runs_on_the_real_server(
    project: Path, server_bin: Path, machinery_model: Path
) -> None:
    runs = github_runs()
    done = shell(the(runs, "mtpsweep provision"), project)
    assert done.returncode == 0, done.stdout + done.stderr
    # the page's run, plus the opposite gate on the same cell, so at least one fails: the XML
    # and the exit status must both say failed; each gate is judged as the analysis decided
    # (whether n-gram drafting is faster here is the machine's to say, not the test's). A gate
    # on a cell the run never measures (prose) is refused before any session (issue 50).
    run = the(runs, "pytest experiments/") + f" --model={MACHINERY_MODEL}"
    run += " --expect=ngram-simple:structured:slower"
    done = shell(run, project)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr
    root = ET.parse(project / "mtpsweep-junit.xml").getroot()
    cases = {c.attrib["name"]: c for c in root.iter("testcase")}
    with (project / "mtpsweep-run" / "analysis" / "contrasts.csv").open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["published"] == "True"]
    decided = {(r["treatment"], r["subset"]): r["decision"] for r in rows}
    page_gate_met = decided[("ngram-simple", "structured")] == "faster"
    page_case = cases["expect[ngram-simple:structured:faster]"]
    assert (page_case.find("failure") is None) == page_gate_met
    slower = decided[("ngram-simple", "structured")] == "slower"
    assert (cases["expect[ngram-simple:structured:slower]"].find("failure") is None) == slower
    assert "preflight[server_version]" in cases and "preflight[model:" in " ".join(cases)
    measured = [c for n, c in cases.items() if n.startswith("test_decode[")]
    assert len(measured) == 32 and all(c.find("failure") is None for c in measured)
    props = {p.attrib["name"]: p.attrib["value"] for p in measured[0].iter("property")}
    assert float(props["decode_rate_tps_primary"]) > 0 and props["treatment"] == "none"
    summary = project / "summary.md"
    step = the(runs, "awk ")
    done = shell(step, project, GITHUB_STEP_SUMMARY=str(summary))
    assert done.returncode == 0, done.stderr
    text = summary.read_text()
    assert text.startswith("## Headline (published endpoint)") and "ngram-simple" in text
    assert "## Endpoints" not in text
