"""Pairing by slot, pure: the slots both sides completed pair, those one side reached alone (a
timed block on a faster server) or failed are counted apart and said, never pooled."""

from __future__ import annotations

import pytest

from pytest_mtpsweep.kinds.load.analysis import contrast, frame
from pytest_mtpsweep.kinds.load.analysis.pairing import pairing_lines, slot_pairing
from pytest_mtpsweep.state.plandoc import PlanDoc
from tests.kinds.load.synthetic import gains, lines

PAIRS = [("ngram", "none")]
ORDER = ["conc1", "conc4"]


def timed_records() -> list[dict[str, object]]:
    """12 slots a block, except that none reached only the first 9 at conc4 in every cycle."""
    out = lines(gains({"conc1": 1.25, "conc4": 0.8}), per_prompt=2)
    return [
        r for r in out
        if not (r["record"] == "request" and r["treatment"] == "none" and r["level"] == "conc4"
                and r["request"] in range(9, 12))
    ]  # fmt: skip


def test_slots_one_side_reached_alone_are_unpaired_and_counted() -> None:
    rq, lv = frame.frames(timed_records())
    p = slot_pairing(rq, "ngram", "none", "conc4")
    assert (p.paired, p.unpaired, p.completed_t, p.completed_b) == (18, 6, 24, 18)
    assert slot_pairing(rq, "ngram", "none", "conc1").unpaired == 0
    rows = {(r.endpoint, r.level): r for r in
            contrast.contrast_rows(rq, lv, PAIRS, ORDER, boot=200, seed=1)}  # fmt: skip
    # the contrast pairs exactly the paired slots, and the gain is the one the data hold
    assert rows[("e2e", "conc4")].n_pairs == 18 and rows[("e2e", "conc1")].n_pairs == 24
    assert rows[("e2e", "conc4")].gain_pct == pytest.approx(-20.0)
    (line,) = pairing_lines(rq, list(rows.values()))
    assert line == (
        "- Pairing by slot, ngram vs none: conc1: 24 paired slots, 0 unpaired; conc4: 18 "
        "paired slots, 6 unpaired (ngram completed 24, none 18); unpaired slots are in no "
        "per-request interval."
    )


def test_a_failed_request_leaves_its_slot_unpaired() -> None:
    records = lines(gains({"conc1": 2.0, "conc4": 2.0}))
    for r in records:
        if r["record"] == "request" and (r["treatment"], r["cycle"], r["level"], r["request"]) \
                == ("none", 2, "conc1", 3):  # fmt: skip
            r["valid"] = False
    rq, _ = frame.frames(records)
    p = slot_pairing(rq, "ngram", "none", "conc1")
    assert (p.paired, p.unpaired, p.completed_t, p.completed_b) == (11, 1, 12, 11)


def test_the_report_says_the_pairing_and_the_timed_design() -> None:
    from pytest_mtpsweep.kinds.load.report import sections as report

    rq, lv = frame.frames(timed_records())
    rows = contrast.contrast_rows(rq, lv, PAIRS, ORDER, boot=200, seed=1)
    table = frame.percentile_table(rq, lv)
    plan = {"load": {"duration_s": 30.0, "requests": None, "levels": []},
            "treatments": [{"key": "none"}, {"key": "ngram"}]}  # fmt: skip
    text = report.report(PlanDoc.from_json(plan), rq, table, lv, rows, [], [], "none").markdown()
    assert "- 30 s per block (closed loop: new requests while time remains" in text
    assert "from its first send to its last completion" in text
    assert "conc4: 18 paired slots, 6 unpaired (ngram completed 24, none 18)" in text
    counted = report.report(
        PlanDoc.from_json({"load": {"requests": 16}}), rq, table, lv, rows, [], [], "none"
    ).markdown()
    assert "- 16 requests per block, throughput over each block's wall time from its start" in (
        counted
    )
