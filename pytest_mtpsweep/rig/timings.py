"""A response's `timings` (llama-server's own clock and counts), read as untrusted input and
cross-checked against what the client saw.

The server's numbers decide nothing unchecked: a count that is not a whole number, a NaN, an
infinity, a negative or absurd value, more cached tokens than the prompt, more accepted drafts
or a decode interval the stream's own arrival times rule out makes the response malformed,
with why. The measurement is then invalid (a record all the same): a lie in `timings` can
neither crash a session nor become the published endpoint.

The drafter's counts (`draft_n`, `draft_n_accepted`) are the mechanism's reading, not the
rate's (issue 49): counts that cannot be (not whole, negative, more accepted than drafted, fewer
than one verify step) make that reading invalid (`mechanism_invalid`, both counts dropped) and
keep the rate reading.

The arrival-time bound: token i cannot reach the client before the server made it, so a
decode interval longer than the whole request (send to last byte) is impossible; and a server
that claims to have decoded the tokens in under 1/SERVER_CLOCK_FACTOR of the span over which
the client received them (less NETWORK_SLACK_S for scheduling and buffering) claims a rate
the stream rules out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .usage import ABSURD_TOKENS

# Counts and durations llama-server reports; any other key is passed over, unread.
COUNT_KEYS = ("predicted_n", "prompt_n", "cache_n")
DRAFT_KEYS = ("draft_n", "draft_n_accepted")
MS_KEYS = ("predicted_ms", "prompt_ms")
RATE_KEYS = ("predicted_per_second", "prompt_per_second")
# No request the harness sends lasts a day: a duration past it is absurd.
ABSURD_MS = 86_400_000.0
# No single stream decodes faster than this (the fastest servers are ~10^3-10^4 tokens/s).
ABSURD_TPS = 1e7
# The server's decode interval may be this much shorter than the span the client received
# the tokens over, and no more: buffering and scheduling bunch tokens up, they do not spread
# a burst out by a factor of 2. The slack is the client's own: a client descheduled between
# two reads on a busy host (a throttled CI container stalls for 100s of ms) spreads the span
# it stamps, and CI once saw an honest server's 15 ms decode read over 704 ms. A second of it
# still rules out any lie of a factor of 2 over a stream of more than a second, and the rate
# and request bounds above catch the absurd ones at any length.
SERVER_CLOCK_FACTOR = 2.0
NETWORK_SLACK_S = 1.0


@dataclass(frozen=True)
class Timings:
    """The server's numbers that passed their checks; `problem` says why they did not."""

    predicted_n: int | None = None
    predicted_ms: float | None = None
    prompt_ms: float | None = None
    cache_n: int | None = None
    draft_n: int | None = None
    draft_n_accepted: int | None = None
    problem: str | None = None
    # why the drafter's counts are no mechanism reading (the rate reading stands)
    mechanism_invalid: str | None = None

    def measured(self) -> dict[str, Any]:
        """The fields of the measurement they fill (`schema.Measurement`), each as checked."""
        fields = asdict(self)
        del fields["problem"]
        return fields


def _number(timings: Mapping[str, Any], key: str) -> tuple[float | None, str | None]:
    value = timings.get(key)
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, f"timings.{key} is {value!r}, not a number"
    if not math.isfinite(value):
        return None, f"timings.{key} is {value!r}"
    if value < 0:
        return None, f"timings.{key} is {value} (negative)"
    if key in (*COUNT_KEYS, *DRAFT_KEYS) and (value != int(value) or value > ABSURD_TOKENS):
        return None, f"timings.{key} is {value!r}, not a plausible token count"
    if key in MS_KEYS and value > ABSURD_MS:
        return None, f"timings.{key} is {value!r} ms, longer than any request lasts"
    if key in RATE_KEYS and value > ABSURD_TPS:
        return None, f"timings.{key} is {value!r} tokens/s, faster than any server decodes"
    return float(value), None


