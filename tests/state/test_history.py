"""The gate history file: entries round-trip, appends never rewrite, unreadable lines are
counted and named, and the read is bounded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mtpsweep.state.history import (
    MAX_TEXT,
    GateEntry,
    HistoryError,
    append,
    decision,
    read,
)

texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
pct = st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False))


@st.composite
def entries(draw: st.DrawFn) -> GateEntry:
    interval = draw(st.booleans())
    lo, est, hi = sorted(draw(st.lists(st.floats(-500, 500), min_size=3, max_size=3)))
    second = draw(st.integers(0, 59))
    return GateEntry(
        time=f"2026-12-06T15:{second:02d}:00Z",
        run=draw(texts),
        gate=draw(texts.filter(str.strip)),
        treatment=draw(texts.filter(str.strip)),
        baseline=draw(texts),
        subset=draw(texts),
        metric=draw(texts),
        margin_pct=draw(pct),
        estimate_pct=est if interval else None,
        lower_pct=lo if interval else None,
        upper_pct=hi if interval else None,
        decision=draw(st.sampled_from(["pass", "fail", "undecided"])),
        host=draw(texts),
        model=draw(texts),
        treatment_build=draw(texts),
        baseline_build=draw(texts),
        confidence=draw(st.floats(0.5, 0.999)),
    )


def entry(**change: object) -> GateEntry:
    base: dict[str, object] = dict(
        time="2026-12-06T15:00:00Z", run="r1", gate="b:prose:not-slower:3", treatment="b",
        baseline="a", subset="prose", metric="decode_rate_tps_primary", margin_pct=3.0,
        estimate_pct=-1.0, lower_pct=-3.5, upper_pct=1.5, decision="pass", host="h1",
        model="m@abc", treatment_build="b2", baseline_build="b1",
    )  # fmt: skip
    return GateEntry(**{**base, **change})  # type: ignore[arg-type]


@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=30, deadline=None
)
@given(st.lists(entries(), min_size=1, max_size=8), st.lists(entries(), max_size=4))
def test_entries_round_trip_and_appends_keep_what_was_there(
    tmp_path: Path, first: list[GateEntry], later: list[GateEntry]
) -> None:
    path = tmp_path / "h.jsonl"
    path.unlink(missing_ok=True)
    append(path, first)
    before = path.read_bytes()
    append(path, later)
    assert path.read_bytes().startswith(before)  # appended, never rewritten
    got = read(path)
    assert got.entries == (*first, *later) and got.unreadable == ()


def test_unreadable_lines_are_counted_and_named_never_dropped(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    append(path, [entry()])
    good = json.loads(path.read_text())
    with path.open("a") as f:
        f.write("not json\n")
        f.write(json.dumps({**good, "decision": "maybe"}) + "\n")
        f.write(json.dumps({**good, "format": 2}) + "\n")
        f.write(json.dumps({**good, "estimate_pct": 9.0}) + "\n")  # outside its interval
        f.write(json.dumps({**good, "margin_pct": 10**400}) + "\n")  # no float holds it
        f.write('{"time": "2026-12-0')  # torn: a writer killed mid-line
    append(path, [entry(run="r2")])  # starts its own line after the torn one
    got = read(path)
    assert [e.run for e in got.entries] == ["r1", "r2"]
    why = {u.line: u.why for u in got.unreadable}
    assert sorted(why) == [2, 3, 4, 5, 6, 7]
    assert why[2] == "not JSON" and "decision" in why[3]
    assert "format 2" in why[4] and "upgrade" in why[4]
    assert "not inside its interval" in why[5] and why[6] == "its margin_pct is not a finite number"
    assert why[7].startswith("not JSON")
    assert str(got.unreadable[0]) == "h.jsonl:2: not JSON"


def test_the_read_is_bounded_and_says_what_it_left_out(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    append(path, [entry(run=f"r{i}") for i in range(50)])
    size = path.stat().st_size
    got = read(path, max_bytes=size // 5)
    assert 0 < len(got.entries) < 50 and got.entries[-1].run == "r49"
    assert got.unreadable == () and got.skipped_bytes > size // 2  # a partial line: skipped
    got = read(path, max_entries=7)
    assert [e.run for e in got.entries] == [f"r{i}" for i in range(43, 50)]
    assert got.skipped_lines == 43


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"decision": "maybe"}, "decision 'maybe'"),
        ({"time": "yesterday"}, "not an ISO 8601 time"),
        ({"time": "2026-12-06T15:00:00+01:00"}, "not in UTC"),
        ({"estimate_pct": float("nan")}, "not finite"),
        ({"confidence": 1.0}, "between 0 and 1"),
        ({"model": "m" * (MAX_TEXT + 1)}, "longer than"),
    ],
)
def test_an_entry_the_history_cannot_keep_is_refused_in_one_sentence(
    change: dict[str, object], why: str
) -> None:
    with pytest.raises(HistoryError, match=why) as caught:
        entry(**change)
    assert str(caught.value).startswith("gate 'b:prose:not-slower:3' cannot go into the history")
    assert "\n" not in str(caught.value)


def test_a_failed_write_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"^cannot append to the history .*another --history"):
        append(tmp_path / "missing" / "h.jsonl", [entry()])


def test_a_verdict_s_met_is_the_history_s_decision() -> None:
    assert [decision(m) for m in (True, False, None)] == ["pass", "fail", "undecided"]


def test_an_append_never_follows_a_link(tmp_path: Path) -> None:
    # issue 50: through a link the history appended to whatever file it named
    target = tmp_path / "system.conf"
    target.write_text("keep = 1\n")
    link = tmp_path / "h.jsonl"
    link.symlink_to(target)
    with pytest.raises(HistoryError, match=r"^cannot append to the history .*another --history"):
        append(link, [entry()])
    assert target.read_text() == "keep = 1\n"


def test_a_history_that_is_a_fifo_is_one_sentence_never_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "h.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(HistoryError, match="is a FIFO, not a regular file"):
        read(fifo)
    with pytest.raises(HistoryError, match=r"^cannot append to the history .*(FIFO|No such dev)"):
        append(fifo, [entry()])  # opened non-blocking: no reader is ENXIO, never a wait


def test_a_deeply_nested_history_line_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    append(path, [entry()])
    with path.open("a") as f:
        f.write("[" * 100_000 + "\n")
    got = read(path)
    assert len(got.entries) == 1 and len(got.unreadable) == 1
