"""A response's `usage`, read as untrusted input: known, unknown, or malformed.

A server may send no usage (the tokens are unknown, never 0), or usage that cannot be true:
a negative count, a boolean or a float where a whole number belongs, more completion tokens
than `max_tokens` allowed, or more tokens than any context holds. Those make the response
malformed: the caller treats it as a failed request with `problem` as the reason, so a lie in
usage can neither shrink a total nor grow a token budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# No served context is this large (the largest are ~10M tokens): a count beyond it is absurd.
ABSURD_TOKENS = 2**26
USAGE_KEYS = ("prompt_tokens", "completion_tokens")


@dataclass(frozen=True)
class Usage:
    """What the response says it cost; `problem` is set when what it says cannot be true."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    problem: str | None = None

    @property
    def known(self) -> bool:
        """Both counts came back and are plausible."""
        return self.problem is None and None not in (self.prompt_tokens, self.completion_tokens)

    @property
    def total(self) -> int | None:
        if not self.known:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)


def _count(usage: Mapping[str, Any], key: str) -> tuple[int | None, str | None]:
    if key not in usage or usage[key] is None:
        return None, None
    value = usage[key]
    if type(value) is not int:  # bool is an int to isinstance; 12.0 is no token count either
        return None, f"usage.{key} is {value!r}, not a whole number"
    if value < 0:
        return None, f"usage.{key} is {value} (negative)"
    if value > ABSURD_TOKENS:
        return None, f"usage.{key} is {value}, more than any context holds"
    return value, None


def read_usage(
    usage: object, max_tokens: int | None = None, context_tokens: int | None = None
) -> Usage:
    """The usage object of a response (None or not a mapping: unknown), checked for sense."""
    if not isinstance(usage, Mapping):
        what = f"malformed response: usage is {type(usage).__name__}"
        return Usage(problem=None if usage is None else what)
    (prompt, p_bad), (completion, c_bad) = (_count(usage, k) for k in USAGE_KEYS)
    problem = p_bad or c_bad
    total = (prompt or 0) + (completion or 0)
    cap = ABSURD_TOKENS if max_tokens is None else max_tokens
    if problem is None and completion is not None and completion > cap:
        problem = f"usage.completion_tokens is {completion}, more than max_tokens {max_tokens}"
    if problem is None and context_tokens is not None and total > context_tokens:
        problem = f"usage says {total} tokens, more than the served context of {context_tokens}"
    if problem is not None:
        return Usage(problem=f"malformed response: {problem}")
    return Usage(prompt, completion)
