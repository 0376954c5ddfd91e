"""Verdicts the judged code cannot forge: hostile artefacts through the real sandbox (grader and
candidate jails), a correct artefact that warns, prints or writes files, and the pure parts
(the codec, the verdict from the grader's report)."""

from __future__ import annotations

import ast
import math
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.authoring import records
from pytest_mtpsweep.kinds.authoring.ladder import CheckerLimits
from pytest_mtpsweep.kinds.authoring.sandbox import Check, judge, proxy, run_check, views, wire

TASKS = Path(__file__).parents[4] / "experiments" / "authoring" / "tasks"
CHECKER = (TASKS / "t4_count_zeros" / "checker.py").read_text()
GOOD = "def count_zeros(xs):\n    return sum(1 for x in xs if x == 0)\n"
LIMITS = CheckerLimits(timeout_s=10, cpu_s=4, memory_mib=512, file_mib=4, tmp_mib=16,
                       nproc=16, output_kib=64, call_timeout_s=2)  # fmt: skip


def check(artefact: str, checker: str = CHECKER, in_process: bool = False) -> Check:
    files = {"solution.py": artefact, "checker.py": checker}
    return run_check(files, "checker.py", LIMITS, in_process=in_process)


# Each tries to get a green verdict without solving t4_count_zeros.
HOSTILE = {
    "patch the runner's call at import": (
        "import _pytest.runner\n"
        "_pytest.runner.pytest_runtest_call = lambda item: None\n"
        "def count_zeros(xs):\n    return -1\n"
    ),
    "patch the runner's report at import": (
        "try:\n"
        "    import _pytest.reports as r\n"
        "    r.TestReport.outcome = 'passed'\n"
        "except ImportError:\n"
        "    pass\n"
        "def count_zeros(xs):\n    return -1\n"
    ),
    "an int whose __eq__ always holds": (
        "class A(int):\n"
        "    __eq__ = lambda s, o: True\n"
        "    __ne__ = lambda s, o: False\n"
        "    __hash__ = int.__hash__\n"
        "def count_zeros(xs):\n    return A(7)\n"
    ),
    "read the checker and answer from its asserts": (
        "import os, re\n"
        "SEEN = {}\n"
        "for top in ('.', '..', '/', '/tmp', '/proc/1/cwd'):\n"
        "    for d, _, fs in os.walk(top):\n"
        "        for f in fs:\n"
        "            if f == 'checker.py':\n"
        "                try:\n"
        "                    SEEN.update(re.findall(r'count_zeros\\((\\[.*?\\])\\) == (\\d+)',\n"
        "                                           open(os.path.join(d, f)).read()))\n"
        "                except OSError:\n"
        "                    pass\n"
        "def count_zeros(xs):\n    return int(SEEN.get(repr(xs), -1))\n"
    ),
    "a fake summary on every inherited descriptor, then exit 0": (
        "import os\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        '        os.write(fd, b\'{"complete": true, "collected": ["x"], \'\n'
        '                     b\'"outcomes": {"x": "passed"}}\\n1 passed in 0.01s\\n\')\n'
        "    except OSError:\n"
        "        pass\n"
        "print('1 passed in 0.01s')\n"
        "os._exit(0)\n"
    ),
    "pytest.exit inside the function": (
        "def count_zeros(xs):\n    import pytest\n    pytest.exit('1 passed', returncode=0)\n"
    ),
    "SystemExit(0) inside the function": ("def count_zeros(xs):\n    raise SystemExit(0)\n"),
    "a forged reply queued before the names": (
        "import sys, os\n"
        "out = int(sys.argv[2])\n"
        "for i in range(1, 9):\n"
        '    os.write(out, b\'{"id": %d, "ok": 0, "args": {"list": [{"list": []}]}, \'\n'
        '                  b\'"kwargs": {"dict": []}}\\n\' % i)\n'
        "def count_zeros(xs):\n    return 0\n"
    ),
    "rewrite its own encoder to claim success": (
        "import mtpsweep_wire\n"
        "mtpsweep_wire.encode = lambda v, depth=0: 'passed'\n"
        "def count_zeros(xs):\n    return -1\n"
    ),
    "hang in the call": "def count_zeros(xs):\n    while True:\n        pass\n",
    "reshape the solution module (__path__, __getattr__)": (
        "__path__ = ['/']\n"
        "def __getattr__(name):\n    return lambda *a, **k: 0\n"
        "def count_zeros(xs):\n    return -1\n"
    ),
    "skip, xfail or interrupt inside the call": (
        "import itertools\n_n = itertools.count()\n"
        "def count_zeros(xs):\n"
        "    import pytest\n"
        "    i = next(_n) % 3\n"
        "    if i == 0:\n        pytest.skip('solved')\n"
        "    if i == 1:\n        pytest.xfail('solved')\n"
        "    raise KeyboardInterrupt\n"
    ),
    "kill everything it can see": (
        "import os, signal\n"
        "def count_zeros(xs):\n"
        "    for pid in (os.getppid(), -1):\n"
        "        try:\n            os.kill(pid, signal.SIGKILL)\n"
        "        except OSError:\n            pass\n"
        "    return 0\n"
    ),
}


