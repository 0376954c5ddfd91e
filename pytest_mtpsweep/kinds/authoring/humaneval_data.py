"""A HumanEval-format problem file, read and checked whole before anything is written.

The file is JSON lines (gzip or not), one problem a line with string fields `task_id`
(`HumanEval/<n>`), `prompt` (Python that defines `entry_point`), `entry_point` and `test`
(Python that defines `check(candidate)`). It is streamed line by line under stated caps, so a
huge or endless input is refused after at most MAX_INPUT_BYTES, never read into memory at once.
Each refusal is one line naming the file, the line, the field and the fix.
"""

from __future__ import annotations

import ast
import gzip
import inspect
import json
import keyword
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ...kindapi import PromptError, UserError

MAX_LINE_BYTES = 1 << 20  # HumanEval's longest line is 3.4 kB
MAX_LINES = 10_000  # blank ones included: a file of newlines must end too
MAX_INPUT_BYTES = 64 << 20  # uncompressed; HumanEval is 214 kB
MAX_NUMBER = 9_999  # task_id HumanEval/<n>: at most four digits, so names stay humaneval_NNNN
TASK_ID = re.compile(r"HumanEval/(0|[1-9][0-9]{0,3})")
FIELDS = ("task_id", "prompt", "entry_point", "test")
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Problem:
    """One checked problem: its number, its fields, and what the prompt's parse gave."""

    number: int
    task_id: str
    prompt: str
    entry_point: str
    test: str
    where: str  # "FILE line N", for later refusals about this problem

    @property
    def name(self) -> str:
        """The task directory's name, from the number alone (so no id can reach a path)."""
        return f"humaneval_{self.number:03d}"


def _lines(fp: IO[bytes], where: Path) -> Iterator[tuple[int, bytes]]:
    total = 0
    for n in range(1, MAX_LINES + 2):
        line = fp.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if n > MAX_LINES:
            raise PromptError(
                f"{where} has more than {MAX_LINES} lines; give a HumanEval-format file of at "
                "most that many problems."
            )
        if len(line) > MAX_LINE_BYTES:
            raise PromptError(
                f"{where} line {n} is longer than {MAX_LINE_BYTES} bytes; one problem a line, "
                "each under that size."
            )
        total += len(line)
        if total > MAX_INPUT_BYTES:
            raise PromptError(
                f"{where} holds more than {MAX_INPUT_BYTES >> 20} MiB (uncompressed); give a "
                "HumanEval-format file under that size."
            )
        yield n, line


def _open(path: Path) -> IO[bytes]:
    if not path.exists():
        raise PromptError(f"problem file {path} does not exist; give a HumanEval .jsonl(.gz) file.")
    if not path.is_file():  # a directory, a FIFO (which would block), a device
        raise PromptError(
            f"problem file {path} is not a regular file; give a HumanEval .jsonl(.gz) file."
        )
    fp = path.open("rb")
    if fp.read(2) == GZIP_MAGIC:
        fp.seek(0)
        return gzip.GzipFile(fileobj=fp, mode="rb")  # type: ignore[return-value]
    fp.seek(0)
    return fp


def _code(text: str, where: str, name: str) -> ast.Module:
    """`text` parsed as Python (never run), or a one-line PromptError."""
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        raise PromptError(
            f"{where}: field {name} is not Python (line {exc.lineno or 0}: {exc.msg}); fix the "
            "problem or drop it."
        ) from None
    except (ValueError, RecursionError, MemoryError) as exc:  # a NUL byte; nesting too deep
        raise PromptError(
            f"{where}: field {name} cannot be parsed as Python ({type(exc).__name__}); fix the "
            "problem or drop it."
        ) from None


