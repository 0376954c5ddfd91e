"""Prometheus text parsing and the per-request spec-decode counts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.rig.specmetrics import (
    ACCEPTED,
    DRAFTED,
    SpecCounters,
    parse_samples,
    request_counts,
    spec_counters,
)
from tests.stub_vllm_server import Script, metrics_text

PAGE = f"""# HELP {ACCEPTED} Number of accepted tokens.
# TYPE {ACCEPTED} counter
{ACCEPTED}{{engine="0",model_name="q"}} 10.0
{ACCEPTED}{{engine="1",model_name="odd }} name \\" here"}} 5 1700000000000
{DRAFTED}{{engine="0",model_name="q"}} 3.2e1
vllm:spec_decode_num_accepted_tokens_created{{engine="0"}} 1.7e9
bare_metric 2
broken{{a="1"}} not-a-number
nan_metric NaN
"""


def test_label_sets_are_summed_and_odd_lines_skipped() -> None:
    samples = parse_samples(PAGE)
    assert samples[ACCEPTED] == 15.0 and samples[DRAFTED] == 32.0
    assert samples["bare_metric"] == 2.0
    assert "broken" not in samples and "nan_metric" not in samples
    assert spec_counters(PAGE) == SpecCounters(drafted=32, accepted=15)


def test_a_page_without_the_counters_is_none() -> None:
    assert spec_counters("# nothing\nvllm:num_requests_running 0\n") is None
    assert spec_counters(metrics_text(Script(speculative=False))) is None


@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_the_stub_page_round_trips(drafted: int, accepted: int) -> None:
    script = Script(drafted=drafted, accepted=accepted)
    assert spec_counters(metrics_text(script)) == SpecCounters(drafted, accepted)


def test_request_counts_and_what_moved_between() -> None:
    before, after = SpecCounters(30, 20), SpecCounters(42, 27)
    first = request_counts(before, after, None)
    assert (first.draft_n, first.draft_n_accepted, first.moved_between) == (12, 7, None)
    assert request_counts(before, after, SpecCounters(30, 20)).moved_between == 0
    assert request_counts(before, after, SpecCounters(27, 18)).moved_between == 5
