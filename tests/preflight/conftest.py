"""Fixtures of the preflight tests."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from pytest_mtpsweep.preflight import PreflightInputs, checklist
from tests.fake_pynvml import FakeGpu, FakeNvml
from tests.preflight.helpers import free_port, sha256_of, version_printer, write_script


@pytest.fixture
def inputs(tmp_path: Path) -> PreflightInputs:
    """Inputs for a run in which every item passes."""
    models = tmp_path / "models"
    models.mkdir()
    # a GGUF header with an empty metadata table, then bytes standing in for weights
    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 0)
    (models / "main.gguf").write_bytes(header + b"main model weights")
    (models / "draft.gguf").write_bytes(header + b"draft model weights")
    launchers = tmp_path / "launchers"
    launchers.mkdir()
    serve = write_script(launchers / "serve.sh", "exec true\n")
    ladder = tmp_path / "ladder.toml"
    ladder.write_text('question = "does it help"\n')
    experiments = tmp_path / "experiments"
    experiments.mkdir()
    return PreflightInputs(
        run_dir=tmp_path / "runs" / "ladder" / "run-1",
        server_bin=version_printer(tmp_path),
        expected_build="515e85511",
        ports=(free_port(), free_port()),
        host="127.0.0.1",
        model_files=(models / "main.gguf", models / "draft.gguf"),
        ram_floor_gb=0.0,
        disk_floor_gb=0.0,
        must_be_inactive_processes=("mtp-not-running",),
        must_be_inactive_units=(),
        launchers={"serve": (serve, sha256_of(serve))},
        experiments_dir=experiments,
        ladder_file=ladder,
        package_version="0.1.0",
    )


@pytest.fixture(autouse=True)
def idle_gpu(monkeypatch: pytest.MonkeyPatch) -> FakeNvml:
    """run_preflight sees one idle fake GPU, so results do not depend on this machine's GPU."""
    fake = FakeNvml([FakeGpu()])
    monkeypatch.setattr(checklist, "load_nvml", lambda: fake)
    return fake


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "digests.json"


# --------------------------------------------------------------------------- server version