def entry_function(tree: ast.Module, name: str, where: str) -> ast.FunctionDef:
    """The prompt's top-level `def name`, or a one-line PromptError."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise PromptError(
        f"{where}: field prompt defines no top-level function {name!r} (the entry_point); fix "
        "the problem or drop it."
    )


def statement_of(fn: ast.FunctionDef) -> str:
    """The function's docstring, or the first string in its body (HumanEval/115 puts an import
    first); "" without any."""
    doc = ast.get_docstring(fn)
    if doc:
        return doc
    for node in fn.body:
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return inspect.cleandoc(node.value.value)
    return ""


def _problem(raw: Any, where: str) -> Problem:
    if not isinstance(raw, dict):
        raise PromptError(f"{where} is not a JSON object; one problem object a line.")
    for name in FIELDS:
        value = raw.get(name)
        if not isinstance(value, str):
            what = "is missing" if value is None else f"is a {type(value).__name__}"
            raise PromptError(f"{where}: field {name} {what}; it must be a string.")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise PromptError(
                f"{where}: field {name} holds a lone surrogate (\\ud800-\\udfff); fix the text."
            ) from None
    task_id, entry = raw["task_id"], raw["entry_point"]
    m = TASK_ID.fullmatch(task_id)
    if m is None:
        raise PromptError(
            f"{where}: field task_id {task_id[:80]!r} is not of the form HumanEval/<n> "
            f"(0-{MAX_NUMBER}, no leading zero); fix it."
        )
    if not entry.isidentifier() or keyword.iskeyword(entry):
        raise PromptError(
            f"{where}: field entry_point {entry[:80]!r} is not a Python identifier; name the "
            "prompt's function."
        )
    where = f"{where} ({task_id})"
    fn = entry_function(_code(raw["prompt"], where, "prompt"), entry, where)
    if not statement_of(fn):
        raise PromptError(
            f"{where}: field prompt's {entry} has no docstring, which is the task's statement; "
            "add one."
        )
    test = _code(raw["test"], where, "test")
    if not any(isinstance(n, ast.FunctionDef) and n.name == "check" for n in test.body):
        raise PromptError(
            f"{where}: field test defines no top-level check(candidate), which the checker "
            "calls; fix the problem or drop it."
        )
    return Problem(int(m.group(1)), task_id, raw["prompt"], entry, raw["test"], where)


def read_problems(path: Path) -> tuple[Problem, ...]:
    """Every problem of `path`, checked, in the file's order; a one-line PromptError at the first
    damage (nothing is written before this returns)."""
    problems: dict[int, Problem] = {}
    n = 0
    try:
        with _open(path) as fp:
            for n, line in _lines(fp, path):
                if not line.strip():
                    continue
                where = f"{path} line {n}"
                try:
                    raw = json.loads(line.decode("utf-8"))
                except UnicodeDecodeError as exc:
                    raise PromptError(
                        f"{where} is not UTF-8 (byte {exc.start}); save the file as UTF-8."
                    ) from None
                except (json.JSONDecodeError, RecursionError) as exc:
                    why = (
                        f"{exc.msg.removesuffix(' at')} at column {exc.colno}"
                        if isinstance(exc, json.JSONDecodeError)
                        else "nested too deep"
                    )
                    raise PromptError(
                        f"{where} is not valid JSON ({why}; a truncated line?); repair or "
                        "remove the line."
                    ) from None
                p = _problem(raw, where)
                if p.number in problems:
                    raise PromptError(
                        f"{where}: field task_id {p.task_id} repeats "
                        f"{problems[p.number].where}; keep one."
                    )
                problems[p.number] = p
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise PromptError(
            f"{path} is a damaged gzip file (after line {n}: {exc}); download it again."
        ) from None
    except OSError as exc:
        raise PromptError(
            f"problem file {path} cannot be read ({exc.strerror or exc}); fix its permissions "
            "or give another file."
        ) from None
    if not problems:
        raise PromptError(f"{path} holds no problem; give a HumanEval-format .jsonl(.gz) file.")
    return tuple(problems.values())


IDS_PART = re.compile(r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?")
HUGE = 10**9  # any longer number: out of range however the file is, said as written


def parse_ids(text: str, numbers: Sequence[int], source: str = "HumanEval") -> list[int]:
    """'0-9,12' -> [0, ..., 9, 12]: problem numbers the file holds; a one-line UserError for
    anything else. Ranges are checked against the file before any list is built."""
    have = set(numbers)
    if not have:
        raise UserError(f"{source} holds no problem for --ids to pick; give another file.")
    span = f"{min(have)}-{max(have)}"
    out: dict[int, None] = {}
    for part in text.split(","):
        m = IDS_PART.fullmatch(part)
        if m is None:
            raise UserError(
                f"--ids {text[:80]!r} is not a list of problem numbers; write it like 0-9,12."
            )
        lo_s, hi_s = m.group(1), m.group(2) or m.group(1)
        lo, hi = (int(s) if len(s) < 10 else HUGE for s in (lo_s, hi_s))
        if hi < lo:
            raise UserError(
                f"--ids {part.strip()!r} is a reversed range; write it low-high, like "
                f"{hi_s}-{lo_s}."
            )
        if lo < min(have) or hi > max(have):
            shown = hi_s if hi > max(have) else lo_s
            raise UserError(f"--ids names problem {shown[:20]}, but {source} has {span}.")
        for i in range(lo, hi + 1):  # bounded: within the file's numbers
            if i not in have:
                raise UserError(f"--ids names problem {i}, which {source} does not hold.")
            out[i] = None
    return list(out)
