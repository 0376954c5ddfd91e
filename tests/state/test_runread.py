"""The run reader: one rule for a file that is missing, malformed, torn or oddly named."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.base import recordlines as rl
from pytest_mtpsweep.base import schema
from pytest_mtpsweep.base.errors import AnalysisError, RunReadError
from pytest_mtpsweep.state.plandoc import PlanDoc
from pytest_mtpsweep.state.rundocs import StopDoc
from pytest_mtpsweep.state.runread import OUT, RunReader, shown


def _records(run: Path, name: str, text: str, folder: str = schema.RECORDS_DIR) -> Path:
    path = run / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("made", [True, False], ids=["empty", "absent"])
def test_what_is_missing_reads_empty_and_never_fails(tmp_path: Path, made: bool) -> None:
    run = tmp_path / "run"
    if made:
        run.mkdir()
    read = RunReader(run)
    assert read.plan == PlanDoc() and not read.has(schema.PLAN_FILE)
    assert read.run_id == "run"
    assert read.records().lines == () and read.records().unreadable == ()
    assert read.record_files("cells") == ()
    assert read.sessions().facts == () and read.sessions().unreadable == ()
    assert read.quarantined() == ()
    assert (read.stop, read.curtailment, read.stopped) == (StopDoc(), {}, "")
    assert read.table("analysis/gaps.csv").dicts() == []
    assert read.text("preregistration.md") == ""


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{not json", r"is not valid JSON \(.* at line 1\)"),
        ("[1, 2]", "does not hold a JSON object"),
        ("", r"is not valid JSON \(Expecting value at line 1\)"),
    ],
)
def test_a_malformed_plan_is_one_line_naming_the_file_and_the_fix(
    tmp_path: Path, text: str, why: str
) -> None:
    (tmp_path / schema.PLAN_FILE).write_text(text)
    with pytest.raises(
        RunReadError, match=rf"^plan file {tmp_path}/plan.json {why}; restore it"
    ) as got:
        _ = RunReader(tmp_path).plan
    assert "\n" not in str(got.value)
    assert isinstance(got.value, AnalysisError)  # every analysis' refusal catches it


def test_the_plan_and_its_run_id(tmp_path: Path) -> None:
    (tmp_path / schema.PLAN_FILE).write_text(json.dumps({"run_id": "r7", "kind": "load"}))
    read = RunReader(tmp_path)
    assert read.has(schema.PLAN_FILE) and read.plan.kind == "load" and read.run_id == "r7"


def test_a_stop_document_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    (tmp_path / schema.STOP_FILE).write_text(json.dumps({"looks": "all"}))
    with pytest.raises(RunReadError, match=r"stop-rule file .*`looks` is 'all'.* restore it from"):
        _ = RunReader(tmp_path).stop


def test_a_torn_last_line_is_counted_and_named_and_the_rest_are_read(tmp_path: Path) -> None:
    lines = [json.dumps({"i": 1}), "garbage", json.dumps([1]), json.dumps({"i": 2}), '{"i": 3, "ra']
    _records(tmp_path, "01_a_c1.jsonl", "\n".join(lines))
    read = RunReader(tmp_path).records()
    assert [line.record for line in read.lines] == [{"i": 1}, {"i": 2}]
    assert [str(u) for u in read.unreadable] == [
        f"records/01_a_c1.jsonl:2: {rl.NOT_JSON}",
        f"records/01_a_c1.jsonl:3: {rl.NOT_OBJECT}",
        f"records/01_a_c1.jsonl:5: {rl.TORN}",
    ]


def test_records_are_checked_by_the_readers_types(tmp_path: Path) -> None:
    _records(tmp_path, "s.jsonl", '{"cell": "c1", "n": 2}\n{"cell": "c2", "n": "two"}\n', "cells")
    read = RunReader(tmp_path).records("cells", lambda _: {"n": rl.INT}, ("cell",))
    assert read.records == [{"cell": "c1", "n": 2}]
    assert [u.line for u in read.unreadable] == [2] and "n is 'two'" in read.unreadable[0].why


def test_a_record_folder_with_hostile_names(tmp_path: Path) -> None:
    run = tmp_path / "run"
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(json.dumps({"from": "outside"}) + "\n")
    _records(run, "01_a_c1.jsonl", json.dumps({"i": 1}) + "\n")
    _records(run, "evil\nname\x1b[2J.jsonl", "{torn")  # a newline and an escape in the name
    _records(run, "<b>|`x`.jsonl", json.dumps({"i": 2}) + "\n")  # markup is the report's to escape
    _records(run, "notes.txt", json.dumps({"i": 3}) + "\n")  # not a record file
    (run / "records" / "folder.jsonl").mkdir()  # a folder named like one
    os.mkfifo(run / "records" / "fifo.jsonl")  # opened as a file it would block the read
    (run / "records" / "away.jsonl").symlink_to(outside)  # a link out of the run
    (run / "records" / "again.jsonl").symlink_to(run / "records" / "01_a_c1.jsonl")
    read = RunReader(run)
    files = read.record_files()
    names = ["01_a_c1", "<b>|`x`", "again", "away", "evil\nname\x1b[2J", "fifo", "folder"]
    assert [f.name for f in files] == names
    assert files[4].label == "records/evil\\nname\\x1b[2J.jsonl"
    records = read.records()
    assert [r["i"] for r in records.records] == [1, 2, 1]
    # issue 50: a FIFO, a folder or a link out named like a record file was passed over without
    # a word; each is now an unreadable line named, never opened as a record file
    assert [str(b) for b in records.unreadable] == [
        f"records/away.jsonl:1: {rl.NO_RECORD}: {OUT}",
        f"records/evil\\nname\\x1b[2J.jsonl:1: {rl.TORN}",
        f"records/fifo.jsonl:1: {rl.NO_RECORD}: the file is a FIFO, not a regular file",
        f"records/folder.jsonl:1: {rl.NO_RECORD}: the file is a folder, not a regular file",
    ]
    assert all(str(b).isprintable() for b in records.unreadable)


def test_shown_escapes_only_what_would_break_a_line() -> None:
    assert shown("01_a_c1.jsonl") == "01_a_c1.jsonl"
    assert shown("é ✓.jsonl") == "é ✓.jsonl"
    assert shown("a\tb\nc\u202e") == "a\\tb\\nc\\u202e"


def test_a_bad_session_file_is_named_and_the_rest_are_read(tmp_path: Path) -> None:
    sessions = tmp_path / schema.SESSIONS_DIR
    sessions.mkdir()
    (sessions / "01_a_c1.json").write_text(json.dumps({"treatment": "a", "duration_s": 4.0}))
    (sessions / "02_b_c1.json").write_text('{"treatment": "b", ')
    (sessions / "03_b_c2.json").write_text("[]")
    (sessions / "04_a_c2.json").mkdir()
    read = RunReader(tmp_path).sessions()
    assert read.facts == ({"session": "01_a_c1", "treatment": "a", "duration_s": 4.0},)
    assert read.unreadable == (
        f"sessions/02_b_c1.json: {rl.NOT_JSON}",
        f"sessions/03_b_c2.json: {rl.NOT_OBJECT}",
        "sessions/04_a_c2.json: is a folder, not a regular file",  # issue 50: no longer unsaid
    )


def test_quarantined_sessions_with_and_without_their_files(tmp_path: Path) -> None:
    held = tmp_path / schema.QUARANTINE_DIR / "03_b_c2"
    held.mkdir(parents=True)
    (held / schema.QUARANTINE_REASON).write_text("host_spoiled: load 3.1\nmore detail\n")
    (held / schema.QUARANTINE_MEMBERS["records"]).write_text('{"i": 1}\n\n{"i": 2}\n')
    (held / schema.QUARANTINE_MEMBERS["session"]).write_text(json.dumps({"ordinal": 3}))
    bare = tmp_path / schema.QUARANTINE_DIR / "04_a_c2"
    bare.mkdir()
    (bare / schema.QUARANTINE_MEMBERS["session"]).write_text("{torn")
    first, second = RunReader(tmp_path).quarantined()
    assert (first.session, first.why, first.facts) == (
        "03_b_c2",
        "host_spoiled: load 3.1",
        {"ordinal": 3},
    )
    assert first.records is not None and first.records.lines == ('{"i": 1}', "", '{"i": 2}')
    assert first.records.label == "quarantine/03_b_c2/records.jsonl"
    assert (second.session, second.reason, second.records, second.facts) == (
        "04_a_c2",
        "",
        None,
        None,
    )


def test_an_analysis_table_here_or_in_an_out_folder(tmp_path: Path) -> None:
    out = tmp_path / "elsewhere"
    out.mkdir()
    (out / "gaps.csv").write_text("treatment,n\na,3\nb,\n")
    table = RunReader(tmp_path / "run").table(out / "gaps.csv")
    assert table.headers == ("treatment", "n")
    assert table.dicts() == [{"treatment": "a", "n": "3"}, {"treatment": "b", "n": ""}]


def test_another_runs_lines_are_set_aside_and_named(tmp_path: Path) -> None:
    # plan.json says which run this is; a line copied or appended from another run (its run_id
    # or pre-registration hash differs) is left out and named, never pooled with this run's
    (tmp_path / schema.PLAN_FILE).write_text(
        json.dumps({"run_id": "r1", "preregistration_sha256": "aaa"})
    )
    mine = {"run_id": "r1", "preregistration_sha256": "aaa", "i": 1}
    other_run = {"run_id": "r2", "preregistration_sha256": "aaa", "i": 2}
    other_prereg = {"run_id": "r1", "preregistration_sha256": "bbb", "i": 3}
    unmarked = {"i": 4}  # no identity: nothing says which run wrote it, so it is kept
    _records(tmp_path, "01_a_c1.jsonl", "\n".join(json.dumps(r) for r in (mine, other_run)))
    _records(tmp_path, "09_x_c1.jsonl", json.dumps(other_prereg) + "\n" + json.dumps(unmarked))
    read = RunReader(tmp_path).records()
    assert [r["i"] for r in read.records] == [1, 4]
    assert [str(u) for u in read.unreadable] == [
        "records/01_a_c1.jsonl:2: another run's record line: its run_id is 'r2', this run's is 'r1'",
        "records/09_x_c1.jsonl:1: another run's record line: its preregistration_sha256 is 'bbb', "
        "this run's is 'aaa'",
    ]


def test_without_a_plan_no_line_is_judged_another_runs(tmp_path: Path) -> None:
    _records(tmp_path, "01_a_c1.jsonl", json.dumps({"run_id": "r2", "i": 1}))
    assert RunReader(tmp_path).records().records == [{"run_id": "r2", "i": 1}]


@pytest.mark.parametrize("odd", ["fifo", "folder"])
def test_a_plan_that_is_no_regular_file_is_named_never_read_as_absent(
    tmp_path: Path, odd: str
) -> None:
    path = tmp_path / schema.PLAN_FILE
    if odd == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises(RunReadError) as info:
        _ = RunReader(tmp_path).plan
    what = "a FIFO" if odd == "fifo" else "a folder"
    assert str(info.value) == (
        f"plan file {path} is {what}, not a regular file; restore it from the run"
    )


def test_another_runs_session_file_is_set_aside_and_named(tmp_path: Path) -> None:
    (tmp_path / schema.PLAN_FILE).write_text(json.dumps({"run_id": "r1"}))
    sessions = tmp_path / schema.SESSIONS_DIR
    sessions.mkdir()
    (sessions / "01_a_c1.json").write_text(json.dumps({"run_id": "r1", "cycle": 1}))
    (sessions / "03_b_c2.json").write_text(json.dumps({"run_id": "r2", "cycle": 2}))
    (sessions / "04_a_c2.json").write_text(json.dumps({"cycle": 2}))  # an older run's: kept
    read = RunReader(tmp_path).sessions()
    assert [f["session"] for f in read.facts] == ["01_a_c1", "04_a_c2"]
    assert read.unreadable == (
        "sessions/03_b_c2.json: another run's session file: its run_id is 'r2', this run's is 'r1'",
    )
    assert read.foreign == {"03_b_c2"}


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: os.symlink("/dev/zero", p), "is a device, not a regular file"),
        (lambda p: p.write_text("[" * 100_000), "nests deeper than"),
        (lambda p: p.write_text('{"run_id": NaN}'), "holds NaN"),
    ],
)
def test_a_run_document_no_run_wrote_is_one_line(tmp_path: Path, make: Any, why: str) -> None:
    # issue 50: /dev/zero filled memory, deep nesting raised RecursionError
    make(tmp_path / schema.PLAN_FILE)
    with pytest.raises(RunReadError, match=f"plan file .* {why}.*; restore it from the run"):
        _ = RunReader(tmp_path).plan


@pytest.mark.parametrize("make", ["fifo", "deep", "zero"])
def test_a_session_file_no_run_wrote_costs_itself_only(tmp_path: Path, make: str) -> None:
    sessions = tmp_path / schema.SESSIONS_DIR
    sessions.mkdir()
    (sessions / "01_a_c1.json").write_text(json.dumps({"cycle": 1}))
    bad = sessions / "02_b_c1.json"
    if make == "fifo":
        os.mkfifo(bad)  # named, never waited on
    elif make == "zero":
        os.symlink("/dev/zero", bad)
    else:
        bad.write_text("{" * 100_000)
    read = RunReader(tmp_path).sessions()
    assert [f["session"] for f in read.facts] == ["01_a_c1"]
    assert all("\n" not in why for why in read.unreadable)
    # issue 50: a FIFO or a link out was passed over without a word; each is named
    (why,) = read.unreadable
    assert why.startswith("sessions/02_b_c1.json: "), why


def test_an_analysis_table_is_read_bounded(tmp_path: Path) -> None:
    # issue 50: a table grown past any analysis (a sparse GiB) was read whole into memory
    table = tmp_path / "gaps.csv"
    table.write_text("treatment,n\n")
    os.truncate(table, 100 << 20)
    with pytest.raises(RunReadError, match=r"analysis table .*gaps\.csv is 104857600 bytes, over"):
        RunReader(tmp_path / "run").table(table)
