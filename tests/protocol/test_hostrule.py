"""The host rule's verdict: a pure function of a session's witnesses and the thresholds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.ladder.values import HostRule
from pytest_mtpsweep.protocol import hostrule
from pytest_mtpsweep.rig import hostnoise as host
from pytest_mtpsweep.state.rundir import RunDir

QUIET = {
    "cpu_noise_pct": 1.0,
    "memory_stall_pct": 0.0,
    "cpu_stall_pct": 2.0,
    "major_faults": 0,
    "calibration_drift_pct": 3.0,
}


def test_a_quiet_session_is_not_spoiled_and_every_criterion_is_checked() -> None:
    v = hostrule.verdict(QUIET, HostRule())
    assert v.spoiled is None
    assert v.checked == tuple(HostRule().thresholds())
    assert v.not_available == {}


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("cpu_noise_pct", 10.5, "other processes used 10.5% of the CPU (over cpu_noise_pct 10)"),
        ("memory_stall_pct", 23.14, "some task stalled on memory 23.1% of the session"),
        ("cpu_stall_pct", 50.01, "some task waited for a CPU 50.0% of the session"),
        ("major_faults", 1001, "the server took 1001 major page faults (over major_faults 1000)"),
        ("calibration_drift_pct", 75.0, "the calibration rate fell 75.0% from start to end"),
    ],
)
def test_each_criterion_over_its_threshold_spoils_the_session(
    name: str, value: float, words: str
) -> None:
    v = hostrule.verdict({**QUIET, name: value}, HostRule())
    assert v.spoiled is not None and v.spoiled.startswith(schema.HOST_SPOILED + ": ")
    assert words in v.spoiled


def test_at_the_threshold_is_not_over_it_and_two_reasons_are_both_named() -> None:
    rule = HostRule()
    assert hostrule.verdict({**QUIET, "cpu_noise_pct": 10.0}, rule).spoiled is None
    both = hostrule.verdict({**QUIET, "cpu_noise_pct": 60.0, "major_faults": 5000}, rule)
    assert both.spoiled is not None
    assert "cpu_noise_pct 10" in both.spoiled and "major_faults 1000" in both.spoiled


def test_a_missing_witness_is_not_available_and_not_applied() -> None:
    seen = {**QUIET, "memory_stall_pct": None, "cpu_stall_pct": None, "major_faults": 10**6}
    why = {"memory_stall_pct": "not available: no /proc/pressure/memory"}
    v = hostrule.verdict(seen, HostRule(), why)
    assert v.not_available["memory_stall_pct"] == "not available: no /proc/pressure/memory"
    assert v.not_available["cpu_stall_pct"].startswith("not available")
    assert "memory_stall_pct" not in v.checked and "major_faults" in v.checked
    assert v.spoiled is not None and "major page faults" in v.spoiled  # the rest still applies


def test_a_threshold_of_zero_trips_on_anything_above_zero() -> None:
    rule = HostRule(cpu_noise_pct=0.0)
    assert hostrule.verdict({**QUIET, "cpu_noise_pct": 0.01}, rule).spoiled is not None
    assert hostrule.verdict({**QUIET, "cpu_noise_pct": 0.0}, rule).spoiled is None


def test_only_a_fall_of_the_calibration_rate_counts() -> None:
    info = {"host": {"other_cpu_pct": 0.0}, "calibration": {"drift_pct": -60.0}}
    assert hostrule.witnesses(info)["calibration_drift_pct"] == 60.0
    judged = hostrule.judge(info, HostRule(), None)
    assert judged["applied"] is True and "fell 60.0%" in judged["spoiled"]
    # an n-gram drafter's second calibration drafts from the first: +112.6 % in a demo run
    faster = {"host": {"other_cpu_pct": 0.0}, "calibration": {"drift_pct": 112.6}}
    assert hostrule.witnesses(faster)["calibration_drift_pct"] == 0.0
    assert hostrule.judge(faster, HostRule(), None)["spoiled"] is None


def test_off_in_the_environment_or_the_ladder_is_recorded_not_applied() -> None:
    assert hostrule.off_reason(HostRule(), {}) is None
    off = hostrule.off_reason(HostRule(), {hostrule.ENV: "off"})
    assert off == "not applied: MTPSWEEP_HOST_RULE=off in the environment"
    assert "enabled = false" in str(hostrule.off_reason(HostRule(enabled=False), {}))
    assert "MTPSWEEP_HOST_RULE=0 in" in str(hostrule.off_reason(HostRule(), {hostrule.ENV: "0"}))
    assert hostrule.off_reason(HostRule(), {hostrule.ENV: "on"}) is None
    judged = hostrule.judge({"host": {"other_cpu_pct": 99.0}}, HostRule(), off)
    assert judged == {"applied": False, "why": off, "spoiled": None}
    assert hostrule.plan_entry(HostRule(), off).applied is False
    assert "no session is set aside" in "\n".join(hostrule.prereg_lines(HostRule(), off))
    lines = "\n".join(hostrule.prereg_lines(HostRule(), None))
    assert "- memory_stall_pct > 10" in lines and "- major_faults > 1000" in lines


def test_psi_is_read_from_the_some_line_and_missing_psi_is_none(tmp_path: Path) -> None:
    (tmp_path / "memory").write_text(
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=1234\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n"
    )
    assert host.pressure_total_us("memory", tmp_path) == 1234
    assert host.pressure_total_us("cpu", tmp_path) is None  # no file: not available


def test_noise_says_which_witnesses_were_not_available() -> None:
    a = host.CpuSample(0.0, 0.0, 0.0, (0, 0, 0), {}, {"memory": 0, "cpu": None}, None)
    b = host.CpuSample(2.0, 0.0, 0.0, (0, 0, 0), {}, {"memory": 500_000, "cpu": None}, None)
    noise = host.noise(a, b)
    assert noise["memory_stall_pct"] == pytest.approx(25.0)  # 0.5 s of a 2 s span
    assert noise["cpu_stall_pct"] is None and noise["major_faults"] is None
    assert set(noise["not_available"]) == {"cpu_stall_pct", "major_faults"}


def test_major_faults_of_this_process_are_read() -> None:
    import os

    assert isinstance(host.major_faults(os.getpid()), int)
    assert host.major_faults(2**22 + 12345) is None


def test_restore_brings_a_kept_attempt_back_before_its_rerun(tmp_path: Path) -> None:
    rd = RunDir.create(tmp_path / "run")
    name = "02_b_c1"
    rd.write_json(schema.session_file(name), {"session": name, "measured": 2})
    (rd.path / schema.records_file(name)).write_text('{"n": 1}\n')
    (rd.path / schema.server_log(name)).write_text("first log\n")
    held = rd.quarantine(name, "host spoiled: x")
    # the re-run's files
    rd.write_json(schema.session_file(name), {"session": name, "rerun": True})
    (rd.path / schema.records_file(name)).write_text('{"n": 2}\n')
    (rd.path / schema.server_log(name)).write_text("rerun log\n")
    rd.restore(held, name, "host spoiled: x (kept: its re-run was spoiled too)")
    assert (rd.path / schema.records_file(name)).read_text() == '{"n": 1}\n{"n": 2}\n'
    info = json.loads((rd.path / schema.session_file(name)).read_text())
    assert info["rerun"] is True
    assert info["host_spoiled_first"]["host_spoiled"].endswith("re-run was spoiled too)")
    assert (rd.path / "servers" / f"{name}.first.log").read_text() == "first log\n"
    assert not held.exists()


def test_restore_puts_the_attempt_back_whole_when_its_rerun_was_set_aside(
    tmp_path: Path,
) -> None:
    rd = RunDir.create(tmp_path / "run")
    name = "02_b_c1"
    rd.write_json(schema.session_file(name), {"session": name})
    (rd.path / schema.records_file(name)).write_text('{"n": 1}\n')
    held = rd.quarantine(name, "host spoiled: x")
    rd.restore(held, name, "host spoiled: x (kept)")
    info = json.loads((rd.path / schema.session_file(name)).read_text())
    assert info["host_spoiled"] == "host spoiled: x (kept)" and info["quarantined"] is None
    assert (rd.path / schema.records_file(name)).read_text() == '{"n": 1}\n'
