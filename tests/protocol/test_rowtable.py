"""The row table printed at the end of a run and kept as sessions.csv."""

from __future__ import annotations

from typing import Any

from pytest_mtpsweep.protocol.rowtable import render, session_row


def info(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "alias": "m-none",
        "load_s": 2.345,
        "rss_after_load_bytes": 346 * 2**20,
        "measured": 16,
        "valid": 16,
        "failed": 0,
        "length_prompts": ["prose_05", "prose_07"],
        "released": True,
        "calibration": {"drift_pct": -1.02},
    }
    return base | over


def test_row_from_session_facts() -> None:
    row = session_row(info(ordinal=1, treatment="none", cycle=1))
    assert row["mem_after_load_mib"] == 346.0 and row["calibration_drift_pct"] == -1.02
    line = render([row]).splitlines()[1]
    assert line.split() == [
        "1",
        "none",
        "1",
        "2.3",
        "346",
        "m-none",
        "16/16/0",
        "prose_05,prose_07",
        "-",
        "-1.0",
        "-",
        "yes",
    ]


def test_many_truncations_are_counted_and_problems_noted() -> None:
    rows = [
        session_row(
            info(length_prompts=[f"p{i}" for i in range(9)], ordinal=2, treatment="b", cycle=1)
        ),
        session_row(
            info(
                quarantined="partial census: 1 of 2",
                released=False,
                load_s=None,
                calibration=None,
                ordinal=2,
                treatment="b",
                cycle=1,
                rerun=True,
            )
        ),
    ]
    first, second = render(rows).splitlines()[1:]
    assert "9 prompts" in first
    assert second.split("NO", 1)[1].strip() == "re-run; quarantined: partial census: 1 of 2"
    assert " - " in second  # no load time, no drift


def test_degenerate_answers_are_counted() -> None:
    row = session_row(
        info(degenerate_prompts=["prose_01", "prose_02"], ordinal=1, cycle=1, treatment="none")
    )
    assert row["degenerate"] == 2
    head, line = render([row]).splitlines()
    col = head.index("degen")
    assert line[col : col + 5].strip() == "2"
