"""An authoring ladder: its fields, its one-line errors; tasks and cohorts as it names them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import ExpectationError, LadderError, OptionError, PromptError
from pytest_mtpsweep.kinds.authoring.cohorts import load_cohorts
from pytest_mtpsweep.kinds.authoring.ladder import settings
from pytest_mtpsweep.kinds.authoring.run.authoringrun import prepare
from pytest_mtpsweep.kinds.authoring.tasks import load_tasks
from pytest_mtpsweep.ladder import run_plan
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.wishes.request import RunRequest

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "experiments" / "ladders" / "authoring-cpu.toml"
BASE = """
kind = "authoring"
question = "q?"
baseline = "plain"
cohorts = ["plain", "doctest"]
authoring_dir = "{dir}"
{extra}
[[subjects]]
key = "remote"
base_url = "http://127.0.0.1:9/v1"
served_model = "m"
api_key_env = "MY_KEY"
"""


def ladder(tmp_path: Path, extra: str = "", body: str = BASE) -> Path:
    p = tmp_path / "l.toml"
    p.write_text(body.format(dir=REPO / "experiments" / "authoring", extra=extra))
    return p


def request() -> RunRequest:
    return RunRequest(ladder="x", search_dirs=(), cwd=REPO, invocation=())


def test_the_demo_ladder_plans_36_cells_for_one_subject() -> None:
    lad = load_ladder(DEMO)
    s = settings(lad)
    assert lad.kind == "authoring" and lad.cycles == 1 and lad.baseline == "plain"
    assert (s.max_turns, s.repeats, s.cohorts) == (2, 3, ("plain", "doctest"))
    run = prepare(lad, lad.kind_settings, request())
    cases = run.cases(run_plan(lad.treatment_keys, lad.cycles))
    assert len(cases) == 6 * 2 * 3 and len(run.tasks) == 6
    assert "t6_roman" not in run.tasks
    assert cases[0].id == "qwen-plain-t1_clamp-r1" and cases[1].id == "qwen-doctest-t1_clamp-r1"
    assert [c.position for c in cases] == list(range(36))


def test_a_remote_subject_needs_no_model_and_keeps_its_variable_name(tmp_path: Path) -> None:
    lad = load_ladder(ladder(tmp_path))
    t = lad.treatment("remote")
    assert t.attached and t.base_url == "http://127.0.0.1:9" and t.api_key_env == "MY_KEY"
    assert lad.model_of("remote") is None and lad.model_id_of("remote") == "m"
    assert lad.alias("remote") == "m"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("cycles = 2", "cycles is 2; an authoring ladder runs one session per subject"),
        ("max_turns = 0", "max_turns is 0"),
        ("token_budget = -5", "token_budget is -5"),
        ("[contrast]\nresamples = 10", "contrast.resamples is 10"),
        ("[checker]\nbogus = 1", "unknown field checker.'bogus'"),
        ("tasks = ['t1_clamp', 't1_clamp']", "names an entry twice"),
        ("[checker]\nmemory_mib = 1_000_000_000_000", "checker.memory_mib is 1000000000000"),
        ("[checker]\ntmp_mib = 100_000_000_000", "checker.tmp_mib is 100000000000"),
        ("[checker]\nfile_mib = 0", "checker.file_mib is 0"),
        ("[checker]\ntimeout_s = 1e300", "checker.timeout_s is 1e+300"),
        ("[checker]\ntimeout_s = inf", "checker.'timeout_s' is inf; write a finite number"),
        ("[checker]\ntimeout_s = nan", "checker.'timeout_s' is nan"),
        ("[checker]\ncpu_s = 9223372036854775807", "checker.cpu_s is 9223372036854775807"),
        ("[checker]\ncall_timeout_s = 7200", "checker.call_timeout_s is 7200"),
        ("[checker]\nnproc = 100000", "checker.nproc is 100000"),
        ("[checker]\noutput_kib = 0", "checker.output_kib is 0"),
        ("[api]\ntimeout_s = 1e9", "api.timeout_s is 1000000000.0"),
    ],
)
def test_bad_fields_are_one_line_errors(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(LadderError, match=re.escape(message)) as exc:
        load_ladder(ladder(tmp_path, extra))
    assert "\n" not in str(exc.value)


def test_the_baseline_must_be_a_cohort(tmp_path: Path) -> None:
    with pytest.raises(LadderError, match="not one of the cohorts"):
        load_ladder(ladder(tmp_path, body=BASE.replace('baseline = "plain"', 'baseline = "x"')))


@pytest.mark.parametrize(
    ("subject", "message"),
    [
        ('key = "a"\nbase_url = "http://h:1"', "has a base_url but no served_model"),
        ('key = "a"\nbase_url = "http://h:1"\nserved_model = "m"\nmodel = "x.gguf"', "both base_url and model"),
        ('key = "a"', "is local but names no model"),
        ('key = "a"\nbase_url = "http://h:1"\nserved_model = "m"\napi_key_env = "sk-123"', "not an environment variable name"),
    ],
)  # fmt: skip
def test_subject_errors(tmp_path: Path, subject: str, message: str) -> None:
    head = BASE.split("[[subjects]]")[0]
    with pytest.raises(LadderError, match=message):
        load_ladder(ladder(tmp_path, body=head + "[[subjects]]\n" + subject + "\n"))


def test_the_token_budget_option_overrides_the_ladder(tmp_path: Path) -> None:
    lad = load_ladder(ladder(tmp_path, "token_budget = 1000"), {"token_budget": 50})
    assert settings(lad).token_budget == 50


def test_analysis_options_are_checked_against_the_ladder(tmp_path: Path) -> None:
    from pytest_mtpsweep.wishes.request import AnalysisRequest

    lad = load_ladder(ladder(tmp_path, "[contrast]\nresamples = 3000"))
    run = prepare(lad, lad.kind_settings, request())
    run.validate_analysis(AnalysisRequest())
    with pytest.raises(OptionError, match="not a cohort"):
        run.validate_analysis(AnalysisRequest(baseline="none"))
    with pytest.raises(OptionError, match=r"pre-registers contrast\.resamples = 3000"):
        run.validate_analysis(AnalysisRequest(boot=5000))
    from tests.gatetexts import request as gates

    with pytest.raises(ExpectationError, match="is not COHORT:SUBJECT:not-slower:M"):
        gates("a:b:faster", kind_name="authoring")  # refused as it is parsed, before the run
    assert run.bootstrap(AnalysisRequest()) == ("plain", 3000, 42)


def test_tasks_and_cohorts_load_and_fail_in_one_line(tmp_path: Path) -> None:
    tasks = load_tasks(REPO / "experiments" / "authoring" / "tasks")
    assert len(tasks) >= 8 and all(t.digest for t in tasks)
    cohorts = load_cohorts(REPO / "experiments" / "authoring" / "cohorts", ["doctest"], tasks)
    first = cohorts[0].messages(tasks[0])
    assert first[-1]["role"] == "user" and tasks[0].variables["signature"] in first[-1]["content"]
    (tmp_path / "t1").mkdir()
    with pytest.raises(PromptError, match=r"has no statement\.md"):
        load_tasks(tmp_path)
    (tmp_path / "t1" / "statement.md").write_text("Do it.")
    (tmp_path / "t1" / "checker.py").write_text("x = 1\n")
    with pytest.raises(PromptError, match="defines no module-level test function"):
        load_tasks(tmp_path)
    (tmp_path / "t1" / "checker.py").write_text("def test_x():\n    pass\n")
    with pytest.raises(PromptError, match=r"uses \$\{signature\}, which task t1 does not define"):
        load_cohorts(
            REPO / "experiments" / "authoring" / "cohorts", ["doctest"], load_tasks(tmp_path)
        )
    with pytest.raises(PromptError, match="has no task t9"):
        load_tasks(tmp_path, ["t9"])
    # a hostile task.toml: nested thousands deep (tomllib's RecursionError was a traceback), or
    # a FIFO where the statement is (its read waited for a writer for ever)
    (tmp_path / "t1" / "task.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(PromptError, match="nests thousands deep") as info:
        load_tasks(tmp_path)
    assert "task.toml" in str(info.value) and "\n" not in str(info.value)
    (tmp_path / "t1" / "task.toml").unlink()
    (tmp_path / "t1" / "statement.md").unlink()
    os.mkfifo(tmp_path / "t1" / "statement.md")
    with pytest.raises(PromptError, match="is a FIFO, not a regular file"):
        load_tasks(tmp_path)


def test_prompts_dir_is_refused(tmp_path: Path) -> None:
    lad = load_ladder(ladder(tmp_path))
    with pytest.raises(OptionError, match="drop --prompts-dir"):
        prepare(
            lad,
            lad.kind_settings,
            RunRequest(ladder="x", search_dirs=(), cwd=REPO, invocation=(), prompts_dir=tmp_path),
        )


@pytest.mark.parametrize(
    ("checker", "message"),
    [
        ("from solution import f\n\ndef test_f(:\n    assert f()\n", r"checker\.py:3: .*syntax"),
        ("from solution import f\n# def test_f():\n#     assert f() == 1\n",
         "defines no module-level test function"),
        ("def helper():\n    def test_inner():\n        pass\n", "no module-level test function"),
        ("async def test_f():\n    pass\n", "no module-level test function"),
        ("x = 'def test_f(): pass'\n", "no module-level test function"),
        ("def test_f():\n\tif 1:\n        pass\n", r"checker\.py:3"),
    ],
)  # fmt: skip
def test_a_broken_checker_is_refused_at_load_in_one_line(
    tmp_path: Path, checker: str, message: str
) -> None:
    task = tmp_path / "t1"
    task.mkdir()
    (task / "statement.md").write_text("Do it.")
    (task / "checker.py").write_text(checker)
    with pytest.raises(PromptError, match=message) as exc:
        load_tasks(tmp_path)
    assert "\n" not in str(exc.value) and str(task / "checker.py") in str(exc.value)


def test_checkers_of_a_test_class_or_a_plain_function_load(tmp_path: Path) -> None:
    for i, checker in enumerate(
        ["class TestF:\n    def test_a(self):\n        pass\n", "def test_a():\n    pass\n"]
    ):
        task = tmp_path / f"t{i}"
        task.mkdir()
        (task / "statement.md").write_text("Do it.")
        (task / "checker.py").write_text(checker)
    assert [t.id for t in load_tasks(tmp_path)] == ["t0", "t1"]


def test_a_sweep_on_an_authoring_ladder_is_refused_before_its_arms_exist(tmp_path: Path) -> None:
    # round six (issue 50): its arms became extra subjects, and nothing was said
    sweep = '[sweep]\nflag = "--spec-draft-n-max"\nvalues = [2, 4]\nfrom = "low"\n'
    with pytest.raises(LadderError, match=r"authoring kind takes no \[sweep\]") as err:
        load_ladder(ladder(tmp_path, extra=sweep))
    assert "\n" not in str(err.value)