def read_timings(
    timings: object,
    *,
    content_stamps: list[int],
    t_send: int,
    t_end: int,
    prompt_tokens: int | None = None,
) -> Timings:
    """The timings object of a response (None or not a mapping: none sent), checked for sense
    and against the client's arrival stamps (monotonic ns)."""
    if not isinstance(timings, Mapping):
        return Timings()
    got: dict[str, float | None] = {}
    for key in (*COUNT_KEYS, *MS_KEYS, *RATE_KEYS):
        got[key], bad = _number(timings, key)
        if bad is not None:
            return Timings(problem=f"malformed response: {bad}")
    problem = _cross_check(got, content_stamps, t_send, t_end, prompt_tokens)
    if problem is not None:
        return Timings(problem=f"malformed response: {problem}")

    def count(key: str) -> int | None:
        v = got[key]
        return None if v is None else int(v)

    drafted, accepted, draft_problem = read_draft_counts(timings, count("predicted_n"))
    return Timings(
        predicted_n=count("predicted_n"),
        predicted_ms=got["predicted_ms"],
        prompt_ms=got["prompt_ms"],
        cache_n=count("cache_n"),
        draft_n=drafted,
        draft_n_accepted=accepted,
        mechanism_invalid=draft_problem,
    )


def read_draft_counts(
    timings: Mapping[str, Any], predicted_n: int | None
) -> tuple[int | None, int | None, str | None]:
    """(drafted, accepted, why they are no mechanism reading): a count that is not a whole
    non-negative number, more accepted than drafted, or fewer than one verify step for the
    tokens decoded after the first (predicted_n - 1 - accepted < 1) drops both counts, with
    the reason."""
    got: dict[str, float | None] = {}
    for key in DRAFT_KEYS:
        got[key], bad = _number(timings, key)
        if bad is not None:
            return None, None, bad
    drafts, accepted = got["draft_n"], got["draft_n_accepted"]
    if accepted is not None and drafts is not None and accepted > drafts:
        return None, None, f"timings.draft_n_accepted {accepted:g} is more than draft_n {drafts:g}"
    # The first token comes from the prompt's pass; each verify step after it yields one token
    # of its own, so at most predicted_n - 2 of the tokens decoded after it were drafts.
    if accepted is not None and predicted_n is not None and accepted > max(predicted_n - 2, 0):
        why = (
            f"timings.draft_n_accepted {accepted:g} leaves {predicted_n - 1 - accepted:g} verify "
            f"steps for the {predicted_n - 1} tokens decoded after the first (predicted_n "
            f"{predicted_n}; a step yields one token of its own)"
        )
        return None, None, why
    return (
        None if drafts is None else int(drafts),
        None if accepted is None else int(accepted),
        None,
    )


def _cross_check(
    got: Mapping[str, float | None],
    stamps: list[int],
    t_send: int,
    t_end: int,
    prompt_tokens: int | None,
) -> str | None:
    cache = got["cache_n"]
    if cache is not None and prompt_tokens is not None and cache > prompt_tokens:
        return f"timings.cache_n {cache:g} is more than the prompt's {prompt_tokens} tokens"
    n, ms = got["predicted_n"], got["predicted_ms"]
    if n is None or ms is None or n < 2:
        return None
    decode_s, request_s = ms / 1000.0, (t_end - t_send) / 1e9
    if decode_s <= 0 or (n - 1) / decode_s > ABSURD_TPS:
        return (
            f"timings.predicted_ms {ms:g} for {n:g} tokens is a rate faster than any server decodes"
        )
    if decode_s > request_s + NETWORK_SLACK_S:
        return (
            f"timings.predicted_ms {ms:g} is longer than the whole request took "
            f"({1000 * request_s:.0f} ms on the client's clock)"
        )
    if len(stamps) >= 2:
        span_s = (stamps[-1] - stamps[0]) / 1e9
        if SERVER_CLOCK_FACTOR * decode_s + NETWORK_SLACK_S < span_s:
            return (
                f"timings.predicted_ms {ms:g} claims {n - 1:g} tokens decoded faster than the "
                f"stream delivered them ({1000 * span_s:.0f} ms from the first content event "
                "to the last)"
            )
    return None
