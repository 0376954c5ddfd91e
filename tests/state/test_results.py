"""`pytest_mtpsweep.load_records(run_dir)`: a run's records as one DataFrame."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pytest_mtpsweep
from pytest_mtpsweep.base.errors import RunDirError


def record(session: str, ordinal: int, prompt: str, position: int, rate: float) -> str:
    return json.dumps(
        {
            "run_id": "r1",
            "treatment": session.split("_")[1],
            "ordinal": ordinal,
            "session": session,
            "prompt_id": prompt,
            "position": position,
            "valid": True,
            "decode_rate_tps_primary": rate,
            "anomalies": {},
        }
    )


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "demo" / "r1"
    (run / "records").mkdir(parents=True)
    (run / "records" / "01_a_c1.jsonl").write_text(
        record("01_a_c1", 1, "p1", 0, 30.0) + "\n" + record("01_a_c1", 1, "p2", 1, 31.0) + "\n"
    )
    # a run killed mid-write leaves a torn last line
    (run / "records" / "03_a_c2.jsonl").write_text(
        record("03_a_c2", 3, "p2", 0, 32.0) + '\n{"run_id": "r1", "trea'
    )
    q = run / "quarantine" / "02_b_c1"
    q.mkdir(parents=True)
    (q / "records.jsonl").write_text(record("02_b_c1", 2, "p1", 0, 50.0) + "\n")
    (q / "reason.txt").write_text("warm-up request failed: HTTP 400\n")
    return run


def test_kept_records_in_run_order(run_dir: Path) -> None:
    df = pytest_mtpsweep.load_records(run_dir)
    assert list(df["session"]) == ["01_a_c1", "01_a_c1", "03_a_c2"]
    assert list(df["decode_rate_tps_primary"]) == [30.0, 31.0, 32.0]
    assert "quarantined" not in df.columns
    assert df.attrs["unparsed_lines"] == 1
    # named by file and line, as the analysis names it
    assert df.attrs["unreadable"] == [
        "records/03_a_c2.jsonl:2: not JSON: the file's last line, cut short (a run killed "
        "mid-write)"
    ]


def test_with_the_sessions_set_aside(run_dir: Path) -> None:
    df = pytest_mtpsweep.load_records(str(run_dir), quarantined=True)
    assert list(df["session"]) == ["01_a_c1", "01_a_c1", "02_b_c1", "03_a_c2"]
    assert list(df["quarantined"]) == ["", "", "warm-up request failed: HTTP 400", ""]


def test_not_a_run_directory_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="is not a run directory") as err:
        pytest_mtpsweep.load_records(tmp_path)
    assert "\n" not in str(err.value)
