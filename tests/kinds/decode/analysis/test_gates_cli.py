"""`--expect` gates and the `analyse` / `compare` subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.base.errors import ExpectationError
from pytest_mtpsweep.cli.analyse import register, run_cli
from pytest_mtpsweep.kinds.decode.analysis.gates import judge
from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions, analyse_run
from pytest_mtpsweep.wishes.gate import Gate
from tests.gatetexts import failures, gate
from tests.strategies import Design, make_plan, make_records, noisy, write_run

DESIGN = Design(
    treatments=("none", "ngram", "gate"),
    prompts={"prose": tuple(f"prose_{i:02d}" for i in range(1, 7)),
             "structured": tuple(f"structured_{i:02d}" for i in range(1, 7))},
)  # fmt: skip


@pytest.fixture(autouse=True)
def _no_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)


def make_run(tmp_path: Path, *, design: Design = DESIGN, **kwargs: Any) -> Path:
    rate = noisy(design, {"ngram": 1.2, "gate": 1.0005}, sd=0.002)
    return write_run(tmp_path, design, make_records(design, rate), **kwargs)


@pytest.fixture
def result(tmp_path: Path) -> Any:
    return analyse_run([make_run(tmp_path)], AnalyseOptions(boot=1000))


class TestParse:
    def test_parses_the_three_parts(self) -> None:
        assert gate("ngram:structured:faster") == Gate(
            "ngram:structured:faster", "ngram", "structured", "faster"
        )

    def test_a_treatment_key_may_contain_colons(self) -> None:
        assert gate("draft:mtp:pooled:equivalent").treatment == "draft:mtp"

    @pytest.mark.parametrize(
        ("text", "fragment"),
        [
            ("ngram-faster", "is not TREATMENT:SUBSET:faster|slower|equivalent"),
            ("ngram::faster", "is not TREATMENT:SUBSET"),
            ("ngram:prose:quicker", "use one of faster, slower, equivalent"),
            ("ngram:code:faster", "unknown subset 'code'"),
        ],
    )
    def test_bad_gates_raise_one_sentence(self, text: str, fragment: str) -> None:
        with pytest.raises(ExpectationError, match=fragment) as info:
            gate(text)
        assert isinstance(info.value, ValueError)
        assert "\n" not in str(info.value)


def evaluate_expectations(result: Any, texts: list[str]) -> list[str]:
    """The sentences of the gates this run does not meet (ExpectationError: not judgeable)."""
    return failures([judge(result, gate(t)) for t in texts])


class TestEvaluate:
    def test_met_gates_return_nothing(self, result: Any) -> None:
        assert (
            evaluate_expectations(
                result, ["ngram:prose:faster", "ngram:pooled:faster", "gate:structured:equivalent"]
            )
            == []
        )

    def test_unmet_gates_say_what_was_found(self, result: Any) -> None:
        failures = evaluate_expectations(result, ["ngram:prose:slower", "gate:pooled:faster"])
        assert len(failures) == 2
        assert failures[0].startswith("ngram:prose:slower not met: decision is faster")
        assert "95% CI" in failures[0] and "\n" not in failures[0]
        assert "decision is equivalent" in failures[1]

    def test_unknown_treatment_and_baseline_raise(self, result: Any) -> None:
        with pytest.raises(ExpectationError, match="unknown treatment"):
            evaluate_expectations(result, ["turbo:prose:faster"])
        with pytest.raises(ExpectationError, match="the baseline 'none' itself"):
            evaluate_expectations(result, ["none:prose:faster"])

    def test_a_deselected_treatment_fails_the_gate(self, tmp_path: Path) -> None:
        plan = make_plan(DESIGN, selected=["none", "ngram"])
        recs = [r for r in make_records(DESIGN, noisy(DESIGN, {})) if r["treatment"] != "gate"]
        run = write_run(tmp_path, DESIGN, recs, plan=plan)
        result = analyse_run([run], AnalyseOptions(boot=1000))
        failures = evaluate_expectations(result, ["gate:prose:equivalent"])
        assert len(failures) == 1 and "no prose contrast for gate" in failures[0]

    def test_gates_are_judged_on_the_published_endpoint(self, tmp_path: Path) -> None:
        # Primary says +5 %, the interval basis says +0 %: the 1 pp tie-break publishes it (a
        # gap past SERVER_CLOCK_AGREE_PP would distrust the server's clock instead: test_run.py).
        design = DESIGN
        base = noisy(design, {}, sd=0.001)
        recs = make_records(
            design,
            lambda t, c, o, p, r: base(t, c, o, p, r) * (1.05 if t == "ngram" else 1.0),
            lambda t, c, o, p, r: base(t, c, o, p, r),
        )
        result = analyse_run([write_run(tmp_path, design, recs)], AnalyseOptions(boot=1000))
        rows = result.contrasts.query("treatment == 'ngram' and subset == 'prose'")
        assert set(rows["decision"]) == {"faster", "equivalent"}
        assert evaluate_expectations(result, ["ngram:prose:equivalent"]) == []
        failures = evaluate_expectations(result, ["ngram:prose:faster"])
        assert len(failures) == 1 and "interval endpoint" in failures[0]


class TestCli:
    def test_analyse_prints_the_headline_and_writes_outputs(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        run = make_run(tmp_path)
        code = run_cli(["analyse", str(run), "--boot", "1000", "--boot-seed", "42"])
        out = capsys.readouterr().out
        assert code == 0
        assert "ngram" in out and "faster" in out and str(run / "analysis") in out
        assert (run / "analysis" / "contrasts.csv").is_file()

    def test_cli_and_direct_call_give_identical_numbers(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        run = make_run(tmp_path)
        assert run_cli(["analyse", str(run), "--boot", "1000", "--out", str(tmp_path / "c")]) == 0
        analyse_run([run], AnalyseOptions(boot=1000, seed=42, out=tmp_path / "d"))
        for name in ("contrasts.csv", "census.csv", "contrasts.json"):
            assert (tmp_path / "c" / name).read_bytes() == (tmp_path / "d" / name).read_bytes()

    def test_expect_gates_set_the_exit_status(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        run = str(make_run(tmp_path))
        assert run_cli(["analyse", run, "--boot", "1000", "--expect", "ngram:prose:faster"]) == 0
        assert "gate met: ngram:prose:faster" in capsys.readouterr().out
        code = run_cli(["analyse", run, "--boot", "1000", "--expect", "ngram:prose:slower"])
        err = capsys.readouterr().err
        assert code == 1 and "gate FAILED: ngram:prose:slower not met" in err

    @pytest.mark.parametrize(
        ("argv", "fragment"),
        [
            (["--expect", "ngram-faster"], "is not TREATMENT:SUBSET"),
            (["--expect", "turbo:prose:faster"], "unknown treatment 'turbo'"),
            (["--baseline", "nope"], "baseline 'nope' is not a treatment"),
            (["--boot", "999"], "is below 1000; pass --boot 1000 or more"),
            (["--boot", "0"], "is below 1000"),
            (["--boot-seed", "-1"], "seed -1 is negative; pass --boot-seed"),
        ],
    )
    def test_errors_exit_2_with_one_sentence(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
    ) -> None:
        code = run_cli(["analyse", str(make_run(tmp_path)), "--boot", "1000", *argv])
        err = capsys.readouterr().err
        assert code == 2
        assert fragment in err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err

    def test_a_missing_run_and_unpooled_runs_exit_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert run_cli(["analyse", str(tmp_path / "nowhere")]) == 2
        assert "does not exist" in capsys.readouterr().err
        a = make_run(tmp_path / "a")
        b = make_run(tmp_path / "b", design=Design(DESIGN.treatments, DESIGN.prompts, run_id="r2"))
        assert run_cli(["analyse", str(a), str(b), "--boot", "1000"]) == 2
        assert "--pool" in capsys.readouterr().err
        assert run_cli(["analyse", str(a), str(b), "--boot", "1000", "--pool"]) == 0
        assert (a / "analysis_pooled" / "report.md").is_file()

    def test_compare_is_a_labelled_side_by_side_of_separate_analyses(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        a = make_run(tmp_path / "a")
        b_design = Design(DESIGN.treatments, DESIGN.prompts, run_id="run-b")
        b_rate = noisy(b_design, {"ngram": 0.8}, sd=0.002, seed=9)
        b = write_run(tmp_path / "b", b_design, make_records(b_design, b_rate))
        code = run_cli(["compare", str(a), str(b), "--boot", "1000"])
        out = capsys.readouterr().out
        assert code == 0
        assert "secondary, descriptive: different runs" in out.lower()
        assert "run-1 (vs none)" in out and "run-b (vs none)" in out
        alone = analyse_run([b], AnalyseOptions(boot=1000, out=tmp_path / "alone"))
        pct = alone.published.query("treatment == 'ngram' and subset == 'prose'")["pct_change"]
        assert f"{pct.iloc[0]:+.2f}%" in out
        assert not (a / "analysis").exists()  # compare writes nothing into the runs
        assert run_cli(["compare", str(a), f"{a}/"]) == 2
        assert "same run twice" in capsys.readouterr().err

    def test_compare_refuses_runs_not_of_the_decode_kind_in_one_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from tests.kinds.load.run_fixture import write_run as load_run

        la, lb, a = load_run(tmp_path / "la"), load_run(tmp_path / "lb"), make_run(tmp_path / "a")
        for pair, named in (([la, lb], la), ([a, lb], lb), ([la, a], la)):
            assert run_cli(["compare", *map(str, pair), "--boot", "1000"]) == 2
            captured = capsys.readouterr()
            assert captured.out == "" and captured.err.count("\n") == 1, captured
            assert f"run {named} is of the load kind" in captured.err
            assert "decode kind" in captured.err and "n=0" not in captured.err

    def test_compare_says_which_lines_of_a_run_it_left_out(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b")
        path = sorted((b / "records").glob("*.jsonl"))[0]
        path.write_text(path.read_text() + "garbage\n")
        assert run_cli(["compare", str(a), str(b), "--boot", "1000"]) == 0
        out = capsys.readouterr().out
        assert f"{b}: 1 record line(s) unreadable and left out (first: records/{path.name}:" in out

    def test_compare_checks_the_resampling_options_before_reading_runs(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code = run_cli(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--boot", "10"])
        err = capsys.readouterr().err
        assert code == 2 and "below 1000" in err and "does not exist" not in err

    def test_register_adds_both_subcommands_with_func(self) -> None:
        parser = argparse.ArgumentParser(prog="mtpsweep")
        register(parser.add_subparsers(dest="command"))
        args = parser.parse_args(["analyse", "RUN", "--pool", "--expect", "a:prose:faster"])
        assert callable(args.func) and args.pool and args.expect == ["a:prose:faster"]
        assert (args.boot, args.boot_seed, args.baseline) == (2000, 42, None)
        args = parser.parse_args(["compare", "A", "B"])
        assert callable(args.func) and (args.run_a, args.run_b) == ("A", "B")


def test_an_unknown_treatment_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 50 (11): the whole analysis was written before the gate was refused.
    run = make_run(tmp_path)
    code = run_cli(["analyse", str(run), "--boot", "1000", "--expect", "turbo:prose:faster"])
    assert code == 2 and "unknown treatment 'turbo'" in capsys.readouterr().err
    assert not (run / "analysis").exists()
