"""The row table printed at the end of a run and kept as sessions.csv."""

from __future__ import annotations

import re
from typing import Any

from pytest_mtpsweep.protocol.rowtable import HEADER, render, session_row


def info(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "ordinal": 1,
        "treatment": "none",
        "cycle": 1,
        "alias": "qwen3.5-397b-none",
        "load_s": 220.7,
        "rss_after_load_bytes": 346 * 2**20,
        "gpu_used_mib_after_load": 20499,
        "gpu_used_mib_after_release": 1013,
        "measured": 16,
        "valid": 16,
        "usable": 16,
        "failed": 0,
        "finish_reasons": {"stop": 14, "length": 2},
        "length_prompts": ["prose_05", "prose_07"],
        "released": True,
        "props_stable": True,
        "n_ctx": 65536,
        "calibration": {"drift_pct": -1.02},
    }
    return base | over


def cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def test_the_row_as_the_users_kept_it() -> None:
    table = render([session_row(info())])
    header, line = table.splitlines()
    assert cells(header) == list(HEADER)
    assert cells(line) == [
        "1",
        "none",
        "1",
        "220.7",
        "20,499 GPU",  # GPU memory where NVML sees a GPU
        "qwen3.5-397b-none",
        "16/16/16/0",
        "stop 14 / length 2 (prose_05, prose_07)",
        "-",  # no degenerate answers
        "-",
        "-1.0",
        "-",  # no host-noise reading
        "stable",
        "65536",
        "yes, GPU 1,013 MiB after",
    ]


def test_without_a_gpu_memory_is_the_rss_and_drafts_are_counted() -> None:
    row = session_row(
        info(
            gpu_used_mib_after_load=None,
            gpu_used_mib_after_release=None,
            props_stable=False,
            draft_n=812,
            draft_n_accepted=640,
            usable=15,
        )
    )
    line = render([row]).splitlines()[1]
    assert "346 RSS" in line and "640/812 79%" in line and "16/16/15/0" in line
    assert "CHANGED" in line and line.rstrip().endswith("yes")


def test_many_truncations_are_counted_and_problems_noted() -> None:
    rows = [
        session_row(
            info(
                finish_reasons={"length": 9},
                length_prompts=[f"p{i}" for i in range(9)],
                ordinal=2,
                treatment="b",
            )
        ),
        session_row(
            info(
                quarantined="partial census: 1 of 2",
                released=False,
                load_s=None,
                calibration=None,
                ordinal=2,
                treatment="b",
                rerun=True,
            )
        ),
    ]
    first, second = render(rows).splitlines()[1:]
    assert " length 9 " in first and "p0" not in first
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


def test_the_table_fits_the_terminal_and_the_csv_keeps_it_whole() -> None:
    long = "quarantined: " + "a very long reason that names a path " * 4
    rows = [session_row(info(quarantined=long, alias="a-" + "x" * 60))]
    for width in (80, 120, 160):
        assert all(len(line) <= width for line in render(rows, width).splitlines())
    narrow = render(rows, 165).splitlines()
    assert "a-xxxx…xxxxx " in narrow[1]  # shortened in the middle: its start and end kept
    assert narrow[-1].startswith("(not shown at this width: n_ctx; sessions.csv has every")
    assert "n_ctx" not in render(rows, 80).splitlines()[0]
    assert "(not shown" not in render(rows, None)
    assert rows[0]["quarantined"] == long  # sessions.csv is written from the rows, whole


def test_a_session_the_host_spoiled_and_kept_says_so() -> None:
    row = session_row(
        info(host_spoiled="host spoiled: x (kept: it was the one re-run)", rerun=True, ordinal=2)
    )
    assert row["host_spoiled"].startswith("host spoiled")
    assert render([row]).splitlines()[1].rstrip().endswith("re-run; host spoiled, kept")
