"""The experiment in JUnit XML: measurement properties, preflight items, --expect gates, the
analysis headline in the suite's properties, a stopped run (STUB server; the real server and
model in tests/test_docs_ci.py and tests/test_plugin.py's preflight gate)."""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import pytest_mtpsweep
from tests.protocol.test_session import run_stub, stub_project, stubs_running

MEASUREMENT_PROPERTIES = {
    "run_id",
    "session",
    "treatment",
    "cycle",
    "prompt_id",
    "subset",
    "position",
    "valid",
    "decode_rate_tps_primary",
    "decode_rate_tps_interval",
    "interval_basis",
    "ttft_s",
    "completion_tokens",
    "finish_reason",
}


def cases(xml: Path) -> list[ET.Element]:
    return list(ET.parse(xml).getroot().iter("testcase"))


def props(element: ET.Element) -> dict[str, str]:
    found = element.find("properties")
    if found is None:
        return {}
    return {p.attrib["name"]: p.attrib["value"] for p in found.iter("property")}


def outcome(case: ET.Element) -> str:
    for tag in ("failure", "error", "skipped"):
        if case.find(tag) is not None:
            return tag
    return "passed"


def suite_props(xml: Path) -> dict[str, str]:
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None
    return props(suite)


def test_a_run_with_gates_in_the_xml(pytester: pytest.Pytester) -> None:
    # The stub streams b at 1 ms a token against a's 2 ms: b is faster, never slower (6 prompts:
    # fewer leave every decision insufficient; 4 cycles: at two the session-level interval has
    # one degree of freedom, and on a busy CI host even this 2x effect can be inconclusive).
    few = stub_project(pytester, ["--stub-token-ms", "1"], prompts=6)
    xml = pytester.path / "junit.xml"
    result = run_stub(
        pytester,
        few,
        "--no-calibration",
        "--max-tokens=16",
        f"--junitxml={xml}",
        "--cycles=4",
        "--expect=b:prose:faster",
        "--expect=b:prose:slower",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the unmet gate, and only it
    result.assert_outcomes(passed=49, failed=1)
    got = cases(xml)
    names = [c.attrib["name"] for c in got]
    first_measurement = names.index("test_decode[c1-a-prose_01]")
    preflight = names[:first_measurement]
    assert "preflight[ports]" in preflight and "preflight[run_dir]" in preflight
    assert all(n.startswith("preflight[") for n in preflight)
    assert all(c.attrib["classname"] == "mtpsweep" for c in got[:first_measurement])
    assert names[-2:] == ["expect[b:prose:faster]", "expect[b:prose:slower]"]
    assert outcome(got[-2]) == "passed" and outcome(got[-1]) == "failure"
    failure = got[-1].find("failure")
    assert failure is not None and "b:prose:slower not met: decision is faster" in str(
        failure.attrib["message"]
    )

    measured = [c for c in got if c.attrib["name"].startswith("test_decode[")]
    assert len(measured) == 48 and all(outcome(c) == "passed" for c in measured)
    p = props(next(c for c in measured if c.attrib["name"] == "test_decode[c1-b-prose_01]"))
    assert set(p) >= MEASUREMENT_PROPERTIES and "reason" not in p
    assert (p["session"], p["treatment"], p["cycle"], p["prompt_id"], p["subset"]) == (
        "02_b_c1",
        "b",
        "1",
        "prose_01",
        "prose",
    )
    assert float(p["decode_rate_tps_primary"]) > 0 and p["finish_reason"] == "length"
    ports = props(got[names.index("preflight[ports]")])
    assert ports["verdict"] == "pass" and ports["observed"]

    suite = suite_props(xml)
    run_dir = next((pytester.path / "runs" / "stub").iterdir())
    records = pytest_mtpsweep.load_records(run_dir)
    assert len(records) == 48 and set(records["run_id"]) == {p["run_id"]}
    assert suite["mtpsweep.run_id"] == p["run_id"] == run_dir.name
    assert suite["mtpsweep.run_dir"] == str(run_dir)
    assert suite["mtpsweep.measurements"] == "48 valid of 48"
    assert suite["mtpsweep.b:prose"].startswith("vs a: +") and "faster" in suite["mtpsweep.b:prose"]
    assert suite["mtpsweep.report"].endswith("analysis/report.md")


def test_an_invalid_measurement_carries_its_reason(pytester: pytest.Pytester) -> None:
    few = stub_project(pytester, ["--fault", "no-usage@3"], prompts=2)
    xml = pytester.path / "junit.xml"
    result = run_stub(pytester, few, "--no-calibration", "-k", "c1", f"--junitxml={xml}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    bad = [c for c in cases(xml) if outcome(c) == "failure"]
    assert bad, "the measurement without usage must fail"
    p = props(bad[0])
    assert p["valid"] == "False" and "usage" in p["reason"]


def test_a_failing_preflight_is_a_failed_case_and_nothing_starts(
    pytester: pytest.Pytester,
) -> None:
    few = stub_project(pytester, [])
    xml = pytester.path / "junit.xml"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = run_stub(pytester, few, f"--port={port}", f"--junitxml={xml}")
        assert stubs_running() == []
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["FAILED mtpsweep::preflight[[]ports[]]*", "*preflight failed, so no server was started*"]
    )
    got = cases(xml)
    assert [c.attrib["name"] for c in got if not c.attrib["name"].startswith("preflight[")] == []
    failed = [c for c in got if outcome(c) == "failure"]
    assert [c.attrib["name"] for c in failed] == ["preflight[ports]"]
    failure = failed[0].find("failure")
    assert failure is not None and f"{port}" in failure.attrib["message"]
    assert "Address already in use" in failure.attrib["message"]
    assert not (pytester.path / "runs").exists()


def test_a_stopped_run_is_a_stopped_case(pytester: pytest.Pytester) -> None:
    few = stub_project(pytester, ["--fault", "reasoning@3"])
    xml = pytester.path / "junit.xml"
    result = run_stub(pytester, few, "--no-calibration", f"--junitxml={xml}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*3 passed*1 stopped*"])  # warnings may sit between
    stopped = [c for c in cases(xml) if c.attrib["name"] == "stopped"]
    assert len(stopped) == 1 and outcome(stopped[0]) == "failure"
    failure = stopped[0].find("failure")
    assert failure is not None
    assert "** HIDDEN-REASONING=11 chars at 02_b_c1/prose_02" in failure.attrib["message"]
    assert props(stopped[0])["mtpsweep.ladder"] == "stub"


