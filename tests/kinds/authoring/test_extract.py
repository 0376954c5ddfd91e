"""Taking the artefact out of a reply, as a cohort says."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.authoring.run.extract import (
    blocks,
    check_mode,
    describe_missing,
    extract,
)

REPLY = "Sure.\n```text\nnot code\n```\n```python\ndef f():\n    return 1\n```\nDone.\n"


def test_the_first_block_of_the_language_wins() -> None:
    assert extract(REPLY, "fenced:python") == "def f():\n    return 1\n"
    assert extract(REPLY, "fenced") == "not code\n"
    assert extract("```py\nx = 1\n```", "fenced:python") == "x = 1\n"


def test_an_untagged_block_is_taken_when_none_is_tagged() -> None:
    assert extract("```\nx = 2\n```", "fenced:python") == "x = 2\n"
    assert extract("```js\nx\n```", "fenced:python") is None


def test_a_block_cut_off_by_the_token_limit_runs_to_the_end() -> None:
    assert extract("```python\ndef g():\n    ret", "fenced:python") == "def g():\n    ret"
    assert blocks("```python\na\n```\n```python\nb") == [("python", "a\n"), ("python", "b")]


def test_no_block_and_whole() -> None:
    assert extract("just prose", "fenced:python") is None
    assert extract("  x = 1  ", "whole") == "x = 1\n"
    assert extract("   ", "whole") is None
    assert "```python" in describe_missing("fenced:python")


def test_modes_are_checked() -> None:
    assert check_mode("fenced:python") is None and check_mode("whole") is None
    assert check_mode("fenced") is None
    for bad in ("json", "whole:python", "fenced:"):
        assert check_mode(bad) is not None


@given(st.text(alphabet=st.characters(blacklist_characters="`"), max_size=200))
def test_a_fenced_body_comes_back_unchanged(body: str) -> None:
    body = body.replace("\r", "")
    if not body.endswith("\n"):
        body += "\n"
    assert extract(f"intro\n```python\n{body}```\nafter", "fenced:python") == body
