"""A gate as one typed value: parsed once by the kind's grammar (`gate.parse_gates`), judged
into a verdict whose fields the runner reads; a gate never judged fails, and a gate on a cell
the ladder never measures is refused before any session (STUB server)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from pytest_mtpsweep.base.errors import ExpectationError
from pytest_mtpsweep.wishes.gate import Gate, GateGrammar, GateVerdict, parse_gate, parse_gates
from tests.protocol.test_session import run_stub, stub_project, stubs_running

LEVELS = GateGrammar(syntax="TREATMENT:LEVEL:not-slower:M", example="a:conc4:not-slower:5",
                     cell_word="level")  # fmt: skip


def test_one_grammar_reads_every_kind_s_gates() -> None:
    assert parse_gate("ns:b:conc4:not-slower:5", LEVELS) == Gate(
        "ns:b:conc4:not-slower:5", "ns:b", "conc4", "not-slower", 5.0
    )
    with pytest.raises(ExpectationError, match="is not TREATMENT:LEVEL:not-slower:M"):
        parse_gate("b:conc4:faster", LEVELS)
    with pytest.raises(ExpectationError, match=r"^--expect b:conc4:not-slower:99: .*\(0, 50\]"):
        parse_gates(("b:conc4:not-slower:99",), LEVELS, "load")


def test_a_verdict_says_whether_it_was_judged() -> None:
    g = parse_gate("b:conc4:not-slower:5", LEVELS)
    assert GateVerdict.of(g, True, "met").decided == "pass"
    never = GateVerdict.unjudged(g, "--no-analysis")
    assert (never.decided, never.passed, never.judged) == ("undecided", False, False)
    assert never.sentence == "b:conc4:not-slower:5 not judged: --no-analysis"


def test_a_gate_never_judged_fails_the_run(pytester: pytest.Pytester) -> None:
    # Issue 50 (4): with --no-analysis the gate used to be a skipped case and the run exited 0.
    few = stub_project(pytester, [])
    xml = pytester.path / "junit.xml"
    result = run_stub(pytester, few, "--no-calibration", "--no-analysis", f"--junitxml={xml}",
                      "--expect=b:prose:not-slower:3")  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED mtpsweep::expect[[]b:prose:not-slower:3[]] - Failed: *"])
    (case,) = [c for c in ET.parse(xml).getroot().iter("testcase")
               if c.attrib["name"].startswith("expect[")]  # fmt: skip
    failure = case.find("failure")
    assert failure is not None
    assert failure.attrib["message"] == (
        "Failed: b:prose:not-slower:3 not judged: --no-analysis; drop it, or drop --expect"
    )


@pytest.mark.parametrize(
    ("gate", "said"),
    [("b:structured:not-slower:3", "never measures b:structured"),
     ("b:structured:faster", "never measures b:structured")],
)  # fmt: skip
def test_a_gate_on_a_cell_the_ladder_never_measures_is_refused_first(
    pytester: pytest.Pytester, gate: str, said: str
) -> None:
    # Issue 50 (11): a structured gate on a prose-only ladder ran every session first.
    few = stub_project(pytester, [])
    result = run_stub(pytester, few, f"--expect={gate}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert said in err and "(the cells it measures against its baseline: b:pooled, b:prose)" in err
    assert stubs_running() == [] and not (pytester.path / "runs").exists()


def test_a_load_gate_on_a_level_the_ladder_lacks_is_refused_before_a_session() -> None:
    from pytest_mtpsweep.kinds.load.run.loadrun import prepare
    from pytest_mtpsweep.ladder import ladder_plan
    from pytest_mtpsweep.protocol.ladderrun import check_gate_cells
    from pytest_mtpsweep.protocol.loader import load_ladder
    from pytest_mtpsweep.wishes.request import RunRequest
    from tests.gatetexts import request
    from tests.sandbox import REPO

    path = REPO / "experiments" / "ladders" / "load-cpu.toml"
    lad = load_ladder(path)
    run = prepare(lad, lad.kind_settings,
                  RunRequest(ladder=str(path), search_dirs=(), cwd=REPO, invocation=()))  # fmt: skip
    cells = run.gate_cells(run.cases(ladder_plan(lad)))
    assert cells is not None and "ngram:conc4" in cells
    check_gate_cells(lad, request("ngram:conc4:not-slower:5", kind_name="load").gates, cells)
    with pytest.raises(ExpectationError, match=r"never measures ngram:conc64 .*measures a") as got:
        check_gate_cells(lad, request("ngram:conc64:not-slower:5", kind_name="load").gates,
                         cells)  # fmt: skip
    assert "\n" not in str(got.value)
