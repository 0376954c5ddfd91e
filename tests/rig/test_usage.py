"""Usage read as untrusted input: missing is unknown, never 0; what cannot be true is malformed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.rig.usage import ABSURD_TOKENS, read_usage


def test_plausible_usage_is_known() -> None:
    u = read_usage({"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42}, 64)
    assert u.known and u.total == 42 and u.problem is None


@pytest.mark.parametrize("usage", [None, {}, {"prompt_tokens": 3}, {"completion_tokens": None}])
def test_missing_usage_is_unknown_not_zero(usage: Any) -> None:
    u = read_usage(usage, 64)
    assert not u.known and u.total is None and u.problem is None


@pytest.mark.parametrize(
    ("usage", "why"),
    [
        ({"prompt_tokens": -100000, "completion_tokens": -100000}, "negative"),
        ({"prompt_tokens": True, "completion_tokens": 3}, "True, not a whole number"),
        ({"prompt_tokens": 3, "completion_tokens": 2.5}, "2.5, not a whole number"),
        ({"prompt_tokens": 3, "completion_tokens": 3.0}, "3.0, not a whole number"),
        ({"prompt_tokens": "12", "completion_tokens": 3}, "'12', not a whole number"),
        ({"prompt_tokens": 3, "completion_tokens": 65}, "more than max_tokens 64"),
        ({"prompt_tokens": ABSURD_TOKENS + 1, "completion_tokens": 1}, "more than any context"),
        ("lots", "usage is str"),
        ([1, 2], "usage is list"),
    ],
)
def test_usage_that_cannot_be_true_is_a_malformed_response(usage: Any, why: str) -> None:
    u = read_usage(usage, 64)
    assert not u.known and u.problem is not None and why in u.problem
    assert u.problem.startswith("malformed response: ")


def test_usage_beyond_the_served_context_is_malformed() -> None:
    assert read_usage({"prompt_tokens": 4000, "completion_tokens": 100}, 128, 4096).problem
    assert read_usage({"prompt_tokens": 3900, "completion_tokens": 100}, 128, 4096).known


@given(st.integers(), st.integers(), st.integers(1, 2**20))
def test_a_known_total_is_never_negative_nor_beyond_the_caps(p: int, c: int, cap: int) -> None:
    u = read_usage({"prompt_tokens": p, "completion_tokens": c}, cap)
    if u.known:
        assert u.total is not None and 0 <= u.total <= ABSURD_TOKENS + cap
        assert 0 <= c <= cap
    else:
        assert u.problem is not None
