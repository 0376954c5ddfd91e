"""A decode record's mechanism fields (issue 49): derived from the server's counts, None where
nothing was drafted, and no reading where the counts cannot be."""

from __future__ import annotations

import pytest

from pytest_mtpsweep.base.schema import Measurement
from pytest_mtpsweep.kinds.decode.records import (
    MECHANISM_FIELDS,
    RECORD_FIELDS,
    decode_record,
    mechanism_fields,
)

F = MECHANISM_FIELDS


def test_a_drafting_measurement_reads_as_steps_tokens_per_step_and_step_time() -> None:
    # The reference's measured answer: 64 tokens, 63 drafted, 41 accepted. The first token
    # came from the prompt's pass, before the decode clock: 63 decoded in 22 steps.
    m = Measurement(valid=True, reason=None, predicted_n=64, predicted_ms=2200.0,
                    draft_n=63, draft_n_accepted=41)  # fmt: skip
    got = mechanism_fields(m)
    assert got[F["steps"]] == 22
    assert got[F["tokens_per_step"]] == pytest.approx(63 / 22)
    assert got[F["drafted_per_step"]] == pytest.approx(63 / 22)
    assert got[F["step_ms"]] == pytest.approx(100.0)
    assert got[F["acc_per_pos"]] is None and got["mechanism_invalid"] is None


def test_a_plain_measurement_has_no_mechanism() -> None:
    got = mechanism_fields(Measurement(valid=True, reason=None, predicted_n=64, predicted_ms=9.0))
    assert all(got[f] is None for f in F.values()) and got["mechanism_invalid"] is None


@pytest.mark.parametrize(
    ("drafted", "accepted", "n"), [(5, 6, 64), (70, 63, 64), (3, -1, 64)]
)  # fmt: skip
def test_counts_that_cannot_be_are_no_reading(drafted: int, accepted: int, n: int) -> None:
    m = Measurement(valid=True, reason=None, predicted_n=n, predicted_ms=9.0,
                    draft_n=drafted, draft_n_accepted=accepted)  # fmt: skip
    got = mechanism_fields(m)
    assert got["mechanism_invalid"] and "verify steps" in got["mechanism_invalid"]
    assert all(got[f] is None for f in F.values())


def test_a_one_token_answer_has_no_step_to_read() -> None:
    m = Measurement(valid=True, reason=None, predicted_n=1, draft_n=0, draft_n_accepted=0)
    got = mechanism_fields(m)
    assert got[F["steps"]] is None and got["mechanism_invalid"] is None


def test_the_rigs_reason_is_kept() -> None:
    m = Measurement(valid=True, reason=None, predicted_n=8, mechanism_invalid="timings.x bad")
    assert mechanism_fields(m)["mechanism_invalid"] == "timings.x bad"


def test_every_record_holds_every_field_once() -> None:
    identity = dict.fromkeys(RECORD_FIELDS, "x") | {"cycle": 1}
    m = Measurement(valid=True, reason=None, predicted_n=4, draft_n=3, draft_n_accepted=1)
    rec = decode_record(identity, m, "t", {}, {})
    assert list(rec) == list(RECORD_FIELDS) and len(set(RECORD_FIELDS)) == len(RECORD_FIELDS)
    assert rec[F["steps"]] == 2
