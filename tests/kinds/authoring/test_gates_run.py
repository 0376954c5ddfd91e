"""`--expect COHORT:SUBJECT:not-slower:M` through pytest, end to end, against STUB OpenAI
servers (tests/stub_openai_server.py): alpha writes every function right (the plain cohort after
the checker's error), beta never in the doctest cohort. Six tasks, one repeat: the gates are
judged after the last session, become JUnit items with their figures, and go into --history;
a bad gate is refused in one line before a request is made."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_mtpsweep.cli.main import main
from pytest_mtpsweep.state.history import read
from tests.kinds.authoring.project import WRONG, function_of, make_project, run, scripted
from tests.stub_openai_server import Messages, Script, serve


def doctest_never(messages: Messages) -> str:
    """Like `scripted`, but the doctest cohort's function is always wrong."""
    first = next(m["content"] for m in messages if m["role"] == "user")
    if "docstring" in first:
        return f"Here it is.\n```python\n{WRONG[function_of(messages)]}```\n"
    return scripted(messages)


def six_tasks(exp: Path) -> None:
    """Four more tasks, copies of the two the project has (the stub answers by function)."""
    tasks = exp / "authoring" / "tasks"
    for name in ("t_add", "t_neg"):
        for copy in (2, 3):
            shutil.copytree(tasks / name, tasks / f"{name}_{copy}")


def gate_cases(xml: Path) -> dict[str, ET.Element]:
    return {c.attrib["name"]: c for c in ET.parse(xml).getroot().iter("testcase")
            if c.attrib["name"].startswith("expect[")}  # fmt: skip


def props(case: ET.Element) -> dict[str, str]:
    return {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")}


GATES = ("doctest:alpha:not-slower:40", "doctest:beta:not-slower:40", "doctest:alpha:not-slower:5")


def test_gates_pass_fail_and_undecided_in_junit_and_history(
    pytester: pytest.Pytester, key: str
) -> None:
    alpha, beta = Script(reply=scripted, key=key), Script(reply=doctest_never, key=key)
    hist = pytester.path / "gates.jsonl"
    with serve(alpha) as a, serve(beta) as b:
        six_tasks(make_project(pytester, {"alpha": a, "beta": b}, repeats=1))
        result = run(pytester, *(f"--expect={g}" for g in GATES), f"--history={hist}",
                     f"--junitxml={pytester.path / 'j.xml'}")  # fmt: skip
    result.assert_outcomes(passed=24 + 1, failed=2)
    got = gate_cases(pytester.path / "j.xml")
    met, inferior, undecided = (got[f"expect[{g}]"] for g in GATES)
    assert met.find("failure") is None
    p = props(met)
    assert p["met"] == "True" and p["metric"] == "green_pp" and float(p["margin_pct"]) == 40
    assert float(p["lower_pct"]) < 0.0 == float(p["estimate_pct"]) < float(p["upper_pct"])
    said = inferior.find("failure")
    assert said is not None and "inferior: -100.00 pp [90.00 % CI" in said.attrib["message"]
    said = undecided.find("failure")
    assert said is not None and "undecided at the last look" in said.attrib["message"]
    assert "run more tasks or more repeats" in said.attrib["message"]
    history = read(hist)
    assert [e.decision for e in history.entries] == ["pass", "fail", "fail"]
    e = history.entries[1]
    assert (e.treatment, e.subset, e.baseline, e.metric) == ("doctest", "beta", "plain", "green_pp")
    assert e.upper_pct is not None and e.upper_pct < -40.0
    # mtpsweep analyse judges the finished run the same way: exit 1 on a gate not met
    (rd,) = (pytester.path / "runs" / "tiny").iterdir()
    assert main(["analyse", str(rd), "--expect", GATES[0]]) == 0
    assert main(["analyse", str(rd), *(f"--expect={g}" for g in GATES)]) == 1
    assert main(["analyse", str(rd), "--expect", "doctest:alpha:faster"]) == 2


@pytest.mark.parametrize(
    ("gate", "said"),
    [("doctest:alpha:faster", "is not COHORT:SUBJECT:not-slower:M"),
     ("doctest:alpha:not-slower:80", "not a number of percentage points in (0, 50]"),
     ("json:alpha:not-slower:5", "unknown cohort 'json'; use one of doctest, plain"),
     ("doctest:gamma:not-slower:5", "unknown subject 'gamma'; use one of alpha"),
     ("plain:alpha:not-slower:5", "plain is the baseline cohort itself")],
)  # fmt: skip
def test_a_bad_gate_is_one_line_before_anything_starts(
    pytester: pytest.Pytester, stub: tuple[Script, str], gate: str, said: str
) -> None:
    script, url = stub
    make_project(pytester, {"alpha": url})
    result = run(pytester, f"--expect={gate}")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and not script.requests
    assert said in out and "Traceback" not in out
    assert sum(f"--expect {gate}:" in line for line in out.splitlines()) >= 1
