"""`mtpsweep calibrate` on a stand-in A/A run directory, and a gate citing its file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mtpsweep.cli import main
from pytest_mtpsweep.errors import OptionError
from pytest_mtpsweep.kinds.decode.analysis import analyse_at_end, validate_request
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
    monkeypatch.setattr(
        "pytest_mtpsweep.kinds.decode.analysis.io.plotting_available", lambda: False
    )


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
    assert doc["format"] == 1 and doc["kind"] == "mtpsweep-calibration"
    assert doc["refusal"] is None and doc["margin_pct"] == 3.0 and doc["cycles"] == 4
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
    stale.write_text(json.dumps({**old, "created_at": "2020-01-01T00:00:00+00:00"}))
    (gate,) = analyse_at_end(run, request, _ladder(run), stale).gates
    assert gate.passed is False and "is stale: it is" in gate.sentence
    assert "days old" in gate.sentence
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**old, "host": {**old["host"], "fingerprint": "0" * 32}}))
    with pytest.raises(OptionError, match="is stale: it was measured on another host"):
        validate_request(_ladder(run), request, other)
    with pytest.raises(OptionError, match=r"below the .* this host resolves"):
        validate_request(_ladder(run), gates("aa:prose:not-slower:0.2"), path)
    validate_request(_ladder(run), request, path)  # fresh: no error


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
