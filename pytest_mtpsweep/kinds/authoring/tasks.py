"""Tasks: a directory each, holding the statement, the checker and the template variables.

tasks/<id>/statement.md   what the subject is asked to write (the ${statement} variable)
tasks/<id>/checker.py     a pytest file; it imports the artefact as `solution`
tasks/<id>/task.toml      optional: more template variables (function, signature, example)
"""

from __future__ import annotations

import ast
import hashlib
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ...kindapi import PromptError
from ...kindapi.ladder import check_key, read_text_file

ARTEFACT_FILE = "solution.py"  # what the checker imports
CHECKER_FILE = "checker.py"
STATEMENT_FILE = "statement.md"
TASK_FILE = "task.toml"
# task.toml's `checking`: the artefact runs in its own jail behind a proxy (the default), or
# inside the checker's process for tasks whose values cannot cross as data (forgeable verdicts).
ISOLATED, IN_PROCESS = "isolated", "in-process"


@dataclass(frozen=True)
class Task:
    """One task: its id, its template variables, and its checker's source."""

    id: str
    statement: str
    checker: str
    variables: Mapping[str, str] = field(default_factory=dict)
    digest: str = ""
    checking: str = ISOLATED

    def template_vars(self) -> dict[str, str]:
        return {"task": self.id, "statement": self.statement.strip(), **self.variables}


def _variables(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    try:
        raw = tomllib.loads(read_text_file(path, "task file"))
    except tomllib.TOMLDecodeError as exc:
        raise PromptError(f"task file {path} is not valid TOML ({exc}); fix it.") from None
    except (RecursionError, ValueError):  # nested thousands deep, or an int of 4,300+ digits
        raise PromptError(
            f"task file {path} nests thousands deep or holds a number of thousands of digits; "
            "write flat string settings."
        ) from None
    bad = [k for k, v in raw.items() if not isinstance(v, str)]
    if bad:
        raise PromptError(
            f"task file {path}: {', '.join(bad)} must be strings (template variables); quote them."
        )
    return {str(k): str(v) for k, v in raw.items()}


def check_checker(source: str, path: Path) -> None:
    """A checker that compiles and defines a module-level test, or a one-line PromptError.

    Found at load, a broken checker is the task's fault, said once; found at check time it
    would make every cell of the task `exhausted` and blame the subject.
    """
    try:
        tree = ast.parse(source, filename=str(path))
        compile(tree, str(path), "exec")
    except SyntaxError as exc:
        raise PromptError(
            f"task checker {path}:{exc.lineno or 0}: {exc.msg}; fix the checker's syntax."
        ) from None
    except ValueError as exc:  # a NUL byte, say
        raise PromptError(f"task checker {path} cannot be compiled ({exc}); fix it.") from None
    tests = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)  # pytest runs no bare async test
        and node.name.startswith("test")
    ]
    classes = [
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and node.name.startswith("Test")
        and any(isinstance(m, ast.FunctionDef) and m.name.startswith("test") for m in node.body)
    ]
    if not tests and not classes:
        raise PromptError(
            f"task checker {path} defines no module-level test function; write pytest tests "
            "(def test_...() at the top level) that import from solution."
        )


def load_task(directory: Path) -> Task:
    """One task directory, or a one-line PromptError naming what is missing."""
    check_key(directory.name, "task directory", directory.parent)
    for name in (STATEMENT_FILE, CHECKER_FILE):
        if not (directory / name).exists():  # a FIFO or folder there: read_text_file says so
            raise PromptError(f"task {directory} has no {name}; add it.")
    statement = read_text_file(directory / STATEMENT_FILE, "task statement")
    checker = read_text_file(directory / CHECKER_FILE, "task checker")
    check_checker(checker, directory / CHECKER_FILE)
    variables = _variables(directory / TASK_FILE)
    checking = variables.pop("checking", ISOLATED)
    if checking not in (ISOLATED, IN_PROCESS):
        raise PromptError(
            f"task file {directory / TASK_FILE}: checking is {checking!r}; use "
            f'"{ISOLATED}" (the default) or "{IN_PROCESS}".'
        )
    h = hashlib.sha256()
    for name in (STATEMENT_FILE, CHECKER_FILE, TASK_FILE):
        p = directory / name
        h.update(name.encode() + b"\0" + (p.read_bytes() if p.is_file() else b"") + b"\0")
    return Task(directory.name, statement, checker, variables, h.hexdigest(), checking)


def load_tasks(directory: Path, wanted: Sequence[str] = ()) -> tuple[Task, ...]:
    """The tasks of a task directory (the `wanted` ones, in that order; else all, sorted)."""
    if not directory.is_dir():
        raise PromptError(
            f"task directory {directory} does not exist; write the tasks there (a standard set: "
            f"mtpsweep tasks import humaneval {directory} --ids 0-9), or set authoring_dir in the "
            "ladder to the directory holding tasks/ and cohorts/."
        )
    names = list(wanted) or sorted(p.name for p in directory.iterdir() if p.is_dir())
    missing = [n for n in names if not (directory / n).is_dir()]
    if missing:
        raise PromptError(
            f"task directory {directory} has no task {', '.join(missing)}; fix the ladder's "
            "tasks list or add the task."
        )
    if not names:
        raise PromptError(f"task directory {directory} holds no task; add one directory per task.")
    return tuple(load_task(directory / n) for n in names)


def digest(tasks: Sequence[Task]) -> str:
    """sha256 over the tasks' ids and files, in order: a keyed field of the run."""
    h = hashlib.sha256()
    for t in tasks:
        h.update(f"{t.id}\0{t.digest}\0".encode())
    return h.hexdigest()