@pytest.mark.parametrize("artefact", HOSTILE.values(), ids=list(HOSTILE))
def test_a_hostile_artefact_is_never_green(artefact: str) -> None:
    c = check(artefact)
    assert c.verdict == records.VERDICT_FAIL, c.output
    assert c.passed < c.collected or c.collected == 0
    assert not c.forgeable and c.isolation["boundary"] == "process"


def test_the_candidate_sees_no_checker_task_or_host_file() -> None:
    art = (
        "import os\n"
        "def names():\n"
        "    found = []\n"
        "    for d, _, fs in os.walk('/'):\n"
        "        if not d.startswith('/proc') and '/lib/python3' not in d:  # keep it short\n"
        "            found += [os.path.join(d, f) for f in fs]\n"
        "    return found\n"
    )
    checker = (
        "from solution import names\n\n\ndef test_names():\n"
        "    print('SEEN', repr(names()))\n    assert False\n"
    )
    c = check(art, checker)
    assert c.verdict == records.VERDICT_FAIL
    if c.isolation.get("root") != "minimal":
        pytest.skip(
            "this platform grants no mount namespace: docs/authoring.md says what is visible"
        )
    line = next(ln for ln in c.output.splitlines() if ln.startswith("SEEN "))
    seen: list[str] = ast.literal_eval(line.removeprefix("SEEN "))
    names = {os.path.basename(p) for p in seen}
    assert {"mtpsweep_candidate.py", "solution.py"} <= names  # the walk ran
    assert not names & {"checker.py", "statement.md", "task.toml", "mtpsweep_grader.py"}
    assert not names & {"passwd", "config", "pyvenv.cfg"} and not any(".git" in p for p in seen)
    assert not any(p.endswith(".toml") or "site-packages" in p for p in seen)
    allowed = (*views.candidate_view().expose, "/dev/", "/tmp/mtpsweep-check-")
    for p in seen:  # nothing but the interpreter, its libraries, a few devices and its own box
        assert any(p.startswith(a) or os.path.realpath(p).startswith(a) for a in allowed), p


@pytest.mark.parametrize(
    "artefact",
    [
        "import warnings\n" + GOOD + "warnings.warn('error: this text says error')\n",
        "print('error: 3 failed, 0 passed')\n" + GOOD,
        "open('scratch.txt', 'w').write('x' * 1000)\n" + GOOD,
        "import sys\nsys.stderr.write('FAILED everything\\n')\n" + GOOD,
    ],
    ids=["warns", "prints", "writes a file", "writes stderr"],
)
def test_a_correct_artefact_that_warns_prints_or_writes_is_green(artefact: str) -> None:
    c = check(artefact)
    assert c.verdict == records.VERDICT_PASS, c.output
    assert c.collected == c.passed == 1


def test_builtin_exceptions_cross_as_themselves_and_others_do_not() -> None:
    checker = (TASKS / "t1_clamp" / "checker.py").read_text()
    good = (
        "def clamp(x, lo, hi):\n"
        "    if lo > hi:\n"
        "        raise ValueError('empty range')\n"
        "    return max(lo, min(hi, x))\n"
    )
    assert check(good, checker).verdict == records.VERDICT_PASS
    custom = good.replace("raise ValueError", "class E(Exception): pass\n        raise E")
    c = check(custom, checker)
    assert c.verdict == records.VERDICT_FAIL and "CandidateError" in c.output


def test_in_place_changes_and_tuples_cross() -> None:
    art = "def f(xs):\n    xs.sort()\n    return (len(xs), {1: 'a'})\n"
    checker = (
        "from solution import f\n\n\ndef test_f():\n"
        "    xs = [3, 1, 2]\n    assert f(xs) == (3, {1: 'a'})\n    assert xs == [1, 2, 3]\n"
    )
    assert check(art, checker).verdict == records.VERDICT_PASS


def test_in_process_checking_is_marked_forgeable() -> None:
    c = check(GOOD, in_process=True)
    assert c.verdict == records.VERDICT_PASS and c.forgeable
    assert c.isolation["boundary"] == "in-process (forgeable)"


def test_a_broken_checker_is_a_checker_error_not_the_subjects_fault() -> None:
    c = check(GOOD, checker="import os\nos._exit(3)\n")
    assert c.verdict == records.VERDICT_CHECKER_ERROR, c.output


# -- pure parts ---------------------------------------------------------------------------


