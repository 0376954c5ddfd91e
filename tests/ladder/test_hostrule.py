"""`[host_rule]`: the host rule's thresholds, each bounded, refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.ladder.values import HostRule
from pytest_mtpsweep.protocol.loader import load_ladder
from tests.ladder.test_load import MINIMAL, write


def test_the_defaults_apply_without_a_table(tmp_path: Path) -> None:
    rule = load_ladder(write(tmp_path, MINIMAL)).host_rule
    assert rule == HostRule()
    assert rule.thresholds() == {
        "cpu_noise_pct": 10.0,
        "memory_stall_pct": 10.0,
        "cpu_stall_pct": 50.0,
        "major_faults": 1000,
        "calibration_drift_pct": 50.0,
    }


def test_a_table_sets_each_threshold(tmp_path: Path) -> None:
    table = (
        "[host_rule]\nenabled = false\ncpu_noise_pct = 25\nmemory_stall_pct = 0\n"
        "cpu_stall_pct = 80.5\nmajor_faults = 0\ncalibration_drift_pct = 20\n"
    )
    rule = load_ladder(write(tmp_path, MINIMAL + table)).host_rule
    assert rule == HostRule(False, 25.0, 0.0, 80.5, 0, 20.0)


def test_cpu_noise_defaults_to_the_preflight_host_noise_pct(tmp_path: Path) -> None:
    lad = load_ladder(write(tmp_path, MINIMAL + "[preflight]\nhost_noise_pct = 30\n"))
    assert lad.host_rule.cpu_noise_pct == 30.0
    both = MINIMAL + "[preflight]\nhost_noise_pct = 30\n[host_rule]\ncpu_noise_pct = 5\n"
    assert load_ladder(write(tmp_path, both)).host_rule.cpu_noise_pct == 5.0


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("cpu_noise_pct = -1", r"host_rule\.cpu_noise_pct is -1; use % of all cores .* 0 to 100"),
        ("cpu_noise_pct = 101", r"host_rule\.cpu_noise_pct is 101;"),
        ("memory_stall_pct = 100.5", r"host_rule\.memory_stall_pct is 100\.5; use % of the"),
        ("cpu_stall_pct = -0.1", r"host_rule\.cpu_stall_pct is -0\.1;"),
        ("major_faults = -5", r"host_rule\.major_faults is -5; use the server's major page"),
        ("major_faults = 10000000000", r"host_rule\.major_faults is 10000000000;"),
        ("major_faults = 1.5", r"host_rule\.'major_faults' is 1\.5 but must be a int"),
        ("calibration_drift_pct = 500", r"calibration_drift_pct is 500; .* 0 to 100"),
        ("enabled = 1", r"host_rule\.'enabled' is 1 but must be a bool"),
        ("memory_stall_pct = nan", r"host_rule\.'memory_stall_pct' is nan; write a finite"),
        ("stalls = 3", r"unknown field host_rule\.'stalls'; remove it or use one of"),
    ],
)
def test_a_bad_host_rule_is_refused_in_one_line(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(LadderError, match=message) as info:
        load_ladder(write(tmp_path, MINIMAL + "[host_rule]\n" + table + "\n"))
    assert "\n" not in str(info.value)


def test_a_threshold_of_zero_is_allowed(tmp_path: Path) -> None:
    # zero trips on any witness above zero: what the protocol tests use to force a verdict
    rule = load_ladder(write(tmp_path, MINIMAL + "[host_rule]\ncpu_noise_pct = 0\n")).host_rule
    assert rule.cpu_noise_pct == 0.0
