"""Authoring runs against remote subjects: STUB OpenAI-compatible servers started in the test
(real HTTP servers on loopback, tests/stub_openai_server.py) that need a bearer key, fail on
demand, and play a scripted model. Through pytest, end to end."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from pytest_mtpsweep.base import schema
from pytest_mtpsweep.kinds.authoring import records
from tests.kinds.authoring.project import KEY, KEY_ENV, function_of, make_project, run, scripted
from tests.sandbox import only_run, spawn_pytest
from tests.stub_openai_server import Messages, Script, serve


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def every_file(root: Path) -> Iterator[Path]:
    return (p for p in root.rglob("*") if p.is_file())


class TestTwoRemoteSubjects:
    def test_cells_turns_scores_report_and_no_key_anywhere(
        self, pytester: pytest.Pytester, key: str
    ) -> None:
        alpha, beta = Script(reply=scripted, key=key), Script(reply=scripted, key=key)
        with serve(alpha) as a, serve(beta) as b:
            make_project(pytester, {"alpha": a, "beta": b})
            result = run(pytester)
        result.assert_outcomes(passed=16)
        rd = only_run(pytester.path)
        assert (rd / schema.RUN_STATUS_FILE).read_text().splitlines()[0] == records.RUN_OK
        cells = [r for f in sorted((rd / records.CELLS_DIR).glob("*.jsonl")) for r in lines(f)]
        assert len(cells) == 16 and {c["subject"] for c in cells} == {"alpha", "beta"}
        for c in cells:
            assert set(records.CELL_IDENTITY_FIELDS) | set(records.CELL_FIELDS) <= c.keys()
            assert c["model_id"] == "stub-model" and c["valid"] is True
            want = records.GREEN_AFTER_K if c["cohort"] == "plain" else records.FIRST_ATTEMPT_GREEN
            assert c["outcome"] == want and c["green_turn"] == (2 if c["cohort"] == "plain" else 1)
            assert (rd / str(c["conversation"])).is_file()
        turns = [r for f in sorted((rd / records.TURNS_DIR).glob("*.jsonl")) for r in lines(f)]
        assert len(turns) == 2 * (4 * 2 + 4 * 1)
        first = next(t for t in turns if t["cohort"] == "plain" and t["turn"] == 1)
        assert (first["verdict"] == "fail" and first["error_first_line"] == "assert -1 == 5") or (
            first["error_first_line"] == "assert 4 == -4"
        )
        assert first["artefact_sha256"] and first["prompt_tokens"] and first["feedback_chars"]
        convo = json.loads((rd / str(cells[0]["conversation"])).read_text())
        assert [m["role"] for m in convo["messages"]][:2] == ["user", "assistant"]
        with (rd / records.SCORES_CSV).open() as f:
            scores = list(csv.DictReader(f))
        assert len(scores) == 16 and list(scores[0]) == list(records.SCORES_COLUMNS)
        report = (rd / schema.ANALYSIS_DIR / schema.REPORT_MD).read_text()
        assert "alpha: doctest vs plain, first-attempt green (pp): +100.0 pp" in report
        assert "beta: doctest vs plain" in report
        assert "All 2 subjects point the same way on every endpoint." in report
        result.stdout.fnmatch_lines(["*alpha*plain*4*0*4*0*", "RUN_STATUS: ok"])
        # the key: sent on every request, written nowhere, printed nowhere
        assert alpha.unauthorised == beta.unauthorised == 0 and len(alpha.requests) == 13
        assert KEY not in result.stdout.str() + result.stderr.str()
        for path in every_file(rd):
            assert KEY.encode() not in path.read_bytes(), path
        plan = json.loads((rd / schema.PLAN_FILE).read_text())
        assert {s["api_key_env"] for s in plan["subjects"]} == {KEY_ENV}

    def test_without_the_key_the_session_fails_and_says_which_variable(
        self, pytester: pytest.Pytester, stub: tuple[Script, str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        script, url = stub
        monkeypatch.delenv(KEY_ENV)
        make_project(pytester, {"alpha": url})
        result = run(pytester)
        result.stdout.fnmatch_lines([f"*{KEY_ENV}*is not set*"])
        assert not script.requests


class TestApiFaults:
    def test_429_then_success_is_retried_and_counted(
        self, pytester: pytest.Pytester, stub: tuple[Script, str]
    ) -> None:
        script, url = stub
        script.retry_after = "0"
        script.faults.extend([429, 429])  # the first turn of the first cell (no warm-up)
        make_project(pytester, {"alpha": url}, repeats=1)
        run(pytester, "--no-warmup").assert_outcomes(passed=4)
        rd = only_run(pytester.path)
        turns = lines(rd / records.turns_file("01_alpha_c1"))
        assert turns[0]["api_retried"] == ["429", "429"] and turns[0]["api_tries"] == 3
        cells = lines(rd / records.cells_file("01_alpha_c1"))
        assert cells[0]["api_retries"] == 2 and cells[0]["outcome"] == records.GREEN_AFTER_K

    def test_a_terminal_500_is_api_failure_with_zero_tokens_and_not_rerun(
        self, pytester: pytest.Pytester, stub: tuple[Script, str]
    ) -> None:
        script, url = stub
        script.faults.extend([500] * 3)  # the first turn of the first cell: 1 try + 2 retries
        make_project(pytester, {"alpha": url}, repeats=1)
        result = run(pytester, "--no-warmup")
        result.assert_outcomes(passed=4)  # an api_failure is an outcome: the test passes
        rd = only_run(pytester.path)
        cell = lines(rd / records.cells_file("01_alpha_c1"))[0]
        assert cell["outcome"] == records.API_FAILURE and cell["api_status"] == 500
        assert cell["prompt_tokens"] == 0 and cell["completion_tokens"] == 0
        assert "after 2 retries" in str(cell["api_error"])
        status = (rd / schema.RUN_STATUS_FILE).read_text()
        assert (
            status.startswith("ok\n")
            and f"1 api_failure (an outcome, not informative): {cell['cell']}" in status
        )
        report = (rd / schema.ANALYSIS_DIR / schema.REPORT_MD).read_text()
        assert f"{cell['cell']}: api_failure (HTTP 500" in report

    def test_a_reply_without_choices_is_api_failure(
        self, pytester: pytest.Pytester, stub: tuple[Script, str]
    ) -> None:
        script, url = stub
        script.faults.append("empty")
        make_project(pytester, {"alpha": url}, repeats=1)
        run(pytester, "--no-warmup").assert_outcomes(passed=4)
        cell = lines(only_run(pytester.path) / records.cells_file("01_alpha_c1"))[0]
        assert cell["outcome"] == records.API_FAILURE
        assert cell["api_error"] == "the response holds no choices" and cell["api_status"] == 200


class TestBudget:
    def test_a_small_budget_stops_before_exceeding_it_and_names_the_cells(
        self, pytester: pytest.Pytester, stub: tuple[Script, str]
    ) -> None:
        _, url = stub
        make_project(pytester, {"alpha": url})
        result = run(pytester, "--token-budget", "700")
        rd = only_run(pytester.path)
        turns = lines(rd / records.turns_file("01_alpha_c1"))
        spent = sum(int(t["prompt_tokens"] or 0) + int(t["completion_tokens"] or 0) for t in turns)
        session = json.loads((rd / schema.session_file("01_alpha_c1")).read_text())
        assert spent + session["warmup_tokens"] <= 700
        cells = lines(rd / records.cells_file("01_alpha_c1"))
        stopped = [c["cell"] for c in cells if c["outcome"] == records.BUDGET_STOPPED]
        assert stopped and len(cells) == 8
        status = (rd / schema.RUN_STATUS_FILE).read_text().splitlines()
        assert status[0] == records.RUN_PARTIAL
        assert any(line.startswith(f"{len(stopped)} budget_stopped") for line in status)
        assert all(c in "\n".join(status) for c in stopped)
        outcomes = result.parseoutcomes()
        assert outcomes.get("skipped") == len(stopped)
        result.stdout.fnmatch_lines(["RUN_STATUS: partial", f"*{len(stopped)} budget_stopped*"])
        assert not (rd / schema.STOPPED_FILE).exists()  # a budget is not a protocol fault

    def test_resume_with_a_larger_budget_runs_only_the_cells_without_a_final_outcome(
        self, pytester: pytest.Pytester, stub: tuple[Script, str]
    ) -> None:
        script, url = stub
        make_project(pytester, {"alpha": url})
        run(pytester, "--token-budget", "700")
        rd = only_run(pytester.path)
        before = {c["cell"]: c for c in lines(rd / records.cells_file("01_alpha_c1"))}
        final = {k for k, c in before.items() if c["outcome"] in records.FINAL_OUTCOMES}
        asked = len(script.requests)
        result = run(pytester, "--resume", str(rd), "--token-budget", "100000")
        result.assert_outcomes(passed=8 - len(final), skipped=len(final))
        after = lines(rd / records.cells_file("01_alpha_c1"))
        rerun = [c for c in after if c["attempt"] == 1]
        assert {c["cell"] for c in rerun} == set(before) - final
        assert all(c["outcome"] in records.FINAL_OUTCOMES for c in rerun)
        assert (rd / schema.RUN_STATUS_FILE).read_text().startswith("ok\n")
        # only the re-run cells were asked again (and one warm-up)
        firsts = [
            m for m in script.requests[asked:] if len(m) == 1 and "hello" not in m[0]["content"]
        ]
        assert len(firsts) == len(set(before) - final)
        assert (rd / schema.QUARANTINE_DIR / "01_alpha_c1" / schema.QUARANTINE_REASON).is_file()


def test_k_selects_by_subject_cohort_and_task(pytester: pytest.Pytester, key: str) -> None:
    make_project(pytester, {"alpha": "http://127.0.0.1:9", "beta": "http://127.0.0.1:9"})

    def ids(expr: str) -> list[str]:
        out = run(pytester, "--collect-only", "-q", "-k", expr).outlines
        return [x.split("[", 1)[1].rstrip("]") for x in out if "::test_authoring[" in x]

    assert len(ids("alpha")) == 8 and all(i.startswith("alpha-") for i in ids("alpha"))
    assert sorted(ids("beta and doctest and t_neg")) == [
        "beta-doctest-t_neg-r1",
        "beta-doctest-t_neg-r2",
    ]
    assert len(ids("plain")) == 8 and len(ids("r2")) == 8
    every = ids("alpha or beta")
    assert every[:4] == ["alpha-plain-t_add-r1", "alpha-doctest-t_add-r1", "alpha-doctest-t_neg-r1",
                         "alpha-plain-t_neg-r1"]  # fmt: skip
    assert function_of([{"role": "user", "content": "add(a, b)"}]) == "add"


def test_resume_after_a_kill_reruns_only_the_cells_without_an_outcome(
    pytester: pytest.Pytester, stub: tuple[Script, str]
) -> None:
    script, url = stub
    gate = threading.Event()

    def reply(messages: Messages) -> str:
        if "neg(" in messages[0]["content"] and not gate.is_set():
            gate.wait(120)  # the third cell hangs until pytest has been killed
        return scripted(messages)

    script.reply = reply
    make_project(pytester, {"alpha": url})
    proc = spawn_pytest(pytester.path, "experiments/", "--ladder=tiny")
    try:
        deadline = time.monotonic() + 180
        cells_path: Path | None = None
        while time.monotonic() < deadline:
            found = list(pytester.path.glob(f"runs/tiny/*/{records.cells_file('01_alpha_c1')}"))
            if found and len(found[0].read_text().splitlines()) >= 2:
                cells_path = found[0]
                break
            assert proc.poll() is None, (pytester.path / "run.log").read_text()
            time.sleep(0.05)
        assert cells_path is not None, "two cells were not recorded in time"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        gate.set()
    rd = only_run(pytester.path)
    before = lines(cells_path)
    assert [c["cell"] for c in before] == ["alpha-plain-t_add-r1", "alpha-doctest-t_add-r1"]
    result = run(pytester, "--resume", str(rd))
    result.assert_outcomes(passed=6, skipped=2)
    after = lines(cells_path)
    assert after[:2] == before  # appended to, never rewritten
    assert {c["cell"] for c in after if c["attempt"] == 1} == {
        f"alpha-{c}-{t}-r{r}"
        for c in ("plain", "doctest")
        for t in ("t_add", "t_neg")
        for r in (1, 2)
    } - {c["cell"] for c in before}
    assert (rd / schema.RUN_STATUS_FILE).read_text().startswith("ok\n")
    # the killed cell's first turn is on disk (attempt 0) and its cell ran again in attempt 1
    turns = lines(rd / records.turns_file("01_alpha_c1"))
    assert {(t["cell"], t["attempt"]) for t in turns} >= {("alpha-doctest-t_neg-r1", 1)}


def test_hostile_artefacts_end_as_outcomes_and_the_run_completes(
    pytester: pytest.Pytester, stub: tuple[Script, str]
) -> None:
    script, url = stub
    marker = f"hostile-{uuid.uuid4().hex}"
    hostile = {
        "plain": "import os\nwhile True:\n    try:\n        if os.fork() == 0:\n"
        f"            os.execv('/bin/sleep', ['/bin/sleep', '300', {marker!r}])\n"
        "    except OSError:\n        pass\n",
        "doctest": "import sys\nsys.stdout.write('y' * (100 << 20))\nwhile True:\n    pass\n",
    }

    def reply(messages: Messages) -> str:
        if "add(" not in messages[0]["content"]:
            return scripted(messages)
        cohort = "doctest" if "docstring" in messages[0]["content"] else "plain"
        return f"```python\n{hostile[cohort]}```"

    script.reply = reply
    make_project(pytester, {"alpha": url}, repeats=1)
    run(pytester, "--no-warmup").assert_outcomes(passed=4)
    rd = only_run(pytester.path)
    cells = {c["cell"]: c for c in lines(rd / records.cells_file("01_alpha_c1"))}
    for cohort in ("plain", "doctest"):
        assert cells[f"alpha-{cohort}-t_add-r1"]["outcome"] == records.EXHAUSTED
    turns = [t for t in lines(rd / records.turns_file("01_alpha_c1")) if t["task"] == "t_add"]
    assert len(turns) == 4 and all(t["verdict"] == records.VERDICT_FAIL for t in turns)
    assert all(t["check_reason"] for t in turns), [t["check_reason"] for t in turns]
    # the model was told why, in a message no longer than the ladder allows
    convo = json.loads((rd / str(cells["alpha-plain-t_add-r1"]["conversation"])).read_text())
    # put to the model in the cohort's own words (experiments/.../feedback.txt)
    assert convo["messages"][2]["content"].startswith("Your code failed the tests:")
    assert "the check was stopped: " in convo["messages"][2]["content"]
    assert (rd / schema.RUN_STATUS_FILE).read_text().startswith("ok\n")
    time.sleep(0.2)
    assert not [
        p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])
    ]


# Artefacts that try to be judged green on t_add without solving it (turn 1 and turn 2 each).
FORGERS = [
    "import _pytest.runner\n_pytest.runner.pytest_runtest_call = lambda item: None\n"
    "def add(a, b):\n    return 0\n",
    "class A(int):\n    __eq__ = lambda s, o: True\n    __hash__ = int.__hash__\n"
    "def add(a, b):\n    return A(0)\n",
    "import glob\nSRC = ''.join(open(p).read() for p in glob.glob('/**/checker.py', "
    "recursive=True))\ndef add(a, b):\n    return 5 if (a, b) == (2, 3) and '5' in SRC else 0\n",
    "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'1 passed in 0.01s\\n')\n"
    "    except OSError:\n        pass\nos._exit(0)\n",
    "def add(a, b):\n    import pytest\n    pytest.exit('1 passed', returncode=0)\n",
    "def add(a, b):\n    raise SystemExit(0)\n",
]


def test_forging_artefacts_are_never_green_through_the_real_pipeline(
    pytester: pytest.Pytester, stub: tuple[Script, str]
) -> None:
    script, url = stub
    served = iter(FORGERS * 4)

    def reply(messages: Messages) -> str:
        if "add(" not in messages[0]["content"]:
            return scripted(messages)
        return f"```python\n{next(served)}```"

    script.reply = reply
    make_project(pytester, {"alpha": url}, repeats=3)
    run(pytester, "--no-warmup").assert_outcomes(passed=12)
    rd = only_run(pytester.path)
    cells = [c for c in lines(rd / records.cells_file("01_alpha_c1")) if c["task"] == "t_add"]
    assert len(cells) == 6 and {c["outcome"] for c in cells} == {records.EXHAUSTED}
    turns = [t for t in lines(rd / records.turns_file("01_alpha_c1")) if t["task"] == "t_add"]
    assert len(turns) == 12 and {t["verdict"] for t in turns} == {records.VERDICT_FAIL}
    assert all(t["tests_passed"] == 0 and t["verdict_forgeable"] is False for t in turns)
    # the other task's correct artefacts are green by the grader's report
    neg = [t for t in lines(rd / records.turns_file("01_alpha_c1")) if t["verdict"] == "pass"]
    assert neg and all(t["tests_collected"] == t["tests_passed"] == 1 for t in neg)


def test_the_reply_cache_answers_a_rerun_without_asking_the_subject(
    pytester: pytest.Pytester, stub: tuple[Script, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script, url = stub
    monkeypatch.setenv("MTPSWEEP_CACHE", str(pytester.path / "cache"))
    make_project(pytester, {"alpha": url}, repeats=1)
    ladder = pytester.path / "experiments" / "ladders" / "tiny.toml"
    ladder.write_text(ladder.read_text().replace("[api]\n", "[api]\ncache = true\n"))
    run(pytester, "--no-warmup").assert_outcomes(passed=4)
    asked = len(script.requests)
    assert asked >= 4
    run(pytester, "--no-warmup").assert_outcomes(passed=4)  # a second run, its own directory
    assert len(script.requests) == asked  # nothing was asked again
    first, second = sorted((pytester.path / "runs" / "tiny").iterdir())
    before = lines(first / records.turns_file("01_alpha_c1"))
    after = lines(second / records.turns_file("01_alpha_c1"))
    assert not any(t["reply_cached"] for t in before) and all(t["reply_cached"] for t in after)
    assert [t["verdict"] for t in after] == [t["verdict"] for t in before]
    cached = list((pytester.path / "cache" / "replies").rglob("*.json"))
    assert cached and not any(KEY in p.read_text() for p in cached)


class TestUntrustedUsage:
    """A STUB server that lies about usage, through the whole pipeline."""

    def test_no_usage_is_flagged_unknown_never_zero_and_the_budget_charges_the_bound(
        self, pytester: pytest.Pytester, stub: tuple[Script, str]
    ) -> None:
        from tests.stub_openai_server import OMIT

        script, url = stub
        script.usage_of = lambda m, c: OMIT
        make_project(pytester, {"alpha": url}, repeats=1)
        run(pytester, "--token-budget", "100000").assert_outcomes(passed=4)
        rd = only_run(pytester.path)
        turns = lines(rd / records.turns_file("01_alpha_c1"))
        assert turns and all(t["tokens_unknown"] is True for t in turns)
        assert all(t["prompt_tokens"] is None and t["budget_tokens"] > 64 for t in turns)
        cells = lines(rd / records.cells_file("01_alpha_c1"))
        assert all(c["prompt_tokens"] is None and c["completion_tokens"] is None for c in cells)
        assert all(c["tokens_unknown_turns"] == c["turns_used"] for c in cells)
        session = json.loads((rd / schema.session_file("01_alpha_c1")).read_text())
        assert session["tokens_unknown_cells"] == len(cells) and session["warmup_tokens"] is None
        report = (rd / schema.ANALYSIS_DIR / schema.REPORT_MD).read_text()
        assert f"TOKENS UNKNOWN in {len(cells)} cell(s)" in report
        census = (rd / schema.ANALYSIS_DIR / records.CENSUS_CSV).read_text()
        assert census.splitlines()[0].endswith(",tokens_known") and ",True" not in census

    @pytest.mark.parametrize(
        "usage",
        [
            {"prompt_tokens": -100000, "completion_tokens": -100000},
            {"prompt_tokens": True, "completion_tokens": True},
            {"prompt_tokens": 10, "completion_tokens": 10**9},
        ],
    )
    def test_impossible_usage_is_api_failure_and_totals_never_shrink(
        self, pytester: pytest.Pytester, stub: tuple[Script, str], usage: dict[str, Any]
    ) -> None:
        script, url = stub
        script.usage_of = lambda m, c: usage
        make_project(pytester, {"alpha": url}, repeats=1)
        run(pytester, "--no-warmup", "--token-budget", "100000").assert_outcomes(passed=4)
        rd = only_run(pytester.path)
        cells = lines(rd / records.cells_file("01_alpha_c1"))
        assert {c["outcome"] for c in cells} == {records.API_FAILURE}
        assert all(str(c["api_error"]).startswith("malformed response: usage") for c in cells)
        turns = lines(rd / records.turns_file("01_alpha_c1"))
        assert all(t["budget_tokens"] > 0 for t in turns)  # charged its bound, never negative
        session = json.loads((rd / schema.session_file("01_alpha_c1")).read_text())
        assert session["tokens"] >= 0


class TestCellsInFlight:
    """`concurrency`: cells of a remote subject in flight together, against a STUB server that
    answers HTTP 429 beyond two requests at once."""

    @staticmethod
    def project(pytester: pytest.Pytester, url: str, concurrency: int) -> None:
        make_project(pytester, {"alpha": url}, f"concurrency = {concurrency}", repeats=2)
        ladder = pytester.path / "experiments" / "ladders" / "tiny.toml"
        ladder.write_text(ladder.read_text().replace("retries = 2", "retries = 8"))

    @staticmethod
    def outcomes(rd: Path) -> dict[str, tuple[Any, Any]]:
        cells = lines(rd / records.cells_file("01_alpha_c1"))
        return {c["cell"]: (c["outcome"], c["green_turn"]) for c in cells}

    def test_429s_lower_the_requests_in_flight_and_the_outcomes_are_those_of_one_at_a_time(
        self, pytester: pytest.Pytester, stub: tuple[Script, str]
    ) -> None:
        script, url = stub
        script.delay_s, script.max_in_flight = 0.05, 2
        self.project(pytester, url, 1)
        run(pytester, "--no-warmup").assert_outcomes(passed=8)
        one = self.outcomes(only_run(pytester.path))
        assert script.peak_in_flight == 1 and script.refused_429 == 0
        for d in (pytester.path / "runs").iterdir():
            shutil.rmtree(d)
        shutil.rmtree(pytester.path / "experiments")
        self.project(pytester, url, 4)
        result = run(pytester, "--no-warmup")
        result.assert_outcomes(passed=8)
        many = only_run(pytester.path)
        assert self.outcomes(many) == one
        assert script.peak_in_flight == 2 and script.refused_429 > 0  # really concurrent
        cells = lines(many / records.cells_file("01_alpha_c1"))
        assert [c["position"] for c in cells] == sorted(c["position"] for c in cells)
        session = json.loads((many / schema.session_file("01_alpha_c1")).read_text())
        assert session["concurrency"] == 4 and session["throttled_requests"] > 0
        assert session["concurrency_lowest"] <= 2
        report = (many / schema.ANALYSIS_DIR / schema.REPORT_MD).read_text()
        assert "**Concurrency lowered:** alpha ran 4 cells in flight; HTTP 429s lowered" in report
        prereg = (many / "preregistration.md").read_text()
        assert "Cells in flight together: alpha 4" in prereg

    def test_the_budget_holds_exactly_with_cells_in_flight(
        self, pytester: pytest.Pytester, stub: tuple[Script, str]
    ) -> None:
        script, url = stub
        script.delay_s = 0.05
        self.project(pytester, url, 4)
        run(pytester, "--token-budget", "700")
        rd = only_run(pytester.path)
        turns = lines(rd / records.turns_file("01_alpha_c1"))
        spent = sum(t["budget_tokens"] for t in turns)
        session = json.loads((rd / schema.session_file("01_alpha_c1")).read_text())
        assert 0 < spent + session["warmup_tokens"] <= 700
        cells = lines(rd / records.cells_file("01_alpha_c1"))
        assert any(c["outcome"] == records.BUDGET_STOPPED for c in cells) and len(cells) == 8


@pytest.mark.parametrize(
    ("value", "message"),
    [("0", "concurrency is 0"), ("65", "concurrency is 65"), ("{ beta = 2 }", "names no subject"),
     ("{ alpha = true }", "concurrency.alpha is True"), ('"4"', "concurrency")],
)  # fmt: skip
def test_bad_concurrency_is_one_line_before_anything_starts(
    pytester: pytest.Pytester, stub: tuple[Script, str], value: str, message: str
) -> None:
    script, url = stub
    make_project(pytester, {"alpha": url}, f"concurrency = {value}")
    result = run(pytester)
    assert result.ret != 0 and not script.requests
    said = result.stdout.str() + result.stderr.str()
    assert message in said and "Traceback" not in said
