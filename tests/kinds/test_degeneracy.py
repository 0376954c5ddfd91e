"""The degeneracy witness: echo, loops, chat-template control strings, empty answers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.decode.run.degeneracy import degenerate

STORY = "Write a short story about a lighthouse keeper who finds a message in a bottle."


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (f"{STORY} <|im_end|> {STORY}", "control strings in the content (<|im_end|>)"),
        (f"{STORY}\n{STORY}", "echo: the content starts with the prompt"),
        (f"Sure. {STORY} mendatang {STORY} mendatang", "echo: the prompt appears 2 times"),
        ("The keeper waited.\n" * 4, "loop: 'the keeper waited.' repeated 4 times"),
        ("He climbed the stairs. He climbed the stairs. He climbed the stairs.", "loop"),
        ("  \n ", "empty"),
        ("<start_of_turn>model\nHello", "<start_of_turn>"),
    ],
)
def test_degenerate_text_is_named(content: str, needle: str) -> None:
    why = degenerate(STORY, content)
    assert why is not None and needle in why


@pytest.mark.parametrize(
    "content",
    [
        "Elias had kept the light for forty years. One grey morning a bottle washed up.",
        "def count_zeros(xs):\n    return sum(1 for x in xs if x == 0)\n",
        "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n",
        '{"name": "x", "items": [1, 2, 3]}',
        "}\n}\n}\n    return 0\n    return 0\n    return 0\n",  # short lines repeat in honest code
    ],
)
def test_real_answers_are_not_flagged(content: str) -> None:
    assert degenerate(STORY, content) is None


@given(st.text(alphabet="abcdefgh ", min_size=20, max_size=60).filter(lambda s: s.strip()))
def test_any_line_three_times_is_a_loop(line: str) -> None:
    line = line.strip()
    if len(line) >= 12:
        assert degenerate("unrelated prompt text", f"{line}\n{line}\n{line}\n") is not None
