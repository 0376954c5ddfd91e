"""A/A calibration's pure parts: the noise floor, the simulated false alarms, the file and its
freshness."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.analysis.calibration import CellCalibration, Noise, Rate, wilson
from pytest_mtpsweep.analysis.calibration_file import Calibration, problem
from pytest_mtpsweep.analysis.sequential import Design

HOST = Noise(8, 0.01**2, 2 * 0.01**2, 2 * 0.02**2)
sds = st.floats(min_value=0.001, max_value=0.1)


@given(sds, sds, sds)
def test_the_floor_falls_with_cycles_and_has_the_prompts_as_its_limit(
    a: float, b: float, e: float
) -> None:
    noise = Noise(8, a * a, b * b, e * e)
    floors = [noise.floor_pct(k) for k in (4, 8, 16, 64)]
    assert floors == sorted(floors, reverse=True)
    # No number of cycles beats the prompts' own spread (1.645 + 0.84 standard errors of it).
    limit = 100.0 * -math.expm1(-(1.645 + 0.84) * a / math.sqrt(8))
    assert floors[-1] > 0.95 * limit


def test_cycles_to_resolve_are_the_first_within_the_margin() -> None:
    k = HOST.cycles_to_resolve(2.5, 40)
    assert k is not None and HOST.floor_pct(k) <= 2.5 < HOST.floor_pct(k - 2)
    assert HOST.cycles_to_resolve(0.2, 40) is None


def test_false_alarms_are_rare_above_the_floor_and_common_below() -> None:
    design = Design.plan("decided", 4, 12, "pocock", None)
    floor = HOST.floor_pct(12, design.equivalence_confidence[-1])
    wide = HOST.false_alarms(2 * floor, design.looks, design.equivalence_confidence, reps=400)
    narrow = HOST.false_alarms(floor / 2, design.looks, design.equivalence_confidence, reps=400)
    assert wide.high < 0.05 < 0.5 < narrow.low
    # At the floor itself, 80 % power at the last look: up to a fifth fail (fewer, as the
    # earlier looks pass some gates the last would not).
    at = HOST.false_alarms(floor, design.looks, design.equivalence_confidence, reps=400)
    assert at.low > 0.05 and at.high < 0.3


def test_the_replications_are_bounded() -> None:
    with pytest.raises(ValueError, match="outside 100-20000"):
        HOST.false_alarms(3.0, (4,), (0.9,), reps=50)


def test_a_cell_s_noise_is_measured_from_its_matrix_with_the_cycles_it_had() -> None:
    rng = np.random.default_rng(1)
    matrix = 0.02 * rng.standard_normal((8, 1)) + 0.03 * rng.standard_normal((8, 6))
    row = {"pct_change": 0.5, "ci_low": -1.5, "ci_high": 2.5, "se_pct": 1.0, "df": 7.0}
    noise = Noise.measure(matrix, row, 0.95)
    assert noise is not None and (noise.prompts, noise.cycles_run) == (8, 6)
    assert min(noise.prompt_var, noise.session_var, noise.noise_var) >= 0.0
    assert Noise.measure(matrix[:, :1], row, 0.95) is None  # one cycle: nothing to separate


def test_a_calibrated_cell_is_one_the_file_s_reader_recomputes_and_accepts() -> None:
    design = Design.plan("decided", 4, 8, "pocock", None)
    measured = dataclasses.replace(HOST, cycles_run=4)
    cell = measured.calibrated(
        "aa:prose", 3.0, design.looks, design.equivalence_confidence, reps=100, seed=2
    )
    level = design.equivalence_confidence[-1]
    assert cell.noise_floor_pct == HOST.floor_pct(8, level)
    assert cell.cycles_needed == HOST.cycles_to_resolve(3.0, 64, level)
    assert cell.false_alarm.reps == 100 and cell.noise == measured
    cal = calibration(cycles=8, looks=design.looks, levels=design.equivalence_confidence,
                      cells=(cell,))  # fmt: skip
    assert Calibration.from_json(cal.to_json(), "c.json") == cal


@given(st.integers(0, 500), st.integers(1, 500))
def test_wilson_holds_the_proportion(k: int, n: int) -> None:
    k = min(k, n)
    low, high = wilson(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0


def calibration(**kw: object) -> Calibration:
    floor = Noise(8, 1e-4, 2e-4, 8e-4).floor_pct(12, 0.95)  # as calibrate computes it
    cell = CellCalibration(
        "aa:prose", 8, 4, 1e-4, 2e-4, 8e-4, floor, 12, Rate(3, 1000, 0.001, 0.009)
    )
    base = dict(host={"fingerprint": "f" * 32, "hostname": "ci"}, model_id="m", model_sha256="a" * 64,
                build="b1", created_at="2026-12-01T00:00:00+00:00", margin_pct=3.0, cycles=12,
                looks=(4, 6, 8, 10, 12), levels=(0.95,) * 5, run_dir="runs/aa/1", cells=(cell,),
                cycles_run=4)  # fmt: skip
    return Calibration(**{**base, **kw})  # type: ignore[arg-type]


def test_the_file_round_trips_and_names_its_format() -> None:
    cal = calibration()
    doc = cal.to_json()
    assert doc["format"] == 2 and round(doc["noise_floor_pct"], 2) == 1.85
    assert doc["cells"][0]["false_alarm"]["rate"] == 0.003
    assert Calibration.from_json(doc, "c.json") == cal
    with pytest.raises(ValueError, match="format 9, not 2"):
        Calibration.from_json({**doc, "format": 9}, "c.json")
    with pytest.raises(ValueError, match="not an mtpsweep calibration"):
        Calibration.from_json({"x": 1}, "c.json")


def test_a_margin_below_the_floor_is_refused_in_one_sentence() -> None:
    assert calibration().refusal() is None
    said = calibration(margin_pct=1.5).refusal()
    assert said is not None and "below what this host can resolve" in said
    assert "widen the margin to 1.9 %" in said and "12 cycles would reach it" in said


NOW = dt.datetime(2026, 12, 3, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("host", "model", "now", "fragment"),
    [
        ("e" * 32, "a" * 64, NOW, "another host"),
        ("f" * 32, "b" * 64, NOW, "another model"),
        ("f" * 32, "a" * 64, NOW + dt.timedelta(days=30), "days old"),
    ],
)
def test_a_stale_calibration_says_why(
    host: str, model: str, now: dt.datetime, fragment: str
) -> None:
    got = calibration().staleness(host_fingerprint=host, model_sha256=model, now=now)
    assert got is not None and fragment in got
    assert (
        calibration().staleness(host_fingerprint="f" * 32, model_sha256="a" * 64, now=NOW) is None
    )


def test_a_hand_edited_file_is_refused_by_its_digest() -> None:
    # issue 50: hand-lowered floors were accepted
    doc = calibration().to_json()
    doc["cells"][0]["noise_floor_pct"] = 0.5
    with pytest.raises(ValueError, match="was changed after `mtpsweep calibrate` wrote it"):
        Calibration.from_json(doc, "c.json")


def test_a_time_without_a_zone_is_stale_never_a_traceback() -> None:
    # issue 50: a naive created_at raised TypeError against an aware now
    cal = calibration(created_at="2026-12-01T00:00:00")
    got = cal.staleness(host_fingerprint="f" * 32, model_sha256=None, now=NOW)
    assert got is not None and "not a time with its zone" in got
    assert problem(cal) is not None and "has no time zone" in str(problem(cal))


def test_another_model_id_is_stale() -> None:
    got = calibration().staleness(host_fingerprint="f" * 32, model_sha256=None, now=NOW,
                                  model_id="other")  # fmt: skip
    assert got is not None and "another model (m, not other)" in got


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["cells"][0].update(prompts="8"),
        lambda d: d["cells"][0].update(cycles_needed="5"),
        lambda d: d["cells"][0]["false_alarm"].update(reps=None),
        lambda d: d.update(host=[1]),
        lambda d: d.update(cells=[[]]),
    ],
)
def test_a_value_of_the_wrong_type_is_malformed_never_a_traceback(edit: object) -> None:
    import json

    from pytest_mtpsweep.analysis.calibration_file import digest

    doc = json.loads(json.dumps(calibration().to_json()))
    edit(doc)  # type: ignore[operator]
    doc["sha256"] = digest(doc)  # as if calibrate had written it
    with pytest.raises(ValueError, match=r"^c.json is malformed \(.*\); run `mtpsweep calibrate`"):
        Calibration.from_json(doc, "c.json")


def test_this_host_fingerprints_the_rest_and_the_placement() -> None:
    here = Calibration.this_host("cpu:0-3")
    rest = {k: v for k, v in here.items() if k != "fingerprint"}
    text = "\n".join(f"{k}={v}" for k, v in sorted(rest.items()))
    assert here["fingerprint"] == hashlib.sha256(text.encode()).hexdigest()[:32]
    assert here["placement"] == "cpu:0-3" and len(here["cpu_key"]) == 12
    assert Calibration.this_host("cpu:4-7")["fingerprint"] != here["fingerprint"]


def test_output_problem_keeps_calibrations_and_refuses_other_files(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text('{"kind": "mtpsweep-calibration"}')
    other = tmp_path / "notes.txt"
    other.write_text("my notes")
    assert Calibration.output_problem(tmp_path / "new.json") is None
    assert Calibration.output_problem(old) is None
    why = Calibration.output_problem(other)
    assert why == "holds something other than a calibration, which writing would destroy"
    run = tmp_path / "run"
    run.mkdir()
    (run / "plan.json").write_text("{}")
    assert Calibration.output_problem(run / "calibration.json", run_file="calibration.json") is None
    assert "inside the run directory" in str(Calibration.output_problem(run / "records.json"))
