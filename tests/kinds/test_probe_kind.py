"""A kind from outside the package runs through the whole protocol: the probe kind, which is
`mtpsweep new-kind probe`'s package as written (tests/kinds/probe.py renders it), with its own
test file, registered through the entry-point group as any third party's kind would be (a
`*.dist-info` on PYTHONPATH, found by importlib.metadata), against STAND-IN HTTP servers.

Preflight (its own item among the protocol's), the sessions (attached, warmed up, closed),
its records, `-k`, `--resume` (and its refusal when the kind's plan fields change), its option,
the session-end analysis and `mtpsweep analyse`: nothing in pytest_mtpsweep names it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.interface import registry
from tests.kinds import probe
from tests.report.dom import parse
from tests.sandbox import REPO, only_run

LADDER = """
kind = "probe"
question = "How long does GET /health take on each stand-in?"
baseline = "a"
cycles = 2
requests = 3
[[treatments]]
key = "a"
base_url = "{a}"
ready_url = "/health"
[[treatments]]
key = "b"
base_url = "{b}"
ready_url = "/health"
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A project with a probe ladder and its test, the kind installed by entry point only."""
    site = pytester.path / "site"
    info = site / "probe_kind-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: probe-kind\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[pytest_mtpsweep.kinds]\n{probe.ENTRY_POINT}\n")
    parts = [str(site), probe.path_entry(), str(REPO), os.environ.get("PYTHONPATH")]
    path = os.pathsep.join(filter(None, parts))
    monkeypatch.setenv("PYTHONPATH", path)
    with probe.stand_in() as a, probe.stand_in() as b:
        ladders = pytester.path / "experiments" / "ladders"
        ladders.mkdir(parents=True)
        (ladders / "probe.toml").write_text(LADDER.format(a=a, b=b))
        (ladders / "nope.toml").write_text(LADDER.format(a=a, b=b).replace("probe", "nope", 1))
        shutil.copy(probe.root() / "experiments" / "test_probe.py", pytester.path / "experiments")
        yield pytester.path


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("experiments/", "-p", "no:cacheprovider", *args)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_a_kind_from_its_own_package_runs_through_the_whole_protocol(
    pytester: pytest.Pytester, project: Path
) -> None:
    first = run(pytester, "--ladder=probe", "-k", "c1-a")
    first.assert_outcomes(passed=3, deselected=9)
    run_dir = only_run(project)
    out = first.stdout.str()
    assert "mtpsweep: probe ladder probe" in out and "a: 3 GETs, median" in out

    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["kind"] == "probe" and plan["probe"] == {"path": "/health", "requests": 3}
    assert plan["keyed"]["probe_path"] == "/health"
    checks = {i["name"]: i for i in json.loads((run_dir / "preflight.json").read_text())}
    assert checks["probe_path"]["verdict"] == "pass" and checks["endpoint:a"]["verdict"] == "pass"
    prereg = (run_dir / "preregistration.md").read_text()
    assert "the latency of GET /health, 3 per session" in prereg
    records = lines(run_dir / "records" / "01_a_c1.jsonl")
    assert [r["request"] for r in records] == [1, 2, 3]
    fields = probe.module("run").RECORD_FIELDS
    assert list(records[0])[: len(fields)] == list(fields)
    assert all(r["valid"] and r["http_status"] == 200 and r["latency_s"] > 0 for r in records)
    session = json.loads((run_dir / "sessions" / "01_a_c1.json").read_text())
    assert session["released"] == "not applicable: attached" and session["probe_median_s"] > 0
    assert not (run_dir / "records" / "02_b_c1.jsonl").exists()  # -k kept b's server unasked

    # --resume with a changed kind field (through the kind's own option) is another run
    changed = run(pytester, "--ladder=probe", "--resume", str(run_dir), "--probe-requests", "4")
    assert changed.ret == pytest.ExitCode.USAGE_ERROR
    assert "this invocation differs from the run in probe;" in changed.stdout.str()

    resumed = run(pytester, "--ladder=probe", "--resume", str(run_dir))
    resumed.assert_outcomes(passed=9, skipped=3)  # the done session is not run again
    assert len(lines(run_dir / "records" / "01_a_c1.jsonl")) == 3
    summary = (run_dir / "analysis" / probe.module("analysis").SUMMARY_CSV).read_text().splitlines()
    assert [row.split(",")[:2] for row in summary[1:]] == [["a", "6"], ["b", "6"]]

    again = subprocess.run(
        [sys.executable, "-m", "pytest_mtpsweep.cli.main", "analyse", str(run_dir)],
        capture_output=True, text=True, check=False, cwd=project,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "b: 6 GETs, median" in again.stdout
    assert_the_report_is_the_probes_model(run_dir)


def assert_the_report_is_the_probes_model(run_dir: Path) -> None:
    """report.md and report.html, both rendered from the probe's one report model: the page
    opens with its question and headline, then its limitations, its record table collapsed
    and filterable by treatment; report.md carries the headline but not the page's table."""
    md = (run_dir / "analysis" / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# Probe report: ")
    assert "Question: How long does GET /health take on each stand-in?" in md
    assert "## Headline" in md and "| a | 6 |" in md and "## Every treatment" not in md
    page = parse((run_dir / "analysis" / "report.html").read_text(encoding="utf-8"))
    ids = [n.attrs["id"] for n in page.find("details")]
    assert ids == ["question", "limitations", "every-treatment"]
    assert "How long does GET /health" in page.by_id("headline").words()
    assert [c.words() for c in page.by_id("medians").find("td")][:2] == ["a", "6"]
    assert "not a load test" in page.by_id("limitations").words()
    assert "open" not in page.by_id("every-treatment").attrs  # the detail starts collapsed
    facets = page.by_id("every-treatment").find("script", class_="facets")
    assert json.loads(facets[0].text())["keys"] == ["treatment"]


def test_the_probe_kind_draws_its_page_with_nothing_of_analysis() -> None:
    """The check of a fourth kind's page: its report comes from the report family alone."""
    import ast

    named = set()
    for path in probe.package_dir().glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                named.add(node.module)
    # through the front door: the report model and its writer, no statistics
    assert "pytest_mtpsweep.kindapi.report" in named
    assert not [m for m in named if m.startswith("pytest_mtpsweep.kindapi.analysis")], named


def test_a_ladder_naming_no_installed_kind_says_which_are(
    pytester: pytest.Pytester, project: Path
) -> None:
    result = run(pytester, "--ladder=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "field 'kind' is 'nope', which no installed package provides" in err
    shipped = ", ".join(sorted({*registry.names(), "probe"}))  # the shipped kinds and probe
    assert f"(installed kinds: {shipped})" in err
