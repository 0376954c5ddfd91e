"""What a decode session's records add up to: finish reasons, drafts, the shakedown."""

from __future__ import annotations

from typing import Any

from pytest_mtpsweep.kinds.decode.run import tallies


def rec(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"valid": True, "http_status": 200, "finish_reason": "stop",
                            "completion_tokens": 10, "content_chunks": 9, "reasoning_chars": 0,
                            "unrecognised_delta_fields": []}  # fmt: skip
    return base | over


def test_finish_reasons_are_counted_most_first() -> None:
    records = [rec()] * 14 + [rec(finish_reason="length")] * 2 + [rec(finish_reason=None)]
    assert tallies.finish_reasons(records) == {"stop": 14, "length": 2}
    assert list(tallies.finish_reasons(records)) == ["stop", "length"]


def test_drafts_sum_over_valid_records_and_are_missing_without_a_drafter() -> None:
    records = [rec(draft_n=10, draft_n_accepted=8), rec(draft_n=6, draft_n_accepted=1),
               rec(valid=False, draft_n=100, draft_n_accepted=0)]  # fmt: skip
    assert tallies.draft_totals(records) == {"draft_n": 16, "draft_n_accepted": 9}
    assert tallies.draft_totals([rec()]) == {"draft_n": None, "draft_n_accepted": None}


def test_token_basis_allows_for_the_unstreamed_end_token_of_a_stop() -> None:
    assert tallies.token_basis_agrees(rec())  # stop: 10 tokens, 9 content events
    assert tallies.token_basis_agrees(rec(finish_reason="length", content_chunks=10))
    assert not tallies.token_basis_agrees(rec(content_chunks=5))  # coalesced events
    assert not tallies.token_basis_agrees(rec(completion_tokens=None))


def test_the_shakedown_counts_what_the_users_checked() -> None:
    records = [
        rec(),
        rec(content_chunks=1),  # the whole answer in one event: not really streamed
        rec(completion_tokens=None),  # no usage
        rec(reasoning_chars=5),  # a hidden event
        rec(http_status=None, valid=False),  # never answered: not a response
    ]
    s = tallies.shakedown(records)
    assert s == {"responses": 4, "non_chunked": 1, "with_usage": 3, "token_basis_agree": 2,
                 "hidden_events": 1}  # fmt: skip
    assert tallies.describe_shakedown("01_none_c1", s) == (
        "row-1 shakedown (01_none_c1, 4 responses): 1 non-chunked, usage 3/4, "
        "token-basis agreement 2/4, 1 hidden events"
    )
