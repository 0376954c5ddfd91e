"""scripts/gpu_check.py where there is no GPU: one line, exit 0; and the parts that need none
(the toolkit root assembled from wheel files, the note's lines)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "gpu_check.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gpu_check = _load()


def _run(tmp_path: Path, path: str, pythonpath: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PATH", "PYTHONPATH")}
    env.update(PATH=path, MTPSWEEP_CACHE=str(tmp_path / "cache"))
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path / "out.json")],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("target", ["a folder", "a link", "a FIFO", "another file", "a run's"])
def test_a_bad_out_is_refused_before_any_check(tmp_path: Path, target: str) -> None:
    out = tmp_path / "out.json"
    if target == "a folder":
        out.mkdir()
    elif target == "a link":
        out.symlink_to(tmp_path / "elsewhere.json")
    elif target == "a FIFO":
        os.mkfifo(out)
    elif target == "another file":
        out.write_text("[tool.pytest]\n")
    else:
        (tmp_path / "plan.json").write_text("{}")
    smi = tmp_path / "bin" / "nvidia-smi"  # would be run by the first check: it must not be
    smi.parent.mkdir()
    smi.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    smi.chmod(0o755)
    done = _run(tmp_path, str(smi.parent), pythonpath=str(REPO))
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"gpu-check: --out {out} ") and "Traceback" not in done.stderr
    assert not (tmp_path / "ran").exists()


def test_without_nvidia_smi_it_says_so_in_one_line_and_exits_0(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = _run(tmp_path, str(empty))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "gpu-check: no NVIDIA GPU here (no nvidia-smi on PATH); nothing to check."
    ]
    assert done.stderr == ""
    assert not (tmp_path / "out.json").exists()


def test_when_nvml_cannot_start_it_says_so_in_one_line_and_exits_0(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\nexit 9\n")
    smi.chmod(0o755)
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "pynvml.py").write_text(
        "class NVMLError(Exception):\n    pass\n\n"
        "def nvmlInit():\n    raise NVMLError('Driver Not Loaded')\n"
    )
    done = _run(tmp_path, str(bin_dir), pythonpath=str(stub))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "gpu-check: no NVIDIA GPU here (NVML cannot start (Driver Not Loaded)); nothing to check."
    ]


def _fake_wheels(root: Path) -> Path:
    cu13 = root / "nvidia" / "cu13"
    for sub in ("bin", "include", "lib", "nvvm/bin"):
        (cu13 / sub).mkdir(parents=True)
    (cu13 / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (cu13 / "bin" / "nvcc.profile").write_text("TOP = $(_HERE_)/..\n")
    for name in ("libcudart.so.13", "libcublas.so.13", "libcudart_static.a"):
        (cu13 / "lib" / name).write_bytes(b"\0")
    (root / "nvidia_cuda_nvcc-13.0.88.dist-info").mkdir()
    return cu13


def test_the_toolkit_root_has_what_nvcc_and_cmake_look_for(tmp_path: Path) -> None:
    cu13 = _fake_wheels(tmp_path / "site")
    root = gpu_check.assemble_toolkit(cu13, cache=tmp_path / "cache")
    assert root.name == "nvidia_cuda_nvcc-13.0.88"
    # bin/ is real (nvcc's TOP is the folder above the nvcc that runs), the rest points back
    assert (root / "bin" / "nvcc").is_file() and not (root / "bin" / "nvcc").is_symlink()
    assert (root / "include").resolve() == cu13 / "include"
    assert (root / "lib64" / "libcudart.so").resolve() == cu13 / "lib" / "libcudart.so.13"
    assert (root / "lib64" / "libcublas.so").resolve() == cu13 / "lib" / "libcublas.so.13"
    assert (root / "lib" / "libcudart_static.a").exists()
    # a second call reuses it
    assert gpu_check.assemble_toolkit(cu13, cache=tmp_path / "cache") == root


def test_find_nvcc_takes_the_wheels_from_sys_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_wheels(tmp_path / "site")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site"), *sys.path])
    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path / "cache"))
    found = gpu_check.find_nvcc(prefer_wheels=True)
    assert found is not None
    nvcc, source = found
    assert source == "wheels"
    assert nvcc == tmp_path / "cache" / "cuda-toolkit" / "nvidia_cuda_nvcc-13.0.88" / "bin" / "nvcc"


def test_the_note_carries_every_figure() -> None:
    summary: dict[str, Any] = {
        "when": "2026-12-06T13:00:00Z",
        "gpus": [
            {"index": "0", "name": "NVIDIA H200", "mib": "143771", "driver": "580", "cc": "9.0"}
        ],
        "build": {
            "build_s": 201.3,
            "nvcc": "release 13.0",
            "nvcc_from": "system",
            "version": "version: 0.6.0-dev (build 11434, commit 515e85511)",
        },
        "memory": [{"gpu": 0, "nvml_used_mib": 1201, "smi_used_mib": 1199, "ok": True}],
        "energy": {
            "window_s": 8.0,
            "nvml_j": 1600.0,
            "nvml_mean_w": 200.0,
            "smi_j": 1580.0,
            "diff_pct": 1.3,
            "tolerance_pct": 15.0,
            "ok": True,
        },
        "decode": {
            "rc": 0,
            "cells": [{"cell": "synth:structured", "decision": "faster"}],
            "mechanism": [
                "synth, structured: 2.90 tokens per step [2.80, 3.00] against a "
                "break-even of 1.40: drafting saves more than it costs"
            ],
        },
        "load": {
            "levels": [
                {
                    "session": "01_none_c1",
                    "level": "conc4",
                    "j_per_token": 0.0421,
                    "energy": "GPU 0",
                }
            ]
        },
        "total_s": 412.0,
    }
    text = gpu_check.note(summary)
    for figure in ("201.3 s", "NVML 1201 MiB (v2 None) vs nvidia-smi 1199 MiB", "1.3 %",
                   "synth:structured faster", "0.0421 J/token", "412.0 s",
                   "mechanism: synth, structured: 2.90 tokens per step"):  # fmt: skip
        assert figure in text


def test_the_mechanism_sentences_come_from_the_runs_analysis(tmp_path: Path) -> None:
    assert gpu_check.mechanism_sentences(tmp_path) == []  # no analysis: nothing to say
    (tmp_path / "analysis").mkdir()
    rows = [{"treatment": "synth", "sentence": "structured: drafted no tokens"}, {"x": 1}]
    (tmp_path / "analysis" / "contrasts.json").write_text(json.dumps({"mechanism": rows}))
    assert gpu_check.mechanism_sentences(tmp_path) == ["synth, structured: drafted no tokens"]


def test_a_step_past_its_time_leaves_nothing_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = f"sleep 30 & echo $! > {pid_file}; wait"
    with pytest.raises(subprocess.TimeoutExpired):
        gpu_check.run_group(["sh", "-c", script], 1.0, grace_s=2.0)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for whoever adopted it to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _nvml_stub() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stub_pynvml", REPO / "tests/stub_nvml/pynvml.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_nvml_is_read_against_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a stand-in GPU at 150 W (NVML) and an nvidia-smi that says the same: both checks agree
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        '#!/bin/sh\ncase "$*" in\n  *memory.used*) echo "0, 1024" ;;\n'
        '  *-lms*) while :; do echo "150.00"; sleep 0.1; done ;;\nesac\n'
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    nvml = _nvml_stub()
    assert gpu_check.check_memory(nvml) == [
        {"gpu": 0, "nvml_used_mib": 1024, "nvml_v2_used_mib": None, "smi_used_mib": 1024,
         "diff_mib": 0, "ok": True}
    ]  # fmt: skip
    energy = gpu_check.check_energy(nvml, "http://127.0.0.1:9", window_s=1.0, settle_s=0.2)
    assert energy["ok"], energy
    assert energy["nvml_mean_w"] == pytest.approx(150.0, rel=0.02)
    assert energy["smi_j"] == pytest.approx(energy["nvml_j"], rel=0.05)
    assert energy["smi_samples"] >= 5


def test_the_load_levels_come_from_records_not_quarantine(tmp_path: Path) -> None:
    level = {"record": "level", "session": "02_none_c2", "treatment": "none", "level": "conc4",
             "valid": True, "output_tokens": 1024, "energy_j": 40.0, "j_per_token": 0.039,
             "energy": "GPU 0"}  # fmt: skip
    for where, rec in (("records", level), ("quarantine/01_none_c1", level | {"j_per_token": 9})):
        (tmp_path / where).mkdir(parents=True)
        lines = [json.dumps({"record": "request", "j_per_token": 1}), json.dumps(rec)]
        (tmp_path / where / "records.jsonl").write_text("\n".join(lines) + "\n")
    assert gpu_check.energy_levels(tmp_path) == [
        {"session": "02_none_c2", "treatment": "none", "level": "conc4", "valid": True,
         "output_tokens": 1024, "energy_j": 40.0, "j_per_token": 0.039, "energy": "GPU 0"}
    ]  # fmt: skip
