"""A build says its stage and elapsed time while it runs; a stand-in build command plays CMake."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_mtpsweep.rig import build
from pytest_mtpsweep.rig.buildprogress import (
    BuildTimeout,
    Progress,
    load_warning,
    minutes,
    run_with_progress,
)


def test_minutes_read_as_a_person_reads_them() -> None:
    assert minutes(973.9) == "16 min 14 s"
    assert minutes(220) == "3 min 40 s"
    assert minutes(42.2) == "42 s"
    assert minutes(-1) == "0 s"


def fed(lines: list[str]) -> Progress:
    p = Progress()
    for line in lines:
        p.feed(line)
    return p


def test_make_output_gives_the_stage_the_percentage_and_the_objects() -> None:
    assert fed(["-- The C compiler identification is GNU 12.2.0"]).describe() == "configuring"
    p = fed(
        [
            "-- Configuring done",
            "[  1%] Building C object ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o",
            "[  2%] Building CXX object ggml/src/CMakeFiles/ggml-base.dir/ggml.cpp.o",
            "[ 45%] Building CXX object src/CMakeFiles/llama.dir/llama-model.cpp.o",
        ]
    )
    assert p.describe() == "compiling: 45 %, 3 objects"
    p.feed("[ 99%] Linking CXX executable ../../bin/llama-server")
    assert p.describe() == "linking: 99 %, 3 objects"


def test_ninja_output_gives_objects_out_of_the_total() -> None:
    p = fed(["[214/389] Building CXX object src/CMakeFiles/llama.dir/llama.cpp.o"])
    assert p.describe() == "compiling: 214/389 objects"


def test_a_busy_host_is_named_before_the_build_and_an_idle_one_is_not() -> None:
    said = load_warning(4.7, 2, "about 8 min on 2 idle cores")
    assert said is not None
    assert "load 4.7 on 2 cores" in said and "longer than about 8 min" in said
    assert load_warning(0.4, 2, "x") is None


STAND_IN = """
import os, sys, time
print("-- Configuring done", flush=True)
print("[ 50%] Building CXX object a.cpp.o", flush=True)
print("[100%] Linking CXX executable llama-server", flush=True)
flag = sys.argv[1]
for _ in range(400):  # until the progress line was seen (bounded: 20 s)
    if os.path.exists(flag):
        break
    time.sleep(0.05)
sys.exit(int(sys.argv[2]))
"""


def test_the_build_says_its_stage_while_it_runs(tmp_path: Path) -> None:
    script, flag = tmp_path / "build.py", tmp_path / "seen"
    script.write_text(STAND_IN)
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        if "linking" in line:
            flag.touch()

    rc = run_with_progress(
        [sys.executable, str(script), str(flag), "3"], env={}, log=tmp_path / "log",
        what="building llama-server", timeout_s=60, say=say, every_s=0.05,
    )  # fmt: skip
    assert rc == 3
    assert any(s.startswith("building llama-server: linking: 100 %, 1 objects, ") for s in said)
    assert all(s.endswith(" s") for s in said), said
    assert "Linking CXX executable" in (tmp_path / "log").read_text()


def test_a_build_past_its_limit_is_stopped(tmp_path: Path) -> None:
    script = tmp_path / "build.py"
    script.write_text(STAND_IN)
    with pytest.raises(BuildTimeout):
        run_with_progress(
            [sys.executable, str(script), str(tmp_path / "never"), "0"], env={},
            log=tmp_path / "log", what="b", timeout_s=0.3, say=lambda _: None, every_s=0.05,
        )  # fmt: skip


def test_a_build_that_fails_names_its_log_and_a_slow_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(build, "host_load_warning", lambda usual: f"busy: longer than {usual}")

    def stand_in(argv: list[str], **kw: object) -> int:
        assert "-v" in argv  # the build's own output is what progress is read from
        Path(str(kw["log"])).write_text("-- Configuring\nerror: no compiler\n")
        return 1

    monkeypatch.setattr(build, "run_with_progress", stand_in)
    said: list[str] = []
    with pytest.raises(Exception, match=r"failed \(error: no compiler\)"):
        build._build(build.LLAMA_SERVER, tmp_path / "where", said.append)
    assert said == ["busy: longer than about 8 min on 2 idle cores"]
