"""Exit codes: what a CI job can tell from pytest's status, and the JUnit case that says which.

The table in docs/ci.md and these runs must agree (STUB server: the faults on demand)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.protocol.test_session import run_stub, stub_project

REPO = Path(__file__).resolve().parent.parent

# A gate needs a decision. Four cycles, not the stub ladder's two: two give the session-level
# interval one degree of freedom, and on a busy CI host even b's 2x speed came out
# `inconclusive` at two.
GATED = ["--cycles=4"]

# (scenario, stub fault flags for treatment b, extra args, exit code, the failing JUnit case)
SCENARIOS = [
    (
        "all valid, gates met",
        ["--stub-token-ms", "1"],
        [*GATED, "--expect=b:prose:faster"],
        0,
        None,
    ),
    ("a measurement invalid", ["--fault", "no-usage@3"], ["-k", "c1"], 1, "test_decode["),
    ("a gate unmet", ["--stub-token-ms", "1"], [*GATED, "--expect=b:prose:slower"], 1, "expect["),
    ("a preflight item failed", [], ["--server-build=deadbeef"], 1, "preflight[server_version]"),
    ("stopped by a protocol rule", ["--fault", "reasoning@3"], [], 2, "stopped"),
    ("stopped: warm-up failed twice", ["--fault", "http-400@1"], [], 2, "stopped"),
    # treatment b's server dies by SIGILL while loading (preflight's smoke test starts the
    # server without treatment flags, so it passes): the session and its re-run, then the stop
    ("a server that cannot run here", ["--fault", "sigill-at-start"], [], 2, "stopped"),
    ("usage error", [], ["--expect=c:prose:faster"], 4, None),
]


def failing_cases(xml: Path) -> list[str]:
    if not xml.exists():
        return []
    return [
        c.attrib["name"]
        for c in ET.parse(xml).getroot().iter("testcase")
        if c.find("failure") is not None or c.find("error") is not None
    ]


@pytest.mark.parametrize(
    ("scenario", "fault", "args", "code", "case"), SCENARIOS, ids=[s[0] for s in SCENARIOS]
)
def test_exit_code_and_the_case_that_says_why(
    pytester: pytest.Pytester,
    scenario: str,
    fault: list[str],
    args: list[str],
    code: int,
    case: str | None,
) -> None:
    # a gate needs a decision, and a decision 6 prompts or more
    few = stub_project(pytester, fault, prompts=6 if any("--expect=b" in a for a in args) else 2)
    xml = pytester.path / "junit.xml"
    result = run_stub(
        pytester, few, "--no-calibration", "--max-tokens=16", f"--junitxml={xml}", *args
    )
    assert result.ret == code, result.stdout.str()[-3000:]
    failed = failing_cases(xml)
    if case is None:
        assert failed == []
    else:
        assert failed and all(name.startswith(case) for name in failed), failed


def documented_exit_codes() -> dict[str, tuple[int, str]]:
    """The exit-code table of docs/ci.md: when -> (code, pytest's name)."""
    text = (REPO / "docs" / "ci.md").read_text()
    section = text.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d) \| `(\w+)` \| ([^|]+) \|", section, flags=re.M)
    return {when.strip(): (int(code), name) for code, name, when in rows}


def test_the_docs_document_every_code_by_pytests_name() -> None:
    table = documented_exit_codes()
    assert {code for code, _ in table.values()} == {0, 1, 2, 4, 5}
    for code, name in table.values():
        assert pytest.ExitCode(code).name == name
    documented = {when: code for when, (code, _) in table.items()}
    for scenario, _, _, code, _ in SCENARIOS:
        matches = [w for w in documented if w.lower().startswith(scenario.split(":")[0])]
        assert matches and all(documented[w] == code for w in matches), scenario
