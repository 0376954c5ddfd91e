"""Cohorts: a directory of templates each, turning a task into the first message(s), and the
rule that takes the artefact out of a reply.

    cohorts/<name>/user.txt      the first user message; ${statement}, ${task} and the task's
                                 own variables (${function}, ${signature}, ${example}, ...)
    cohorts/<name>/system.txt    optional system message (the same variables)
    cohorts/<name>/feedback.txt  optional: how a failed check is put to the model, ${error}
                                 (the checker's trimmed message); default "check: ${error}"
    cohorts/<name>/cohort.toml   optional: extract = "fenced:python" (default), "fenced", "whole"
"""

from __future__ import annotations

import hashlib
import string
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...kindapi import PromptError
from ...kindapi.ladder import read_text_file
from .run.extract import check_mode
from .tasks import Task

USER_FILE, SYSTEM_FILE, COHORT_FILE = "user.txt", "system.txt", "cohort.toml"
FEEDBACK_FILE = "feedback.txt"
DEFAULT_FEEDBACK = "check: ${error}"  # the seed's own form
DEFAULT_EXTRACT = "fenced:python"


@dataclass(frozen=True)
class Cohort:
    """One prompt/output format."""

    name: str
    user: str
    system: str | None
    extract: str
    digest: str
    feedback: str = DEFAULT_FEEDBACK

    def feedback_message(self, error: str) -> str:
        """The next user turn after a failed check (or a reply with no artefact)."""
        return string.Template(self.feedback).safe_substitute(error=error).strip()

    def messages(self, task: Task) -> list[dict[str, str]]:
        """The conversation's first messages for this task."""
        values = task.template_vars()
        out = []
        if self.system is not None:
            out.append({"role": "system", "content": _fill(self.system, values, self, task)})
        out.append({"role": "user", "content": _fill(self.user, values, self, task)})
        return out


def _fill(template: str, values: dict[str, str], cohort: Cohort, task: Task) -> str:
    try:
        return string.Template(template).substitute(values).strip()
    except KeyError as exc:
        raise PromptError(
            f"cohort {cohort.name}: its template uses ${{{exc.args[0]}}}, which task {task.id} "
            f"does not define; add {exc.args[0]} to tasks/{task.id}/task.toml or drop it from "
            "the template."
        ) from None
    except ValueError as exc:
        raise PromptError(
            f"cohort {cohort.name}: a template has a bad placeholder ({exc}); write $$ for a "
            "literal dollar sign."
        ) from None


def _settings(path: Path) -> str:
    if not path.is_file():
        return DEFAULT_EXTRACT
    try:
        raw = tomllib.loads(read_text_file(path, "cohort file"))
    except tomllib.TOMLDecodeError as exc:
        raise PromptError(f"cohort file {path} is not valid TOML ({exc}); fix it.") from None
    except (RecursionError, ValueError):  # nested thousands deep, or an int of 4,300+ digits
        raise PromptError(
            f"cohort file {path} nests thousands deep or holds a number of thousands of digits; "
            "write flat string settings."
        ) from None
    unknown = set(raw) - {"extract", "description"}
    if unknown:
        raise PromptError(
            f"cohort file {path}: unknown field {sorted(unknown)[0]!r}; use extract or description."
        )
    mode = str(raw.get("extract", DEFAULT_EXTRACT))
    problem = check_mode(mode)
    if problem:
        raise PromptError(f"cohort file {path}: {problem}; fix it.")
    return mode


def load_cohort(directory: Path) -> Cohort:
    """One cohort directory, or a one-line PromptError naming what is missing."""
    if not (directory / USER_FILE).is_file():
        raise PromptError(f"cohort {directory} has no {USER_FILE}; add the first-message template.")
    user = read_text_file(directory / USER_FILE, "cohort template")
    system_path = directory / SYSTEM_FILE
    system = read_text_file(system_path, "cohort template") if system_path.is_file() else None
    feedback_path = directory / FEEDBACK_FILE
    feedback = DEFAULT_FEEDBACK
    if feedback_path.is_file():
        feedback = read_text_file(feedback_path, "cohort feedback template")
        if "${error}" not in feedback:
            raise PromptError(
                f"cohort feedback template {feedback_path} never says ${{error}}; put ${{error}} "
                "where the checker's message goes."
            )
    h = hashlib.sha256()
    for name in (USER_FILE, SYSTEM_FILE, FEEDBACK_FILE, COHORT_FILE):
        p = directory / name
        h.update(name.encode() + b"\0" + (p.read_bytes() if p.is_file() else b"") + b"\0")
    extract = _settings(directory / COHORT_FILE)
    return Cohort(directory.name, user, system, extract, h.hexdigest(), feedback)


def load_cohorts(
    directory: Path, names: Sequence[str], tasks: Sequence[Task]
) -> tuple[Cohort, ...]:
    """The named cohorts, each checked against every task (every variable defined)."""
    cohorts = []
    for name in names:
        path = directory / name
        if not path.is_dir():
            raise PromptError(
                f"cohort {name} has no directory {path}; add it or fix the ladder's cohorts list."
            )
        cohorts.append(load_cohort(path))
    for c in cohorts:
        for t in tasks:
            c.messages(t)  # raises on a variable the task lacks
    return tuple(cohorts)


def digest(cohorts: Sequence[Cohort]) -> str:
    h = hashlib.sha256()
    for c in cohorts:
        h.update(f"{c.name}\0{c.digest}\0".encode())
    return h.hexdigest()
