"""--resume reads the plan through the run reader and refuses a bad one in its own words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.base.errors import RunDirError
from pytest_mtpsweep.protocol.resume import finished_sessions, read_plan
from pytest_mtpsweep.state.plandoc import PlanDoc


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (None, "no plan.json there; name a run directory."),
        ("{torn", "is not valid JSON (Expecting property name enclosed in double quotes at line 1)"
                  "; restore it from the run or start a new run."),
        ("[]", "does not hold a JSON object; restore it from the run or start a new run."),
        (json.dumps({"ladder": "x"}), "plan.json holds no run; restore it or start a new run."),
    ],
)  # fmt: skip
def test_a_missing_or_bad_plan_is_one_line(tmp_path: Path, text: str | None, said: str) -> None:
    if text is not None:
        (tmp_path / schema.PLAN_FILE).write_text(text)
    with pytest.raises(RunDirError) as got:
        read_plan(tmp_path)
    message = str(got.value)
    assert message.startswith(f"--resume {tmp_path}: ") and message.endswith(said)
    assert "\n" not in message


def test_a_plan_with_its_run_is_read(tmp_path: Path) -> None:
    (tmp_path / schema.PLAN_FILE).write_text(json.dumps({"run_id": "R1", "sessions": []}))
    assert read_plan(tmp_path) == PlanDoc(format=0, run_id="R1")


def test_finished_sessions_are_closed_files_not_marked_incomplete(tmp_path: Path) -> None:
    """Through the run reader: a closed session file is finished, one that says `complete:
    false` is run again, a missing one was never run, and a torn one was closed (not re-run)."""
    plan = PlanDoc.from_json({"sessions": [{"session": n} for n in ("s1", "s2", "s3", "s4")]})
    (tmp_path / schema.SESSIONS_DIR).mkdir()
    (tmp_path / schema.session_file("s1")).write_text(json.dumps({"released": True}))
    (tmp_path / schema.session_file("s2")).write_text(json.dumps({"complete": False}))
    (tmp_path / schema.session_file("s4")).write_text("{torn")
    assert finished_sessions(tmp_path, plan) == {"s1", "s4"}


def test_another_runs_session_file_is_no_finished_session(tmp_path: Path) -> None:
    # copied in from another run, it would make --resume skip a session this run never ran
    plan = {"run_id": "r1", "sessions": [{"session": n} for n in ("s1", "s2")]}
    (tmp_path / schema.PLAN_FILE).write_text(json.dumps(plan))
    (tmp_path / schema.SESSIONS_DIR).mkdir()
    (tmp_path / schema.session_file("s1")).write_text(json.dumps({"run_id": "r1"}))
    (tmp_path / schema.session_file("s2")).write_text(json.dumps({"run_id": "r2"}))
    assert finished_sessions(tmp_path, PlanDoc.from_json(plan)) == {"s1"}


@pytest.mark.timeout(30)  # the old read waited on the FIFO for ever: a hang fails the test
@pytest.mark.parametrize("form", ["fifo", "/dev/zero"])
def test_a_stop_marker_that_is_no_file_is_named_never_waited_on(tmp_path: Path, form: str) -> None:
    import os

    from pytest_mtpsweep.protocol.resume import reopen

    (tmp_path / schema.PLAN_FILE).write_text(json.dumps({"run_id": "R1", "sessions": []}))
    marker = tmp_path / schema.STOPPED_FILE
    os.mkfifo(marker) if form == "fifo" else marker.symlink_to("/dev/zero")
    with pytest.raises(
        RunDirError, match=r"stopped by a protocol rule \(its STOPPED marker, which is no regular"
    ):
        reopen(tmp_path, PlanDoc(run_id="R1"), ())
