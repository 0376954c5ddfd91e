"""A server's `timings` read as untrusted input (issue 43, findings 1 and 6): NaN, infinite,
negative, absurd or self-contradicting numbers, or a decode interval the stream's own arrival
times rule out, make the measurement invalid with a reason; they never crash the reduction and
never become a rate."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from pytest_mtpsweep.rig.timings import read_timings
from tests.rig.test_stream import TIMINGS, USAGE, normal, reduce

MS = 1_000_000


def with_timings(**changes: Any) -> dict[str, Any]:
    return {**TIMINGS, **changes}


def measured(timings: dict[str, Any], usage: dict[str, Any] = USAGE) -> Any:
    # json.dumps writes NaN and Infinity as JSON's non-standard tokens, as a lying server may,
    # and json.loads reads them back as floats: the reducer must survive both.
    return reduce(*normal(timings=timings, usage=usage))


class TestHostileNumbers:
    @pytest.mark.parametrize(
        ("key", "value", "why"),
        [
            ("cache_n", math.nan, "timings.cache_n is nan"),
            ("cache_n", math.inf, "timings.cache_n is inf"),
            ("cache_n", -3, "timings.cache_n is -3 (negative)"),
            ("cache_n", 2.5, "not a plausible token count"),
            ("cache_n", 10**12, "not a plausible token count"),
            ("cache_n", 13, "cache_n 13 is more than the prompt's 12 tokens"),
            ("predicted_n", math.nan, "timings.predicted_n is nan"),
            ("predicted_ms", math.nan, "timings.predicted_ms is nan"),
            ("predicted_ms", -50.0, "(negative)"),
            ("predicted_ms", 1e300, "longer than any request lasts"),
            ("predicted_per_second", 1e15, "faster than any server decodes"),
            ("prompt_ms", "12", "not a number"),
            ("predicted_n", True, "not a number"),
        ],
    )
    def test_is_an_invalid_measurement_with_its_reason(
        self, key: str, value: Any, why: str
    ) -> None:
        m = measured(with_timings(**{key: value}))
        assert not m.valid
        assert m.reason is not None and why in m.reason
        assert m.decode_rate_tps_interval is None
        # The client's own rate is still what the client measured: nothing is lost but trust.
        assert m.decode_rate_tps_primary == pytest.approx(100.0)
        json.dumps(m.fields(), allow_nan=False)  # the record holds no NaN to write

    def test_the_reducer_survives_nan_in_the_raw_json(self) -> None:
        lines, stamps = normal(timings=with_timings(cache_n=math.nan))
        assert any("NaN" in line for line in lines)
        m = reduce(lines, stamps)
        assert not m.valid and m.cache_n is None


class TestImpossibleDraftCounts:
    """Issue 49: the drafter's counts are the mechanism's reading; counts that cannot be make
    that reading invalid, with why, and keep the rate reading."""

    @pytest.mark.parametrize(
        ("changes", "why"),
        [
            ({"draft_n": math.nan}, "timings.draft_n is nan"),
            ({"draft_n": -4}, "timings.draft_n is -4 (negative)"),
            ({"draft_n_accepted": 1.5}, "not a plausible token count"),
            ({"draft_n_accepted": 5}, "draft_n_accepted 5 is more than draft_n 4"),
            ({"draft_n": 40, "draft_n_accepted": 40}, "verify steps for the 5 tokens decoded"),
            ({"draft_n": 5, "draft_n_accepted": 5}, "leaves 0 verify steps"),
        ],
    )
    def test_drop_the_counts_and_keep_the_rate(self, changes: dict[str, Any], why: str) -> None:
        m = measured(with_timings(**changes))
        assert m.valid and m.reason is None
        assert m.decode_rate_tps_interval is not None
        assert m.draft_n is None and m.draft_n_accepted is None
        assert m.mechanism_invalid is not None and why in m.mechanism_invalid
        json.dumps(m.fields(), allow_nan=False)

    def test_possible_counts_are_kept(self) -> None:
        m = measured(with_timings(draft_n=4, draft_n_accepted=4))
        assert m.valid and (m.draft_n, m.draft_n_accepted) == (4, 4)
        assert m.mechanism_invalid is None


class TestServerClockAgainstTheStream:
    def test_a_claimed_predicted_ms_of_1e_minus_9_is_never_a_rate(self) -> None:
        m = measured(with_timings(predicted_ms=1e-9))
        assert not m.valid and m.decode_rate_tps_interval is None
        assert "a rate faster than any server decodes" in (m.reason or "")

    def test_a_plausible_rate_the_arrivals_rule_out_is_invalid(self) -> None:
        lines, stamps = normal(timings=with_timings(predicted_ms=10.0))
        stamps = [t * 40 for t in stamps]  # content over 1600 ms; the server claims 10 ms
        m = reduce(lines, stamps, t_end=3200 * MS)
        assert not m.valid and m.decode_rate_tps_interval is None
        assert "faster than the stream delivered them (1600 ms" in (m.reason or "")

    def test_a_client_stalled_by_a_busy_host_is_not_a_lying_server(self) -> None:
        # CI: an honest 15 ms decode whose 7 tokens the stalled client read over 704 ms
        lines, stamps = normal(timings=with_timings(predicted_ms=15.0))
        stamps = [t * 704 // 40 for t in stamps]
        m = reduce(lines, stamps, t_end=3000 * MS)
        assert m.valid, m.reason

    def test_a_decode_longer_than_the_request_is_ruled_out(self) -> None:
        m = measured(with_timings(predicted_ms=5000.0))  # the request took 80 ms
        assert not m.valid
        assert "longer than the whole request took" in (m.reason or "")

    def test_a_server_clock_within_the_bound_is_kept(self) -> None:
        # 30 ms of decode against a 40 ms arrival span: bunching, within the factor of 2.
        m = measured(with_timings(predicted_ms=30.0))
        assert m.valid and m.decode_rate_tps_interval == pytest.approx(5 / 0.030)
        assert m.interval_basis == "server_timings"

    def test_without_timings_nothing_is_judged(self) -> None:
        t = read_timings(None, content_stamps=[0, MS], t_send=0, t_end=2 * MS)
        assert t.problem is None and t.predicted_ms is None
