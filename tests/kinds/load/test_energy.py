"""Energy per output token per block, from NVML's total-energy counter: the reading (a STAND-IN
NVML, tests/fake_pynvml.py and tests/stub_nvml/pynvml.py: no GPU here), the block's fields, and
a load run whose records, contrasts and report carry it."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from pytest_mtpsweep.kinds.load.run.energy import block_fields, devices, read
from pytest_mtpsweep.rig.gpu import Energy
from tests.fake_pynvml import FakeGpu, FakeNvml
from tests.kinds.load.test_load_kind import STAND_INS, lines, run, stand_in_project
from tests.sandbox import REPO, only_run

STUB_NVML = REPO / "tests" / "stub_nvml"
LADDER = (
    """
kind = "load"
question = "Does b use less energy per token than a at 1 and 3 in flight?"
baseline = "a"
cycles = 2
max_tokens = 8
concurrency = [1, 3]
requests = 6
subset = "structured"
warmup_requests = 1
lag_bound_ms = 50.0
"""
    + STAND_INS
)


def test_the_counter_is_summed_over_the_sessions_gpus() -> None:
    nvml = FakeNvml([FakeGpu(energy_mj=1_000), FakeGpu(energy_mj=20_000)])
    assert Energy.read(None, nvml) == Energy(21_000, "GPU 0, 1")
    assert Energy.read((1,), nvml) == Energy(20_000, "GPU 1")
    assert nvml.shutdowns == 2


def test_no_counter_no_driver_no_gpu_are_each_a_reason() -> None:
    assert "no energy counter" in Energy.read(None, FakeNvml([FakeGpu(energy_mj=None)])).scope
    assert Energy.read(None, FakeNvml([], init_error=True)).mj is None
    assert Energy.read(None, FakeNvml([])).scope == "NVML sees no GPU"
    assert read("0", local=False).scope == "the server is not on this host"


def test_devices_are_indices_or_every_gpu() -> None:
    assert devices("") is None and devices("GPU-5b1f,GPU-77aa") is None
    assert devices("0, 2") == (0, 2)


def test_a_block_reading_is_joules_per_token_or_none_with_why() -> None:
    got = block_fields(Energy(10_000, "GPU 0"), Energy(34_000, "GPU 0"), 48)
    assert got == {"energy_j": 24.0, "j_per_token": 0.5, "energy": "GPU 0"}
    back = block_fields(Energy(34_000, "GPU 0"), Energy(10_000, "GPU 0"), 48)
    assert back["j_per_token"] is None and "went back" in back["energy"]
    assert block_fields(Energy(1, "GPU 0"), Energy(2, "GPU 0"), 0)["j_per_token"] is None
    none = block_fields(Energy(None, "no driver"), Energy(None, "no driver"), 48)
    assert none == {"energy_j": None, "j_per_token": None, "energy": "no driver"}


def test_a_load_run_reports_energy_per_token_and_its_paired_gain(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with stand_in_project(pytester, monkeypatch, LADDER):
        monkeypatch.setenv("PYTHONPATH", f"{STUB_NVML}{os.pathsep}{os.environ['PYTHONPATH']}")
        result = run(pytester)
    result.assert_outcomes(passed=8)
    run_dir = only_run(pytester.path)
    blocks = [r for p in sorted((run_dir / "records").glob("*.jsonl")) for r in lines(p)
              if r["record"] == "level"]  # fmt: skip
    assert len(blocks) == 8
    assert all(b["energy"] == "GPU 0" and b["j_per_token"] > 0 for b in blocks), blocks[0]
    # at a fixed power a block's energy is its length: b streams twice as fast, so about half
    # the joules per token (a per-block endpoint, paired by cycle)
    with (run_dir / "analysis" / "load_contrasts.csv").open() as handle:
        rows = {r["level"]: r for r in csv.DictReader(handle) if r["endpoint"] == "j_per_token"}
    assert set(rows) == {"conc1", "conc3"}
    assert 30.0 < float(rows["conc1"]["gain_pct"]) < 200.0, rows["conc1"]
    report = (run_dir / "analysis" / "report.md").read_text()
    assert "Energy per token (NVML's total-energy counter around each block" in report
    assert "| b vs a | energy per token | conc1 |" in report
    page = (run_dir / "analysis" / "report.html").read_text()
    assert "energy per token" in page
    assert json.loads((run_dir / "plan.json").read_text())["kind"] == "load"


def test_a_run_without_nvml_says_so_once(tmp_path: Path) -> None:
    from pytest_mtpsweep.kinds.load.analysis import compute as analysis
    from tests.kinds.load.run_fixture import write_run

    run_dir = write_run(tmp_path)
    done = analysis.analyse(run_dir, boot=200)
    assert not isinstance(done, str), done
    report = (run_dir / "analysis" / "report.md").read_text()
    assert report.count("Energy per token: not measured (") == 1
    assert "energy per token |" not in report
