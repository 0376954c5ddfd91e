"""A small authoring project for the tests: two tasks, two cohorts, remote or local subjects.

The remote subjects are STUB OpenAI-compatible servers (tests/stub_openai_server.py) that play
a scripted model: in the plain cohort its first attempt is wrong and, told the checker's error,
it then writes the right function; in the doctest cohort it is right at once.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.sandbox import REPO
from tests.stub_openai_server import Messages

KEY_ENV = "MTPSWEEP_STUB_KEY"
KEY = "sk-live-7f3a9c1e5b2d4f60a8e1"  # the stub's key: it must appear in nothing a run writes
CORRECT = {"add": "def add(a, b):\n    return a + b\n", "neg": "def neg(x):\n    return -x\n"}
WRONG = {"add": "def add(a, b):\n    return a - b\n", "neg": "def neg(x):\n    return x\n"}
TASKS = {
    "t_add": ("Return the sum of `a` and `b`.", "add(a, b)", "def add(a: int, b: int) -> int:",
              "    >>> add(2, 3)\n    5", "from solution import add\n\n\ndef test_add():\n"
              "    assert add(2, 3) == 5\n    assert add(-1, 1) == 0\n"),
    "t_neg": ("Return `x` negated.", "neg(x)", "def neg(x: int) -> int:",
              "    >>> neg(4)\n    -4", "from solution import neg\n\n\ndef test_neg():\n"
              "    assert neg(4) == -4\n    assert neg(0) == 0\n"),
}  # fmt: skip

LADDER = """
kind = "authoring"
question = "Does the harness run multi-turn conversations to their outcomes?"
baseline = "plain"
cohorts = ["plain", "doctest"]
max_turns = 2
repeats = {repeats}
max_tokens = 64
temperature = 0.0
seed = 42
{extra}

[checker]
timeout_s = 15
cpu_s = 5

[api]
retries = 2
backoff_s = 0.01
max_backoff_s = 0.05
timeout_s = 30

[contrast]
resamples = 1000
"""
REMOTE = """
[[subjects]]
key = "{key}"
base_url = "{url}"
served_model = "stub-model"
api_key_env = "{env}"
"""


def function_of(messages: Messages) -> str:
    first = next(m["content"] for m in messages if m["role"] == "user")
    return "add" if "add(" in first else "neg"


def scripted(messages: Messages) -> str:
    """Plain: wrong, then right after the checker's error; doctest: right at once."""
    name = function_of(messages)
    first = next(m["content"] for m in messages if m["role"] == "user")
    told = sum(m["role"] == "user" for m in messages) > 1  # the checker's error came back
    code = CORRECT[name] if "docstring" in first or told else WRONG[name]
    return f"Here it is.\n```python\n{code}```\n"


def make_project(
    pytester: pytest.Pytester, subjects: dict[str, str], extra: str = "", repeats: int = 2
) -> Path:
    """experiments/ with the tiny task set and a ladder `tiny` whose subjects are at these URLs."""
    exp = pytester.path / "experiments"
    (exp / "ladders").mkdir(parents=True)
    shutil.copy(REPO / "experiments" / "test_authoring.py", exp)
    shutil.copytree(REPO / "experiments" / "authoring" / "cohorts", exp / "authoring" / "cohorts")
    for task, (statement, call, signature, example, checker) in TASKS.items():
        d = exp / "authoring" / "tasks" / task
        d.mkdir(parents=True)
        (d / "statement.md").write_text(statement + "\n")
        (d / "checker.py").write_text(checker)
        (d / "task.toml").write_text(
            f'call = "{call}"\nsignature = "{signature}"\nexample = """{example}"""\n'
        )
    text = LADDER.format(extra=extra, repeats=repeats) + "".join(
        REMOTE.format(key=k, url=u, env=KEY_ENV) for k, u in subjects.items()
    )
    (exp / "ladders" / "tiny.toml").write_text(text)
    return exp


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The project's `tiny` ladder through pytest, in-process."""
    return pytester.runpytest("experiments/", "--ladder=tiny", *args)
