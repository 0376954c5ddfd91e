"""The run directory: never reused, records appended and durable, tables written."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import RunDirError
from pytest_mtpsweep.base.schema import RUN_SUBDIRS, new_run_id
from pytest_mtpsweep.kinds.decode.analysis.io import load_run
from pytest_mtpsweep.state.rundir import RunDir
from tests.sandbox import read_records


class TestRunDir:
    def test_layout(self, tmp_path: Path) -> None:
        rd = RunDir.create(tmp_path / "runs" / "x" / "r1")
        assert sorted(p.name for p in rd.path.iterdir()) == sorted(RUN_SUBDIRS)

    def test_never_reused(self, tmp_path: Path) -> None:
        RunDir.create(tmp_path / "r")
        (tmp_path / "r" / "records" / "keep.jsonl").write_text("{}\n")
        with pytest.raises(RunDirError, match="already exists"):
            RunDir.create(tmp_path / "r")
        assert (tmp_path / "r" / "records" / "keep.jsonl").read_text() == "{}\n"

    def test_flags_file_is_never_overwritten(self, tmp_path: Path) -> None:
        rd = RunDir.create(tmp_path / "r")
        rd.write_text_new("servers/01_a_c1.flags.txt", "one")
        with pytest.raises(RunDirError):
            rd.write_text_new("servers/01_a_c1.flags.txt", "two")

    def test_json_has_no_nan(self, tmp_path: Path) -> None:
        rd = RunDir.create(tmp_path / "r")
        p = rd.write_json("plan.json", {"x": float("nan"), "y": [float("inf"), 1.5]})
        assert json.loads(p.read_text()) == {"x": None, "y": [None, 1.5]}

    def test_sessions_csv(self, tmp_path: Path) -> None:
        rd = RunDir.create(tmp_path / "r")
        p = rd.write_sessions_csv(
            [{"ordinal": 1, "length_prompts": ["p1", "p2"], "load_s": 1.23456}]
        )
        assert p.read_text().splitlines() == ["ordinal,length_prompts,load_s", "1,p1 p2,1.235"]


class TestQuarantine:
    def test_moves_every_member_and_keeps_the_reason(self, tmp_path: Path) -> None:
        rd = RunDir.create(tmp_path / "r")
        rd.record_writer("01_a_c1").append({"i": 1})
        rd.write_json("sessions/01_a_c1.json", {"x": 1})
        q = rd.quarantine("01_a_c1", "why")
        assert sorted(p.name for p in q.iterdir()) == [
            "reason.txt",
            "records.jsonl",
            "session.json",
        ]
        assert not any((rd.path / "records").iterdir())

    def test_when_quarantine_cannot_be_made_the_records_are_set_aside_in_place(
        self, tmp_path: Path
    ) -> None:
        rd = RunDir.create(tmp_path / "r")
        rd.record_writer("01_a_c1").append({"i": 1})
        (rd.path / "quarantine").rmdir()
        (rd.path / "quarantine").write_text("")  # a full disk refuses the new directory alike
        with pytest.raises(RunDirError, match="cannot write"):
            rd.quarantine("01_a_c1", "why")
        assert [p.name for p in (rd.path / "records").iterdir()] == ["01_a_c1.jsonl.quarantined"]
        assert load_run(rd.path).record_files == ()  # the analysis does not read it


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The file descriptors fsync'd from here on, in order (each fsync still happens)."""
    fds: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        fds.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return fds


class TestRecords:
    def test_each_append_is_on_disk_at_once(self, tmp_path: Path, synced: list[int]) -> None:
        w = RunDir.create(tmp_path / "r").record_writer("01_a_c1")
        w.append({"i": 1, "rate": float("nan")})
        # readable by another reader before the writer closes
        assert read_records(w.path) == ([{"i": 1, "rate": None}], 0)
        w.append({"i": 2})
        assert len(synced) == 2
        w.close()
        assert [r["i"] for r in read_records(w.path)[0]] == [1, 2]

    def test_appends_never_truncate(self, tmp_path: Path) -> None:
        rd = RunDir.create(tmp_path / "r")
        rd.record_writer("s").append({"i": 1})
        rd.record_writer("s").append({"i": 2})
        assert [r["i"] for r in read_records(rd.path / "records" / "s.jsonl")[0]] == [1, 2]

    def test_append_to_a_named_file_is_synced_closed_and_kept(
        self, tmp_path: Path, synced: list[int]
    ) -> None:
        # a kind's own records file (authoring's cells/ and turns/), one line at a time
        rd = RunDir.create(tmp_path / "r")
        rd.append("cells/s.jsonl", {"i": 1})
        rd.append("cells/s.jsonl", {"i": 2})
        assert len(synced) == 2
        assert read_records(rd.path / "cells" / "s.jsonl") == ([{"i": 1}, {"i": 2}], 0)

    def test_torn_last_line_is_counted_not_fatal(self, tmp_path: Path) -> None:
        p = tmp_path / "x.jsonl"
        p.write_text('{"i": 1}\n{"i": 2, "tr')
        assert read_records(p) == ([{"i": 1}], 1)

    def test_an_append_after_a_torn_line_stays_a_whole_record(self, tmp_path: Path) -> None:
        # a --resume appending to a file a killed run left cut short (an authoring cells file)
        rd = RunDir.create(tmp_path / "r")
        path = rd.path / "records" / "s.jsonl"
        path.write_text('{"i": 1}\n{"i": 2, "tr')
        rd.record_writer("s").append({"i": 3})
        assert read_records(path) == ([{"i": 1}, {"i": 3}], 1)
        rd.record_writer("s").append({"i": 4})  # a whole last line: nothing added before it
        assert path.read_text().count("\n") == 4


class TestRunId:
    def test_sortable_and_unique(self) -> None:
        t = dt.datetime(2026, 8, 11, 4, 5, 6, tzinfo=dt.UTC)
        ids = {new_run_id(t) for _ in range(50)}
        assert len(ids) == 50
        assert all(i.startswith("20260811T040506Z-") for i in ids)


@pytest.mark.parametrize("relpath", ["../outside.jsonl", "/tmp/abs.jsonl", "cells/../../x", ""])
def test_no_write_leaves_the_run_directory(tmp_path: Path, relpath: str) -> None:
    rd = RunDir.create(tmp_path / "r")
    for write in (
        lambda: rd.append(relpath, {"i": 1}),
        lambda: rd.append_text(relpath, "x"),
        lambda: rd.write_text(relpath, "x"),
        lambda: rd.write_json(relpath, {}),
    ):
        with pytest.raises(ValueError, match="not a path inside the run directory"):
            write()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
