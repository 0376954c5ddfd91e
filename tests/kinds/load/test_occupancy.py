"""The server's occupancy, read: llama-server's /slots, the gauge families of llama-server's
and vLLM's /metrics, and what a level's samples sum up to."""

from __future__ import annotations

from pytest_mtpsweep.kinds.load.run.occupancy import (
    GAUGES,
    SPEC_TOTALS,
    Sources,
    busy_slots,
    pick,
    summary,
)
from pytest_mtpsweep.rig.specmetrics import parse_samples

LLAMA = """# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 3
llamacpp:requests_deferred 1
llamacpp:spec_decode_num_draft_tokens_total 40
llamacpp:spec_decode_num_accepted_tokens_total 12
"""
VLLM = """vllm:num_requests_running{model_name="m"} 5.0
vllm:num_requests_waiting{model_name="m"} 2.0
"""


def test_busy_slots_counts_the_processing_ones() -> None:
    doc = [{"id": 0, "is_processing": True}, {"id": 1, "is_processing": False},
           {"id": 2, "is_processing": True}]  # fmt: skip
    assert busy_slots(doc) == 2
    assert busy_slots({"error": "disabled"}) is None and busy_slots([1, 2]) is None


def test_each_servers_gauges_are_found_by_their_names() -> None:
    assert pick(parse_samples(LLAMA), GAUGES) == GAUGES[0]
    assert pick(parse_samples(LLAMA), SPEC_TOTALS) == SPEC_TOTALS[0]
    assert pick(parse_samples(VLLM), GAUGES) == GAUGES[1]
    assert pick(parse_samples(VLLM), SPEC_TOTALS) is None


def test_a_levels_samples_say_the_most_busy_and_waiting() -> None:
    both = Sources(True, GAUGES[0], None)
    out = summary(both, [1, 3, 2], [1.0, 3.0], [0.0, 2.0], 0.25)
    assert out["source"] == "/slots and /metrics"
    assert out["busy_slots_max"] == 3 and out["busy_slots_mean"] == 2.0
    assert out["running_max"] == 3.0 and out["waiting_max"] == 2.0 and out["slots_samples"] == 3
    none = summary(Sources(False, None, None), [], [], [], 0.25)
    assert none == {"source": "none (no /slots, no /metrics gauges)", "period_s": 0.25}
