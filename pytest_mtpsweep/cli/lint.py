"""`mtpsweep lint LADDER...`: check ladder files without starting anything or needing a model.

Each file goes through the loader a run uses (`ladder.load_ladder`: schema, treatments,
pre-registration labels, drop order, numeric ranges) and its kind's own checks (its inputs,
such as a prompt set, and its analysis settings); then the server arguments: a `{placeholder}`
nothing replaces, or a flag the harness sets itself. The fields of each table are checked on
their own, so one file can report several problems.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import LadderError, UserError
from ..interface import registry
from ..ladder import Ladder, find_ladder, ladder_plan, read_toml
from ..ladder.hostthresholds import busy_host_warning
from ..ladder.load import field_errors
from ..ladder.serverargs import argument_problems
from ..ladder.stop import early_look_warning
from ..protocol import looks
from ..protocol.loader import kind_spec_of, load_ladder
from ..rig import models
from ..wishes.request import AnalysisRequest, RunRequest


@dataclass(frozen=True)
class Linted:
    """One file's verdict: what it is when it passes, or its problems (one line each)."""

    path: Path
    summary: str = ""
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # said, but the file passes


def ladder_files(args: Sequence[str], search_dirs: list[Path]) -> tuple[list[Path], list[str]]:
    """Ladder names or paths (a directory stands for the ladders in it), and one problem line
    for each argument that names none."""
    out: list[Path] = []
    problems: list[str] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            found = sorted(path.glob("*.toml"))
            if not found:
                problems.append(f"{path}: holds no *.toml ladder files; name a ladder file.")
            out += [p.resolve() for p in found]
            continue
        try:
            out.append(find_ladder(arg, search_dirs))
        except LadderError as exc:
            problems.append(str(exc))
    return list(dict.fromkeys(out)), problems


def _line(path: Path, message: str) -> str:
    return message if message.startswith(str(path)) else f"{path}: {message}"


def _model_problems(ladder: Ladder) -> list[str]:
    if (
        ladder.model.startswith(models.PREFIX)
        and ladder.model[len(models.PREFIX) :] not in models.MODELS
    ):
        return [
            f"{ladder.path}: field model.path is {ladder.model!r}, not an embedded model; use "
            f"one of {', '.join(repr(models.PREFIX + n) for n in models.MODELS)} or a GGUF path "
            "(or leave it out and pass --model)."
        ]
    return []


def _kind_problems(ladder: Ladder) -> tuple[str, list[str], list[str]]:
    """The kind's own checks (its inputs, its analysis settings); the summary if they pass."""
    request = RunRequest(
        ladder=str(ladder.path),
        search_dirs=(),
        cwd=ladder.path.parent,
        invocation=("mtpsweep", "lint", str(ladder.path)),
    )
    try:
        run = registry.prepare(ladder, request)
        run.validate_analysis(AnalysisRequest())
        looks.check_supported(ladder, registry.kind(ladder.kind, str(ladder.path)))
        cases = run.cases(ladder_plan(ladder))
        looks.check_cells(ladder, run, cases, selected=False)
    except UserError as exc:
        return "", [_line(ladder.path, str(exc))], []
    summary = (
        f"{ladder.kind}, {len(ladder.treatments)} treatments x {looks.describe(ladder)}, "
        f"{len(cases)} cases"
    )
    beside = len(ladder.treatment_keys) - 1  # the arms a look can borrow the session level from
    early = early_look_warning(ladder.stop, beside, sweep=ladder.sweep is not None)
    said = [early, busy_host_warning(ladder.host_rule)]
    return summary, [], [*run.lint_warnings(), *(line for line in said if line)]


def lint_file(path: Path) -> Linted:
    """Every problem of one ladder file that can be found without starting anything."""
    try:
        raw = read_toml(path)
    except LadderError as exc:
        return Linted(path, problems=(str(exc),))
    try:
        spec = kind_spec_of(raw, path)
    except UserError:
        pass  # the loader below names it
    else:
        early = field_errors(raw, spec.fields, path)
        if len(early) > 1:  # else the loader below names the one problem itself
            return Linted(path, problems=tuple(_line(path, str(e)) for e in early))
    try:
        ladder = load_ladder(path)
    except UserError as exc:
        return Linted(path, problems=(_line(path, str(exc)),))
    summary, problems, warnings = _kind_problems(ladder)
    problems = _model_problems(ladder) + argument_problems(ladder) + problems
    return Linted(path, summary, tuple(problems), tuple(warnings))


def lint(paths: Iterable[Path]) -> list[Linted]:
    return [lint_file(p) for p in paths]
