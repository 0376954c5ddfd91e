"""The host rule end to end with the STUB server: a spoiled session is set aside and re-run
once; a re-run spoiled too is kept with its first attempt, both flagged; the report says so.

The witness is faked (`rig.host.noise` reports a memory stall for chosen sessions) so that
the busy CI host's real load cannot decide these tests; tests/test_host_hog.py is the real one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_mtpsweep.base.schema import HostNoise
from pytest_mtpsweep.rig import hostnoise as host
from tests.protocol.test_session import STUB, run_stub, stub_project, stubs_running
from tests.sandbox import only_run, read_records

# Only the faked memory stall can trip the rule: every other threshold is at its top.
RULE = """
[host_rule]
cpu_noise_pct = 100
memory_stall_pct = 10
cpu_stall_pct = 100
major_faults = 1000000000
calibration_drift_pct = 100
"""


def with_rule(pytester: pytest.Pytester, rule: str = RULE) -> Path:
    few = stub_project(pytester, [])
    ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
    ladder.write_text(ladder.read_text() + rule)
    return few


def stall_in(monkeypatch: pytest.MonkeyPatch, spoiled: set[int]) -> list[int]:
    """Fake a 42 % memory stall in the host witnesses of the chosen sessions (1 = the first
    one closed, re-runs counted where they close)."""
    real: Callable[..., HostNoise] = host.noise
    calls: list[int] = []

    def noise(start: host.CpuSample, end: host.CpuSample) -> HostNoise:
        calls.append(len(calls) + 1)
        out = real(start, end)
        if len(calls) in spoiled:
            out["memory_stall_pct"] = 42.0
        return out

    monkeypatch.setenv("MTPSWEEP_HOST_RULE", "on")
    monkeypatch.setattr(host, "noise", noise)
    return calls


def session(run: Path, name: str) -> dict[str, object]:
    info: dict[str, object] = json.loads((run / "sessions" / f"{name}.json").read_text())
    return info


def test_a_spoiled_session_is_set_aside_and_re_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = stall_in(monkeypatch, {2})  # 02_b_c1's first attempt
    few = with_rule(pytester)
    result = run_stub(pytester, few, "--no-calibration")
    result.assert_outcomes(passed=8)
    assert len(calls) == 5  # four sessions and one re-run
    run = only_run(pytester.path)
    assert [p.name for p in (run / "quarantine").iterdir()] == ["02_b_c1"]
    reason = (run / "quarantine" / "02_b_c1" / "reason.txt").read_text()
    assert reason.startswith("host spoiled: some task stalled on memory 42.0% of the session")
    again = session(run, "02_b_c1")
    assert again["rerun"] is True and again["quarantined"] is None
    assert "host_spoiled" not in again
    verdict = again["host_rule"]
    assert isinstance(verdict, dict) and verdict["applied"] is True and verdict["spoiled"] is None
    assert "memory_stall_pct" in verdict["checked"]  # this host has PSI
    prereg = (run / "preregistration.md").read_text()
    assert "## Host rule" in prereg and "- memory_stall_pct > 10" in prereg
    plan = json.loads((run / "plan.json").read_text())
    assert plan["host_rule"]["applied"] is True and plan["host_rule"]["memory_stall_pct"] == 10
    report = (run / "analysis" / "report.md").read_text()
    assert "1 session(s) were set aside and re-run for the host (02_b_c1: some task" in report
    assert "## Host rule" in report and "with the spoiled attempts" in report
    html = (run / "analysis" / "report.html").read_text()
    assert "with the spoiled attempts" in html and '<h3 id="host-rule">Host rule' in html
    contrasts = json.loads((run / "analysis" / "contrasts.json").read_text())
    assert contrasts["host_rule"]["rerun"] == [["02_b_c1", reason.strip()]]
    assert stubs_running() == []


def test_a_re_run_spoiled_too_is_kept_with_its_first_attempt(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    stall_in(monkeypatch, {2, 3})  # 02_b_c1 and its re-run
    monkeypatch.setattr(host, "PRESSURE_ROOT", pytester.path / "no-psi")  # as if not Linux
    few = with_rule(pytester)
    result = run_stub(pytester, few, "--no-calibration")
    result.assert_outcomes(passed=8)
    run = only_run(pytester.path)
    assert list((run / "quarantine").iterdir()) == []  # both kept
    info = session(run, "02_b_c1")
    assert info["rerun"] is True and info["quarantined"] is None
    assert str(info["host_spoiled"]).endswith("(kept: it was the one re-run)")
    first = info["host_spoiled_first"]
    assert isinstance(first, dict) and first["rerun"] is False
    assert "kept: its re-run was spoiled too" in first["host_spoiled"]
    records, bad = read_records(run / "records" / "02_b_c1.jsonl")
    assert bad == 0 and len(records) == 4  # both attempts' measurements, first attempt first
    assert (run / "servers" / "02_b_c1.first.log").is_file()
    report = (run / "analysis" / "report.md").read_text()
    assert "2 session attempt(s) the host spoiled were kept and are averaged in" in report
    assert "02_b_c1 (first attempt): some task stalled on memory 42.0%" in report
    # without PSI the stall witnesses are not available: said, not applied, no crash
    quiet = session(run, "01_a_c1")
    assert quiet["host"]["cpu_stall_pct"] is None  # type: ignore[index]
    verdict = quiet["host_rule"]
    assert isinstance(verdict, dict) and verdict["spoiled"] is None
    assert "no Linux PSI" in verdict["not_available"]["cpu_stall_pct"]
    assert "cpu_stall_pct" not in verdict["checked"]
    assert "not applied for want of the witness: calibration_drift_pct, no start and" in report
    assert "; cpu_stall_pct, no Linux PSI here (" in report
    assert stubs_running() == []


def test_off_in_the_environment_is_recorded_and_nothing_is_set_aside(
    pytester: pytest.Pytester,
) -> None:
    # the suite's default (tests/conftest.py): a zero threshold would spoil every session
    few = with_rule(pytester, "[host_rule]\ncpu_noise_pct = 0\nmajor_faults = 0\n")
    result = run_stub(pytester, few, "--no-calibration", "-k", "c1")
    result.assert_outcomes(passed=4)
    run = only_run(pytester.path)
    assert list((run / "quarantine").iterdir()) == []
    verdict = session(run, "01_a_c1")["host_rule"]
    assert verdict == {
        "applied": False,
        "why": "not applied: MTPSWEEP_HOST_RULE=off in the environment",
        "spoiled": None,
    }
    assert (
        "The host rule is not applied: MTPSWEEP_HOST_RULE=off"
        in (run / "preregistration.md").read_text()
    )
    report = (run / "analysis" / "report.md").read_text()
    assert "**Host rule:** not applied: MTPSWEEP_HOST_RULE=off" in report


HOG_RULE = """
[host_rule]
cpu_noise_pct = 100
memory_stall_pct = 100
cpu_stall_pct = 75
major_faults = 1000000000
calibration_drift_pct = 100
"""
SPINNERS = 6  # busy loops on a 2-core CI host: some task waits for a CPU nearly all the time


def test_a_real_cpu_hog_mid_session_spoils_that_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real load, real witness: busy loops started after 02_b_c1's first measurement and
    stopped once it closes make Linux PSI show CPU stalls over cpu_stall_pct in that session;
    it is set aside and re-run, and the report names it."""
    import subprocess
    import sys
    import time

    from tests.sandbox import spawn_pytest, wait_for_record

    if host.pressure_total_us("cpu") is None:
        pytest.skip("no Linux PSI (/proc/pressure/cpu) on this host: the witness is not available")
    monkeypatch.setenv("MTPSWEEP_HOST_RULE", "on")
    few = stub_project(pytester, ["--stub-token-ms", "40"], prompts=14)  # b: ~0.3 s a request
    ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
    ladder.write_text(ladder.read_text() + HOG_RULE)
    t0 = time.monotonic()
    proc = spawn_pytest(
        pytester.path, "experiments/", "--ladder=stub", f"--server-bin={STUB}",
        f"--prompts-dir={few}", "--no-calibration", "--boot=1000",
        # this test's subject is a hog mid-session: a CI host busy at the start is recorded
        "--waive=host_quiet",
    )  # fmt: skip
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        wait_for_record(pytester.path, "02_b_c1.jsonl", proc)  # mid-session: one measured
        started = time.monotonic()
        hogs = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(SPINNERS)
        ]
        closed = ("runs/*/*/sessions/02_b_c1.json", "runs/*/*/quarantine/02_b_c1")
        while not any(list(pytester.path.glob(p)) for p in closed) and proc.poll() is None:
            time.sleep(0.02)
        hogged = time.monotonic() - started
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert proc.wait(timeout=120) == 0, (pytester.path / "run.log").read_text()[-3000:]
    run = only_run(pytester.path)
    held = run / "quarantine" / "02_b_c1" / "reason.txt"
    if held.is_file():  # the re-run was clean: a host quiet but for the hog
        reason = held.read_text().strip()
        first = json.loads((held.parent / "session.json").read_text())
        assert session(run, "02_b_c1")["rerun"] is True
    else:  # the CI host's own load spoiled the re-run as well: both kept, both flagged
        first = session(run, "02_b_c1")["host_spoiled_first"]
        assert isinstance(first, dict)
        reason = str(first["host_spoiled"])
    assert reason.startswith("host spoiled: some task waited for a CPU"), reason
    # busy loops on every core for all but the first of 14 measurements leave some task
    # waiting nearly all the time, whatever the host's own load
    assert first["host"]["cpu_stall_pct"] > 80, first["host"]
    report = (run / "analysis" / "report.md").read_text()
    assert "02_b_c1: some task waited for a CPU" in report
    print(
        f"hogged {hogged:.1f} s of 02_b_c1 (measured span {first['host']['span_s']:.1f} s): "
        f"cpu_stall_pct {first['host']['cpu_stall_pct']:.1f}, other_cpu_pct "
        f"{first['host']['other_cpu_pct']:.1f}, re-run {'clean' if held.is_file() else 'spoiled'}"
        f"; whole run {time.monotonic() - t0:.1f} s"
    )
    assert stubs_running() == []


def test_a_spoiled_session_whose_re_run_is_set_aside_comes_back_whole(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.protocol.test_session import staged_stub

    stall_in(monkeypatch, {2})  # 02_b_c1's first attempt; its re-run loses a usage chunk
    wrapper = staged_stub(tmp_path, "", "--fault no-usage@3")
    few = with_rule(pytester)
    result = run_stub(pytester, few, "--no-calibration", server_bin=wrapper)
    result.assert_outcomes(passed=7, failed=1)  # 03_b_c2's second measurement
    run = only_run(pytester.path)
    held = sorted(p.name for p in (run / "quarantine").iterdir())
    assert held == ["02_b_c1.2", "03_b_c2", "03_b_c2.2"]  # the first attempt is back
    assert "partial census" in (run / "quarantine" / "02_b_c1.2" / "reason.txt").read_text()
    info = session(run, "02_b_c1")
    assert info["rerun"] is False and info["quarantined"] is None
    assert "(kept: its re-run was set aside (partial census" in str(info["host_spoiled"])
    records, _ = read_records(run / "records" / "02_b_c1.jsonl")
    assert len(records) == 2 and all(r["valid"] for r in records)
    assert (run / "servers" / "02_b_c1.log").is_file()
    assert stubs_running() == []
