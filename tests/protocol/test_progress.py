"""A closed session's one-line summary, from its session file."""

from __future__ import annotations

from pytest_mtpsweep.ladder.runplan import SessionSlot
from pytest_mtpsweep.protocol.progress import describe, session_summary


def test_summary_names_the_census_the_kind_note_and_the_drift() -> None:
    info = {"valid": 15, "planned_measurements": 16, "calibration": {"drift_pct": -1.234}}
    assert session_summary(info, "median 38.2 tok/s") == (
        "15/16 valid, median 38.2 tok/s, calibration drift -1.2 %"
    )


def test_summary_says_why_a_session_was_set_aside() -> None:
    info = {
        "valid": 0,
        "planned_measurements": 2,
        "rerun": True,
        "quarantined": "warm-up request failed: HTTP 400\nmore",
        "error": "session start failed: boom",
    }
    assert session_summary(info) == (
        "0/2 valid, re-run, quarantined: warm-up request failed: HTTP 400, "
        "error: session start failed: boom"
    )


def test_describe() -> None:
    assert describe(SessionSlot(5, "ngram-simple", 2)) == "ngram-simple, cycle 2"