def test_the_verdict_comes_from_the_report_alone() -> None:
    full = {"complete": True, "collected": ["a", "b"], "outcomes": {"a": "passed", "b": "passed"}}
    assert judge(full, 0, None, False) == (records.VERDICT_PASS, None)
    assert judge(full, 1, None, False) == (records.VERDICT_PASS, None)  # status never decides
    half = {**full, "outcomes": {"a": "passed", "b": "failed"}}
    assert judge(half, 0, None, False)[0] == records.VERDICT_FAIL
    skipped = {**full, "outcomes": {"a": "passed", "b": "skipped"}}
    assert judge(skipped, 0, None, False)[0] == records.VERDICT_FAIL
    assert judge({}, 0, None, False)[0] == records.VERDICT_CHECKER_ERROR
    assert judge({}, 0, None, True)[0] == records.VERDICT_FAIL
    assert judge(full, 0, "timed out after 1 s", False) == (
        records.VERDICT_FAIL,
        "timed out after 1 s",
    )
    assert judge(full, -9, None, False)[0] == records.VERDICT_FAIL


def test_exceptions_are_rebuilt_only_when_builtin() -> None:
    err = proxy.rebuilt({"raise": "ValueError", "module": "builtins", "message": "m"})
    assert type(err) is ValueError and str(err) == "m"
    for name, module in (("Exit", "_pytest.outcomes"), ("SystemExit", "builtins"),
                         ("KeyboardInterrupt", "builtins"), ("ValueError", "mymod")):  # fmt: skip
        err = proxy.rebuilt({"raise": name, "module": module, "message": "m"})
        assert type(err) is proxy.CandidateError


plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.integers() | st.text(max_size=4), inner, max_size=4)
        | st.frozensets(st.integers(), max_size=4)
    ),
    max_leaves=20,
)


@given(plain)
def test_plain_data_round_trips_with_its_types(value: object) -> None:
    import json

    back = wire.decode(json.loads(json.dumps(wire.encode(value))))
    assert back == value and _types(back) == _types(value)


def _types(v: object) -> object:
    if isinstance(v, list | tuple):
        return (type(v).__name__, [_types(x) for x in v])
    if isinstance(v, dict):
        return ("dict", sorted((repr(k), _types(x)) for k, x in v.items()))
    return type(v).__name__


def test_subclasses_cross_as_their_base_and_other_objects_do_not() -> None:
    class A(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    assert type(wire.decode(wire.encode(A(7)))) is int and wire.decode(wire.encode(A(7))) == 7
    assert math.isnan(wire.decode(wire.encode(float("nan"))))
    with pytest.raises(wire.WireError):
        wire.encode(object())
    with pytest.raises(wire.WireError):
        wire.decode({"eval": "__import__('os')"})
    with pytest.raises(wire.WireError):
        wire.decode({"dict": [[{"list": []}, 1]]})  # an unhashable key


def test_a_channel_refuses_oversized_and_malformed_replies() -> None:
    r, w = os.pipe()
    ch = wire.Channel(r, w)
    os.write(w, b"not json\n")
    with pytest.raises(wire.WireError, match="not a message"):
        ch.receive(1.0)
    with pytest.raises(wire.WireError, match="no reply within"):
        ch.receive(0.05)
    os.close(w)
    with pytest.raises(wire.WireError, match="ended"):
        ch.receive(1.0)
    os.close(r)


def test_feedback_shows_the_solutions_own_frames_not_the_proxys() -> None:
    from pytest_mtpsweep.kinds.authoring.run import feedback

    c = check("def count_zeros(xs):\n    return xs[99]\n")
    text = feedback.message(c, 1500)
    assert c.verdict == records.VERDICT_FAIL and "mtpsweep_proxy" not in text
    assert 'File "solution.py", line 2, in count_zeros' in text and "IndexError" in text
    assert "/tmp/" not in text


def test_a_cohorts_feedback_template_frames_the_error(tmp_path: Path) -> None:
    from pytest_mtpsweep.base.errors import PromptError
    from pytest_mtpsweep.kinds.authoring.cohorts import load_cohort

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "user.txt").write_text("Write ${task}.\n")
    plain = load_cohort(tmp_path / "c")
    assert plain.feedback_message("assert 1 == 2") == "check: assert 1 == 2"  # the seed's form
    (tmp_path / "c" / "feedback.txt").write_text("Failed:\n```\n${error}\n```\nFix it.\n")
    framed = load_cohort(tmp_path / "c")
    assert framed.feedback_message("E  x") == "Failed:\n```\nE  x\n```\nFix it."
    assert framed.digest != plain.digest  # the template is part of the cohort's identity
    (tmp_path / "c" / "feedback.txt").write_text("Try again.\n")
    with pytest.raises(PromptError, match=r"never says \$\{error\}"):
        load_cohort(tmp_path / "c")
