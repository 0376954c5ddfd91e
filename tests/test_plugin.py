"""Plugin behaviour: collection, ids, -k, run order, option errors, and the preflight gate."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.sandbox import copy_experiments, servers_of


@pytest.fixture
def experiments(pytester: pytest.Pytester) -> pytest.Pytester:
    """A copy of the shipped experiments directory inside a pytester sandbox."""
    copy_experiments(pytester)
    return pytester


def ids(result: pytest.RunResult) -> list[str]:
    return [
        line.split("[", 1)[1].rstrip("]") for line in result.outlines if "::test_decode[" in line
    ]


def sessions(item_ids: list[str]) -> list[str]:
    out: list[str] = []
    for i in item_ids:
        s = i.rsplit("-", 1)[0]
        if not out or out[-1] != s:
            out.append(s)
    return out


class TestCollection:
    def test_a_ladder_on_the_tiny_model_says_it_measures_the_machinery(
        self, experiments: pytest.Pytester
    ) -> None:
        said = "*embedded:tiny has seeded random weights: this run measures the machinery*"
        tiny = experiments.runpytest(
            "experiments/", "--ladder=drafters-cpu", "--model=embedded:tiny", "--collect-only"
        )
        tiny.stdout.fnmatch_lines([said])
        real = experiments.runpytest("experiments/", "--ladder=drafters-cpu", "--collect-only")
        real.stdout.no_fnmatch_line(said)

    def test_cpu_demo_collects_192_in_counterbalanced_order(
        self, experiments: pytest.Pytester
    ) -> None:
        result = experiments.runpytest(
            "experiments/", "--ladder=drafters-cpu", "--collect-only", "-q"
        )
        got = ids(result)
        assert len(got) == 192  # 3 treatments x 4 cycles x 16 prompts
        assert sessions(got) == [
            "c1-none",
            "c1-ngram-simple",
            "c1-ngram-mod",
            "c2-ngram-mod",
            "c2-ngram-simple",
            "c2-none",
            "c3-none",
            "c3-ngram-simple",
            "c3-ngram-mod",
            "c4-ngram-mod",
            "c4-ngram-simple",
            "c4-none",
        ]
        assert got[:2] == ["c1-none-prose_01", "c1-none-prose_02"]
        assert got[15] == "c1-none-structured_08"
        assert not (experiments.path / "runs").exists()

    def test_k_keeps_run_order(self, experiments: pytest.Pytester) -> None:
        result = experiments.runpytest(
            "experiments/",
            "--ladder=drafters-cpu",
            "-k",
            "ngram-mod and c2",
            "--collect-only",
            "-q",
        )
        got = ids(result)
        assert len(got) == 16 and sessions(got) == ["c2-ngram-mod"]
        result.stdout.fnmatch_lines(["*16/192 tests collected (176 deselected)*"])

    def test_k_prose_spans_every_session(self, experiments: pytest.Pytester) -> None:
        got = ids(
            experiments.runpytest(
                "experiments/", "--ladder=drafters-cpu", "-k", "prose", "--collect-only", "-q"
            )
        )
        assert len(got) == 96 and len(sessions(got)) == 12
        assert all("prose" in i for i in got)

    def test_measurements_carry_the_mtpsweep_marker(self, experiments: pytest.Pytester) -> None:
        experiments.makepyfile(test_other="def test_plain():\n    pass\n")
        both = experiments.runpytest(
            "experiments/", "test_other.py", "--ladder=drafters-cpu", "--collect-only", "-q"
        )
        both.stdout.fnmatch_lines(["*193 tests collected*"])
        plain = experiments.runpytest(
            "experiments/",
            "test_other.py",
            "--ladder=drafters-cpu",
            "-m",
            "not mtpsweep",
            "--collect-only",
            "-q",
        )
        plain.stdout.fnmatch_lines(
            ["test_other.py::test_plain", "*1/193 tests collected (192 deselected)*"]
        )

    def test_cycles_and_subset_override_the_ladder(self, experiments: pytest.Pytester) -> None:
        got = ids(
            experiments.runpytest(
                "experiments/",
                "--ladder=drafters-cpu",
                "--cycles",
                "3",
                "--subset",
                "structured",
                "--collect-only",
                "-q",
            )
        )
        assert len(got) == 3 * 3 * 8
        assert sessions(got)[-3:] == ["c3-none", "c3-ngram-simple", "c3-ngram-mod"]

    def test_prompts_dir(self, experiments: pytest.Pytester) -> None:
        d = experiments.path / "mine"
        d.mkdir()
        (d / "prose_01.txt").write_text("Tell me a story.")
        got = ids(
            experiments.runpytest(
                "experiments/",
                "--ladder=drafters-cpu",
                f"--prompts-dir={d}",
                "--collect-only",
                "-q",
            )
        )
        assert got == [
            f"{s}-prose_01"
            for s in (
                "c1-none",
                "c1-ngram-simple",
                "c1-ngram-mod",
                "c2-ngram-mod",
                "c2-ngram-simple",
                "c2-none",
                "c3-none",
                "c3-ngram-simple",
                "c3-ngram-mod",
                "c4-ngram-mod",
                "c4-ngram-simple",
                "c4-none",
            )
        ]

    def test_ladder_by_path(self, experiments: pytest.Pytester) -> None:
        path = experiments.path / "experiments" / "ladders" / "lowerarm-cpu.toml"
        got = ids(experiments.runpytest("experiments/", f"--ladder={path}", "--collect-only", "-q"))
        assert sessions(got)[:3] == ["c1-none", "c1-gate_0.10", "c1-gate_0.25"]

    def test_without_ladder_measurements_skip_with_the_reason(
        self, experiments: pytest.Pytester
    ) -> None:
        result = experiments.runpytest("experiments/", "-rs")
        result.assert_outcomes(skipped=3)  # a decode, an authoring and a load test
        result.stdout.fnmatch_lines(
            ["*no --ladder given: run e.g. pytest experiments/ --ladder=cpu-demo*"]
        )


class TestUsageErrors:
    def run_error(self, pytester: pytest.Pytester, *args: str) -> str:
        result = pytester.runpytest("experiments/", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "Traceback" not in result.stdout.str() + result.stderr.str()
        return result.stderr.str()

    def test_lowerarm_needs_model(self, experiments: pytest.Pytester) -> None:
        err = self.run_error(experiments, "--ladder=lowerarm")
        assert "needs --model" in err and "MTP" in err

    def test_unknown_ladder_lists_available(self, experiments: pytest.Pytester) -> None:
        err = self.run_error(experiments, "--ladder=nope")
        assert (
            "available: aa-cpu, authoring-cpu, cpu-demo, cpu-demo-fixed, drafters-cpu, gate-demo, gate-pip, gemma-control, gpu-check, gpu-check-load, load-capacity-cpu, load-conversation-cpu, load-cpu, load-trace-cpu, lowerarm, lowerarm-cpu, lowerarm-sweep, mechanism-cpu, sweep-demo"
            in err
        )

    def test_bad_override(self, experiments: pytest.Pytester) -> None:
        err = self.run_error(experiments, "--ladder=drafters-cpu", "--max-tokens", "1")
        assert "(with --max-tokens 1 from the command line): max_tokens is 1" in err

    def test_xdist_splitting_a_block_is_refused(self, experiments: pytest.Pytester) -> None:
        err = self.run_error(experiments, "--ladder=drafters-cpu", "-n", "2", "--dist", "loadscope")
        assert "would split a counterbalanced block; use --dist loadgroup" in err

    def test_missing_server_binary_names_the_fix(self, experiments: pytest.Pytester) -> None:
        result = experiments.runpytest(
            "experiments/",
            "--ladder=drafters-cpu",
            "--server-bin",
            "/nonexistent/llama-server",
            "-k",
            "c1-none-prose_01",
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert (
            "--server-bin names '/nonexistent/llama-server'"
            in result.stdout.str() + result.stderr.str()
        )
        assert not (experiments.path / "runs").exists()


class TestPreflightGate:
    """Preflight against the real server binary: a failing item stops the run before any server."""

    def test_occupied_port_stops_the_run_before_any_server(
        self,
        experiments: pytest.Pytester,
        server_bin: Path,
        model_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        import socket

        monkeypatch.setenv("COLUMNS", "250")  # wide enough that no cell is shortened

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            port = s.getsockname()[1]
            result = experiments.runpytest(
                "experiments/",
                "--ladder=drafters-cpu",
                f"--port={port}",
                "-k",
                "c1-none-prose_01",
                "--junitxml=junit.xml",
            )
            assert servers_of(server_bin) == []
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        out = result.stdout.str()
        assert "mtpsweep preflight" in out and f"{port}: Address already in use" in out
        assert f"ports: Stop whatever holds port {port} on 127.0.0.1" in out
        assert "no server was started" in out
        assert not (experiments.path / "runs").exists()
        # in JUnit: one failed case, the preflight item, with what was observed
        root = ET.parse(experiments.path / "junit.xml").getroot()
        failed = [c for c in root.iter("testcase") if c.find("failure") is not None]
        assert [(c.attrib["classname"], c.attrib["name"]) for c in failed] == [
            ("mtpsweep", "preflight[ports]")
        ]
        assert f"{port}: Address already in use" in failed[0].find("failure").attrib["message"]  # type: ignore[union-attr]

    def test_waived_item_lets_the_run_proceed_and_is_recorded(
        self, experiments: pytest.Pytester, server_bin: Path, model_path: Path
    ) -> None:
        result = experiments.runpytest(
            "experiments/",
            "--ladder=drafters-cpu",
            "--preflight-only",
            "--server-build=deadbeef",
        )
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(["*server_version*deadbeef*fail*"])
        result = experiments.runpytest(
            "experiments/",
            "--ladder=drafters-cpu",
            "--preflight-only",
            "--server-build=deadbeef",
            "--waive=server_version",
        )
        assert result.ret == pytest.ExitCode.OK
        result.stdout.fnmatch_lines(["*server_version*deadbeef*waived*"])

    def test_against_reports_a_touched_model(
        self, experiments: pytest.Pytester, server_bin: Path, machinery_model: Path, tmp_path: Path
    ) -> None:
        import json
        import os

        model = tmp_path / "copy.gguf"
        shutil.copyfile(machinery_model, model)
        first = experiments.path / "first"
        result = experiments.runpytest(
            "experiments/",
            "--ladder=drafters-cpu",
            f"--model={model}",
            f"--run-dir={first}",
            "-k",
            "c1-none-prose_01",
            "--max-tokens=4",
            "--port=0",
        )
        result.assert_outcomes(passed=1, deselected=191)
        items = {i["name"]: i for i in json.loads((first / "preflight.json").read_text())}
        assert items["model:copy.gguf"]["verdict"] == "pass"

        result = experiments.runpytest(
            "experiments/",
            "--ladder=drafters-cpu",
            f"--model={model}",
            f"--against={first}",
            "--preflight-only",
        )
        result.stdout.fnmatch_lines(["*model:copy.gguf*pass*yes*"])
        st = model.stat()
        os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        result = experiments.runpytest(
            "experiments/",
            "--ladder=drafters-cpu",
            f"--model={model}",
            f"--against={first}",
            "--preflight-only",
        )
        result.stdout.fnmatch_lines(["*model:copy.gguf*pass*no*"])


class TestTimeLimits:
    """measurement_timeout_s reaches every measurement as pytest-timeout's marker (STUB server:
    a hang on demand)."""

    def test_a_hung_measurement_times_out_by_the_ladder_alone(
        self, pytester: pytest.Pytester
    ) -> None:
        from tests.protocol.test_session import run_stub, stub_project

        few = stub_project(pytester, ["--fault", "hang@3"], prompts=3)
        ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
        ladder.write_text("measurement_timeout_s = 3\n" + ladder.read_text())
        result = run_stub(pytester, few, "--no-calibration", "-k", "c1")  # no --timeout
        result.stdout.fnmatch_lines(
            ["*pytest-timeout limit 3 s per measurement (measurement_timeout_s)*",
             "*the reply did not end within its bound of 2 s; cut after 2.* s*"]
        )  # fmt: skip
        # the hung reply is cut by its read's own bound, inside the item's limit: a failed
        # measurement with its reason, and the session goes on (no pytest-timeout error)
        result.assert_outcomes(passed=5, failed=1)

    def test_without_pytest_timeout_the_field_is_a_usage_error(
        self, experiments: pytest.Pytester
    ) -> None:
        ladder = experiments.path / "experiments" / "ladders" / "drafters-cpu.toml"
        ladder.write_text("measurement_timeout_s = 600\n" + ladder.read_text())
        result = experiments.runpytest(
            "experiments/", "--ladder=drafters-cpu", "-p", "no:timeout", "--collect-only"
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "pytest-timeout is not loaded" in result.stderr.str()

    def test_a_bad_limit_names_the_field(self, experiments: pytest.Pytester) -> None:
        ladder = experiments.path / "experiments" / "ladders" / "drafters-cpu.toml"
        ladder.write_text("measurement_timeout_s = 0\n" + ladder.read_text())
        result = experiments.runpytest("experiments/", "--ladder=drafters-cpu", "--collect-only")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert (
            "measurement_timeout_s is 0.0; use a number of seconds above 0" in result.stderr.str()
        )


class TestProgress:
    """Status lines through pytest's terminal reporter (STUB server: a slow load on demand)."""

    def test_ready_and_closing_lines_plain_when_not_a_terminal(
        self, pytester: pytest.Pytester
    ) -> None:
        from tests.protocol.test_session import run_stub, stub_project

        few = stub_project(pytester, ["--fault", "slow-start=1.5"], prompts=2)
        result = run_stub(pytester, few, "--no-calibration", "-k", "c1")
        result.assert_outcomes(passed=4)
        result.stdout.fnmatch_lines(
            [
                "mtpsweep 01_a_c1 (a, cycle 1): ready in *s",
                "mtpsweep 01_a_c1 closed: 2/2 valid, median * tok/s",
                "mtpsweep 02_b_c1 (b, cycle 1): ready in *s",
                "mtpsweep 02_b_c1 closed: 2/2 valid, median * tok/s",
            ]
        )
        load = float(result.stdout.str().split("02_b_c1 (b, cycle 1): ready in ")[1].split()[0])
        assert load >= 1.5  # the slow start was waited for
        assert "\r" not in result.stdout.str() and "\x1b" not in result.stdout.str()

    def test_quiet_means_quiet(self, pytester: pytest.Pytester) -> None:
        from tests.protocol.test_session import run_stub, stub_project

        few = stub_project(pytester, [], prompts=1)
        result = run_stub(pytester, few, "--no-calibration", "-k", "c1", "-q")
        result.assert_outcomes(passed=2)
        assert "ready in" not in result.stdout.str() and "closed:" not in result.stdout.str()
