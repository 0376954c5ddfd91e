"""The per-turn analysis of a conversation run (pure): the median's interval, the cached share
with unknown counts never taken as 0, and the TTFT gain per turn paired by (conversation, turn)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from pytest_mtpsweep.kinds.load.analysis import frame, turns
from pytest_mtpsweep.report.model import section_markdown
from pytest_mtpsweep.state.plandoc import PlanDoc


def test_the_medians_interval_is_order_statistics_of_at_least_95_percent() -> None:
    assert all(math.isnan(x) for x in turns.median_interval([1, 2, 3, 4, 5]))  # 93.75 % at most
    assert turns.median_interval([6, 1, 5, 2, 4, 3]) == (1, 6)  # 1 - 2/64
    # n = 20: P(B <= 5) = 0.0207 gives 95.9 %; P(B <= 6) = 0.0577 would give 88.5 %
    assert turns.median_interval(list(range(1, 21))) == (6, 15)
    assert turns.median_interval([math.nan, 1.0, 2.0]) != (1.0, 2.0)  # NaN is no sample


def test_the_interval_holds_the_true_median_at_least_95_percent_of_the_time() -> None:
    rng = random.Random(3)
    trials, held = 2000, 0
    for _ in range(trials):
        lo, hi = turns.median_interval([rng.expovariate(1.0) for _ in range(15)])
        held += lo <= math.log(2) <= hi
    assert held / trials >= 0.94  # 0.965 by construction, with room for the draw


def _request(t: str, cycle: int, conv: int, turn: int, ttft: float, **kw: Any) -> dict[str, Any]:
    return {"record": "request", "treatment": t, "cycle": cycle, "session": f"{t}{cycle}",
            "level": "conc2", "mode": "closed", "level_value": 2.0, "block": 0,
            "request": (conv - 1) * 3 + turn - 1, "prompt_id": f"p{conv}", "valid": True,
            "ttft_ms": ttft, "e2e_ms": ttft + 50, "conversation": conv, "turn": turn,
            "cache_status": "ok", "cached_tokens": 100 * turn, "prompt_tokens_total": 120 * turn,
            **kw}  # fmt: skip


def _records() -> list[dict[str, Any]]:
    """b: TTFT 200 ms at every turn, no cache; a: 200 / (2 turn) ms, its cache growing; one of
    a's requests without a cache reading, one with an impossible one."""
    out = []
    for cycle in (1, 2):
        for conv in range(1, 5):
            for turn in (1, 2, 3):
                noise = 1 + 0.01 * conv
                out.append(_request("b", cycle, conv, turn, 200 * noise, cached_tokens=0))
                out.append(_request("a", cycle, conv, turn, 200 * noise / (2 * turn)))
    out[1] |= {"cache_status": "unknown", "cached_tokens": None}
    out[7] |= {"cache_status": "invalid", "cached_tokens": None,
               "cache_reason": "timings.cache_n -4 is negative"}  # fmt: skip
    return out


def test_the_table_says_ttft_and_the_cache_per_turn_and_the_paired_gain() -> None:
    requests, _ = frame.frames(_records())
    table = turns.turn_table(requests, ["b", "a"], "b", ["conc2"], boot=200, seed=1)
    by = {(r["treatment"], r["turn"]): r for r in table.to_dict(orient="records")}
    assert len(table) == 6 and by[("a", 1)]["requests"] == 8
    assert by[("a", 1)]["cache_unknown"] == 1 and by[("a", 1)]["cache_invalid"] == 1
    assert by[("a", 1)]["cache_known"] == 6  # unknown and invalid are in no figure, never 0
    assert by[("a", 3)]["cached_share"] == pytest.approx(100 / 120)
    assert by[("b", 2)]["cached_share"] == 0.0
    assert by[("a", 3)]["ttft_p50_ms"] < by[("a", 1)]["ttft_p50_ms"]
    # a's TTFT is b's over 2 k at turn k: the paired gain is +100 %, +300 %, +500 %
    for k, gain in ((1, 100.0), (2, 300.0), (3, 500.0)):
        assert by[("a", k)]["ttft_gain_pct"] == pytest.approx(gain, abs=1e-6)
    assert math.isnan(by[("b", 1)]["ttft_gain_pct"])  # the baseline has no gain over itself


def test_the_report_lines_and_the_limitations_name_the_missing_cache_readings() -> None:
    requests, _ = frame.frames(_records())
    plan = {"load": {"cache_prompt": True, "conversation": {
        "turns": 3, "conversations": 4, "think_time_s": 0.5, "system_prefix_tokens": 64,
        "system_prefix_chars": 280, "system_prefix_sha256": "ab" * 32}}}  # fmt: skip
    done = turns.analyse(
        requests, PlanDoc.from_json(plan), ["b", "a"], "b", ["conc2"], boot=200, seed=1
    )
    assert done is not None
    assert done.headline[1] == (
        "a at conc2: TTFT median 102 ms at turn 1 with 100 of 120 (83 %) prompt tokens cached, "
        "34 ms at turn 3 with 300 of 360 (83 %)"
    )
    text = section_markdown(done.section)  # the Per turn section as report.md writes it
    assert "4 conversations of 3 turns" in text and "prompt cache on" in text
    assert "| a | conc2 | 3 | 8/8 | 34 [34, 35] | 300 of 360 (83 %) | 0 | 0 | +500.0 %" in text
    assert "| a | conc2 | 1 | 8/8 | 102 [101, 104] | 100 of 120 (83 %) | 1 | 1 |" in text
    (limit,) = done.limits
    assert "a: 1 of 24 requests' cached tokens unknown" in limit
    assert "1 invalid (timings.cache_n -4 is negative)" in limit


def test_a_run_without_conversations_has_no_per_turn_report() -> None:
    plain = [{k: v for k, v in r.items() if k not in ("conversation", "turn")}
             for r in _records()]  # fmt: skip
    requests, _ = frame.frames(plain)
    assert turns.analyse(requests, PlanDoc(), ["b", "a"], "b", ["conc2"], boot=200, seed=1) is None
