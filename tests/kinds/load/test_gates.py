"""`--expect TREATMENT:LEVEL:not-slower:M` on a load run: a latency's rise is what is worse, the
gate is judged at the end and decides its cell for a stop rule (records from `run_fixture`:
ngram 25 % faster at conc1, 10 % at conc4; no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mtpsweep.analysis.noninferiority import INFERIOR, NONINFERIOR
from pytest_mtpsweep.base.errors import ExpectationError
from pytest_mtpsweep.kinds.load.analysis.atend import analyse_at_end, interim
from pytest_mtpsweep.kinds.load.analysis.contrast import Row
from pytest_mtpsweep.kinds.load.analysis.gates import judge_row
from pytest_mtpsweep.wishes.gate import Gate
from tests.gatetexts import request
from tests.kinds.load.run_fixture import write_run


def row(endpoint: str, gain: float, low: float, high: float) -> Row:
    return Row("b", "a", endpoint, "conc1", gain, low, high, 6, 60, 4, 0.01, 5.0, "boot-t")


def test_a_latency_gain_is_judged_as_the_latency_s_own_rise() -> None:
    # A gain of -20 % (baseline/treatment = 0.8) is a latency 25 % higher: inferior at 10 %.
    worse = judge_row(row("e2e", -20.0, -22.0, -18.0), 10.0, final=True, level=0.95)
    assert worse.outcome == INFERIOR and "+25.00 %" in worse.sentence and "rise" in worse.sentence
    # A gain of -2 % is a rise of ~2 %: within a 5 % margin.
    assert judge_row(row("e2e", -2.0, -3.0, -1.0), 5.0, final=True, level=0.95).passed


def test_a_throughput_drop_is_judged_as_a_drop() -> None:
    said = judge_row(row("output_tok_s", -8.0, -9.0, -7.0), 5.0, final=True, level=0.95)
    assert said.outcome == INFERIOR and "drop" in said.sentence


def test_parsing_allows_colons_in_keys_and_bounds_the_margin() -> None:
    text = "draft:mtp:conc4:not-slower:5"
    assert parse(text) == Gate(text, "draft:mtp", "conc4", "not-slower", 5.0)
    with pytest.raises(ExpectationError, match="the one gate a load run has"):
        parse("ngram:conc4:faster")
    with pytest.raises(ExpectationError, match=r"not a percent in \(0, 50\]"):
        parse("ngram:conc4:not-slower:80")


def parse(text: str) -> Gate:
    (one,) = request(text, kind_name="load").gates
    return one


def test_the_gates_at_the_end_of_a_load_run(tmp_path: Path) -> None:
    run = write_run(tmp_path, cycles=2)
    asked = request("ngram:conc1:not-slower:5", kind_name="load", boot=1000)
    faster = analyse_at_end(run, asked)
    (gate,) = faster.gates
    assert gate.passed and "non-inferior" in gate.sentence
    asked = request("none:conc1:not-slower:5", kind_name="load", baseline="ngram", boot=1000)
    slower = analyse_at_end(run, asked)
    (gate,) = slower.gates
    assert gate.passed is False and "inferior" in gate.sentence and gate.decided == "fail"


def test_a_gate_decides_its_cell_for_the_stop_rule(tmp_path: Path) -> None:
    run = write_run(tmp_path, cycles=2)
    looked = interim(run, request("ngram:conc1:not-slower:5", kind_name="load", boot=1000))
    cells = looked if isinstance(looked, tuple) else looked.cells
    got = {c.cell: c.decision for c in cells}
    assert got["ngram:conc1"] == NONINFERIOR
    assert got["ngram:conc4"] in ("faster", "slower", "undecided")


def test_mtpsweep_analyse_judges_the_gates_pytest_judges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 50 (11): `mtpsweep analyse` refused the load gates the session-end analysis judged.
    from pytest_mtpsweep.cli.main import main

    run = str(write_run(tmp_path, cycles=2))
    assert main(["analyse", run, "--boot", "1000", "--expect", "ngram:conc1:not-slower:5"]) == 0
    out = capsys.readouterr().out
    assert "gate met: ngram:conc1:not-slower:5 met: " in out and "non-inferior" in out
    argv = ["analyse", run, "--boot", "1000", "--baseline", "ngram"]
    assert main([*argv, "--expect", "none:conc1:not-slower:5"]) == 1
    assert "gate FAILED:" in capsys.readouterr().err
    assert main([*argv, "--expect", "ngram:conc1:not-slower:5"]) == 2
    assert "is the baseline itself" in capsys.readouterr().err
