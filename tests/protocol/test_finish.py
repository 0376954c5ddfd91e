"""After the last session: the row table is rebuilt from the session files, whatever the disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.base.errors import RunDirError
from pytest_mtpsweep.protocol.finish import summarise
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.state.rundir import RunDir

REPO = Path(__file__).resolve().parents[2]


def session(name: str, ordinal: int, **facts: Any) -> dict[str, Any]:
    treatment, cycle = name.split("_")[1], int(name[-1])
    return {"session": name, "ordinal": ordinal, "treatment": treatment, "cycle": cycle,
            "measured": 2, "valid": 2, "usable": 2, "failed": 0, "released": True, **facts}  # fmt: skip


def test_every_session_file_is_a_row_quarantined_ones_included(tmp_path: Path) -> None:
    rd = RunDir.create(tmp_path / "r")
    rd.write_json("sessions/01_none_c1.json", session("01_none_c1", 1))
    q = rd.path / "quarantine" / "02_x_c1"
    q.mkdir(parents=True)
    (q / "session.json").write_text(json.dumps(session("02_x_c1", 2, quarantined="why")))
    lad = load_ladder(REPO / "experiments" / "ladders" / "drafters-cpu.toml")
    summary = summarise(rd, lad)
    assert [r["ordinal"] for r in summary.rows] == [1, 2]
    assert (rd.path / "sessions.csv").read_text().count("\n") == 3


def test_a_full_disk_loses_the_file_not_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rd = RunDir.create(tmp_path / "r")
    rd.write_json("sessions/01_none_c1.json", session("01_none_c1", 1))

    def full(*args: Any) -> Path:
        raise RunDirError("cannot write sessions.csv (No space left on device)")

    monkeypatch.setattr(rd, "write_text", full)
    lad = load_ladder(REPO / "experiments" / "ladders" / "drafters-cpu.toml")
    summary = summarise(rd, lad)
    assert [r["ordinal"] for r in summary.rows] == [1]
    assert summary.memory_lines == [
        "sessions.csv not written: cannot write sessions.csv (No space left on device)"
    ]


def test_an_attempt_killed_before_it_was_filed_is_a_row_from_its_reason(tmp_path: Path) -> None:
    rd = RunDir.create(tmp_path / "r")
    q = rd.path / "quarantine" / "03_gate_0.25_c2.2"
    q.mkdir(parents=True)
    (q / "reason.txt").write_text("interrupted before it finished\n")
    lad = load_ladder(REPO / "experiments" / "ladders" / "drafters-cpu.toml")
    (row,) = summarise(rd, lad).rows
    assert (row["ordinal"], row["treatment"], row["cycle"]) == (3, "gate_0.25", 2)
    assert row["quarantined"] == "interrupted before it finished"
