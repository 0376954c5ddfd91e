"""`mtpsweep calibrate` on a stand-in A/A run directory, and a gate citing its file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.analysis.calibration_file import digest
from pytest_mtpsweep.base.errors import OptionError
from pytest_mtpsweep.cli.main import main
from pytest_mtpsweep.kinds.decode.analysis.atend import analyse_at_end
from pytest_mtpsweep.kinds.decode.analysis.optioncheck import validate_request
from tests.gatetexts import request as gates
from tests.strategies import Design, make_plan, make_records, noisy, write_run

AA = Design(
    treatments=("none", "aa"),
    prompts={"prose": tuple(f"prose_{i:02d}" for i in range(1, 9)),
             "structured": tuple(f"structured_{i:02d}" for i in range(1, 9))},
    cycles=4,
)  # fmt: skip


@pytest.fixture(autouse=True)
def _no_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)


def aa_run(root: Path, aa_args: list[str] | None = None) -> Path:
    plan = make_plan(AA)
    plan["treatments"] = [{"key": "none", "args": ["-t", "2"]},
                          {"key": "aa", "args": aa_args or ["-t", "2"]}]  # fmt: skip
    rate = noisy(AA, {"aa": 1.0}, sd=0.01, seed=11)
    return write_run(root, AA, make_records(AA, rate), plan=plan)


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    run = aa_run(tmp_path_factory.mktemp("aa"))
    assert main(["calibrate", str(run), "--margin", "3", "--reps", "200"]) == 0
    return run, run / "calibration.json"


def test_calibrate_writes_the_file_a_gate_cites(
    calibrated: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, path = calibrated
    doc = json.loads(path.read_text())
    assert doc["format"] == 2 and doc["kind"] == "mtpsweep-calibration"
    assert doc["refusal"] is None and doc["margin_pct"] == 3.0 and doc["cycles"] == 4
    assert doc["cycles_run"] == 4 and doc["sha256"] == digest(doc)
    assert {c["cell"] for c in doc["cells"]} == {"aa:prose", "aa:structured"}
    assert doc["host"]["fingerprint"] and "model_sha256" in doc and doc["build"] is not None
    assert 0 < doc["noise_floor_pct"] < 3.0
    for cell in doc["cells"]:
        assert cell["false_alarm"]["reps"] == 200 and 0 <= cell["false_alarm"]["rate"] <= 0.05


def test_a_margin_below_the_floor_is_refused(
    calibrated: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = calibrated
    out = tmp_path / "c.json"
    assert main(["calibrate", str(run), "--margin", "0.1", "--reps", "200", "--out", str(out)]) == 1
    said = capsys.readouterr().out
    assert "refused: the margin 0.1 % is below what this host can resolve" in said
    assert json.loads(out.read_text())["refusal"]


def test_a_run_whose_arms_differ_is_no_a_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = aa_run(tmp_path, aa_args=["-t", "1"])
    assert main(["calibrate", str(run), "--margin", "3", "--reps", "200"]) == 2
    err = capsys.readouterr().err.strip()
    assert "1 treatments" not in err and "0 treatments with the baseline" in err
    assert "\n" not in err


@pytest.mark.parametrize("flags", [["--margin", "0"], ["--margin", "60"], ["--margin", "3", "--reps", "5"],
                                   ["--margin", "3", "--cycles", "2"]])  # fmt: skip
def test_sizes_are_bounded_before_work(
    flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", str(tmp_path / "nowhere"), *flags]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_gate_cites_a_fresh_calibration_and_refuses_a_stale_one(
    calibrated: tuple[Path, Path], tmp_path: Path
) -> None:
    run, path = calibrated
    request = gates("aa:prose:not-slower:3", boot=1000)
    end = analyse_at_end(run, request, _ladder(run), path)
    (gate,) = end.gates
    assert gate.passed and "non-inferior" in gate.sentence
    assert f"calibrated by {path}" in gate.sentence
    old = json.loads(path.read_text())
    stale = tmp_path / "stale.json"
    resigned(stale, {**old, "created_at": "2020-01-01T00:00:00+00:00"})
    (gate,) = analyse_at_end(run, request, _ladder(run), stale).gates
    assert gate.passed is False and "is stale: it is" in gate.sentence
    assert "days old" in gate.sentence
    other = tmp_path / "other.json"
    resigned(other, {**old, "host": {**old["host"], "fingerprint": "0" * 32}})
    with pytest.raises(OptionError, match="is stale: it was measured on another host"):
        validate_request(_ladder(run), request, other)
    with pytest.raises(OptionError, match=r"below the .* this host resolves"):
        validate_request(_ladder(run), gates("aa:prose:not-slower:0.2"), path)
    validate_request(_ladder(run), request, path)  # fresh: no error


def resigned(path: Path, doc: dict[str, Any]) -> Path:
    """A calibration edited and signed again, as only calibrate itself would write it."""
    path.write_text(json.dumps({**doc, "sha256": digest(doc)}))
    return path


def _ladder(run: Path) -> Any:
    """A stand-in ladder with what the decode analysis asks of one: keys, baseline, contrasts."""
    from types import SimpleNamespace

    return SimpleNamespace(
        treatment_keys=("none", "aa"),
        baseline="none",
        name="aa",
        path=run / "aa.toml",
        prereg=SimpleNamespace(secondary_contrasts=()),
        analysis=SimpleNamespace(primary_endpoint="primary"),
    )


# issue 50: calibrations that speak for nothing, and an --out that destroys a run's document


def test_a_run_whose_arms_measured_apart_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = make_plan(AA)
    plan["treatments"] = [{"key": "none", "args": ["-t", "2"]}, {"key": "aa", "args": ["-t", "2"]}]
    rate = noisy(AA, {"aa": 1.86}, sd=0.01, seed=11)  # the same arguments, 86 % apart
    run = write_run(tmp_path, AA, make_records(AA, rate), plan=plan)
    assert main(["calibrate", str(run), "--margin", "3", "--reps", "200"]) == 2
    err = capsys.readouterr().err.strip()
    assert "is no A/A run: aa differs from none by +86" in err and "\n" not in err
    assert not (run / "calibration.json").exists()


def test_a_run_cut_short_of_the_session_level_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = make_plan(AA)
    plan["treatments"] = [{"key": "none", "args": ["-t", "2"]}, {"key": "aa", "args": ["-t", "2"]}]
    records = [r for r in make_records(AA, noisy(AA, {"aa": 1.0}, sd=0.01, seed=11))
               if r["cycle"] <= 2]  # fmt: skip
    run = write_run(tmp_path, AA, records, plan=plan)
    assert main(["calibrate", str(run), "--margin", "3", "--reps", "200"]) == 2
    err = capsys.readouterr().err
    assert "has 2 complete cycles of A/A pairs, fewer than the 4" in err


@pytest.mark.parametrize(
    "target", ["plan", "records", "folder", "ladder", "missing-folder", "link"]
)
def test_out_never_destroys_a_document_and_is_checked_before_work(
    calibrated: tuple[Path, Path], tmp_path: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = calibrated
    plan_before = (run / "plan.json").read_bytes()
    ladder = tmp_path / "l.toml"
    ladder.write_text('question = "q"\n')
    (tmp_path / "real.json").write_text("{}")
    out = {
        "plan": run / "plan.json",
        "records": run / "records" / "x.jsonl",
        "folder": tmp_path,
        "ladder": ladder,
        "missing-folder": tmp_path / "no" / "c.json",
        "link": tmp_path / "link.json",
    }[target]
    if target == "link":
        out.symlink_to(tmp_path / "real.json")
    assert main(["calibrate", str(run), "--margin", "3", "--reps", "200", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mtpsweep: --out {out} ") and err.count("\n") == 1
    assert (run / "plan.json").read_bytes() == plan_before
    assert ladder.read_text() == 'question = "q"\n'


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda d: d["cells"][0].update(noise_floor_pct=0.01), "its own components give"),
        (lambda d: d["cells"][0].update(noise_floor_pct=None), "noise_floor_pct out of bounds"),
        (lambda d: d.update(cells=[]), "holds no cell"),
        (lambda d: d.update(created_at="2026-12-01T00:00:00"), "has no time zone"),
        (lambda d: d.update(margin_pct=1e308), r"margin_pct 1e\+308 is outside"),
    ],
)
def test_a_calibration_calibrate_never_wrote_is_refused(
    calibrated: tuple[Path, Path], tmp_path: Path, edit: Any, why: str
) -> None:
    run, path = calibrated
    doc = json.loads(path.read_text())
    edit(doc)
    hand = tmp_path / "hand.json"
    hand.write_text(json.dumps(doc))  # edited by hand: the digest no longer matches
    request = gates("aa:prose:not-slower:1")
    with pytest.raises(OptionError, match="was changed after `mtpsweep calibrate` wrote it"):
        validate_request(_ladder(run), request, hand)
    resigned(hand, doc)  # and signed again by hand: the values themselves are refused
    with pytest.raises(OptionError, match=why) as got:
        validate_request(_ladder(run), request, hand)
    assert "\n" not in str(got.value)


@pytest.mark.parametrize("odd", ["fifo", "zero", "deep", "folder"])
def test_a_cited_calibration_that_is_no_file_is_one_sentence(
    calibrated: tuple[Path, Path], tmp_path: Path, odd: str
) -> None:
    run, _ = calibrated
    path = tmp_path / "c.json"
    if odd == "fifo":
        os.mkfifo(path)
    elif odd == "zero":
        path.symlink_to("/dev/zero")
    elif odd == "folder":
        path.mkdir()
    else:
        path.write_text("[" * 100_000)
    request = gates("aa:prose:not-slower:3")
    with pytest.raises(OptionError, match=f"--gate-calibration: calibration {path} ") as got:
        validate_request(_ladder(run), request, path)
    assert "\n" not in str(got.value)


def test_a_calibration_of_another_model_is_refused(
    calibrated: tuple[Path, Path], tmp_path: Path
) -> None:
    run, path = calibrated
    request = gates("aa:prose:not-slower:3")
    ladder = _ladder(run)
    ladder.model_id = "another-model"
    with pytest.raises(OptionError, match="measured on another model"):
        validate_request(ladder, request, path)