def test_each_gate_verdict_is_appended_to_the_history(pytester: pytest.Pytester) -> None:
    from pytest_mtpsweep.state.history import host_fingerprint, read

    few = stub_project(pytester, [])
    hist = pytester.path / "gates.jsonl"
    args = ("--no-calibration", "--max-tokens=16", "-k", "c1", "--no-analysis")
    gates = ("--expect=b:prose:faster", f"--history={hist}")
    result = run_stub(pytester, few, *args, *gates)
    result.assert_outcomes(passed=4, failed=1)  # not judged without the analysis: it fails
    run_stub(pytester, few, *args, *gates)  # a second run appends its own
    got = read(hist)
    assert got.unreadable == () and len(got.entries) == 2
    e = got.entries[0]
    assert (e.gate, e.treatment, e.baseline, e.subset, e.decision) == (
        "b:prose:faster", "b", "a", "prose", "undecided",
    )  # fmt: skip
    runs = sorted(p.name for p in (pytester.path / "runs" / "stub").iterdir())
    assert sorted(x.run for x in got.entries) == runs
    assert e.host == host_fingerprint() and e.model.startswith("stub")
    assert e.estimate_pct is None  # the verdict carries no interval yet

    bad = run_stub(pytester, few, *args, *gates[:1], f"--history={pytester.path}/no/h.jsonl")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--history *no/h.jsonl: its folder * does not exist; create it*"])
    if Path("/dev/full").exists():  # a device: refused before the run, never after it
        full = run_stub(pytester, few, *args, *gates[:1], "--history=/dev/full")
        assert full.ret == pytest.ExitCode.USAGE_ERROR
        full.stderr.fnmatch_lines(["*--history /dev/full is a device, not a regular file*"])
