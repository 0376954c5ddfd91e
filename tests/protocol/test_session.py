"""The protocol's safety rules, end to end through pytest.

Faults a real server cannot be made to produce on demand (hidden reasoning, unknown stream
fields, a refused warm-up, a hang) come from the STUB server `tests/stub_llama_server.py`;
everything else (a server killed mid-session, curtailment, resume) runs the real llama-server.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest

from pytest_mtpsweep.cli.analyse import run_cli
from tests.sandbox import (
    FAKE_GGUF,
    STUB_SERVER,
    copy_experiments,
    only_run,
    prompt_dir,
    read_records,
    servers_of,
    spawn_pytest,
    wait_for_record,
)
from tests.test_integration import SMALL

REPO = Path(__file__).resolve().parents[2]
STUB = STUB_SERVER  # one copy per xdist worker

STUB_LADDER = """
question = "Does the harness keep its rules when the server misbehaves?"
baseline = "a"
cycles = 2
max_tokens = 8
[model]
path = "{model}"
id = "stub"
[server]
port = 0
ctx_size = 4096
ready_timeout_s = 30
[[treatments]]
key = "a"
[[treatments]]
key = "b"
args = {b_args}
"""


def stub_project(pytester: pytest.Pytester, b_args: list[str], prompts: int = 2) -> Path:
    """A sandbox with a stub ladder whose treatment `b` carries the fault flags."""
    copy_experiments(pytester)
    model = pytester.path / "model.gguf"
    model.write_bytes(FAKE_GGUF)
    ladder = STUB_LADDER.format(model=model, b_args=json.dumps(["--stub", "b", *b_args]))
    (pytester.path / "experiments" / "ladders" / "stub.toml").write_text(ladder)
    few = pytester.path / "few"
    few.mkdir()
    for i in range(1, prompts + 1):
        (few / f"prose_{i:02d}.txt").write_text(f"Write sentence number {i}.")
    return few


def run_stub(
    pytester: pytest.Pytester, few: Path, *args: str, server_bin: Path = STUB
) -> pytest.RunResult:
    return pytester.runpytest(
        "experiments/",
        "--ladder=stub",
        f"--server-bin={server_bin}",
        f"--prompts-dir={few}",
        "--boot=1000",
        *args,
    )


def staged_stub(tmp_path: Path, first: str, later: str = "") -> Path:
    """A wrapper around the stub: the first server for treatment b gets the fault flags `first`,
    every later one for b gets `later` (faults live per process, so a fresh start resets them)."""
    done = tmp_path / "first-done"
    wrapper = tmp_path / "staged.sh"
    wrapper.write_text(
        "#!/usr/bin/env bash\n"
        f'if [ "$1" = --version ]; then exec {STUB} --version; fi\n'
        f'case " $* " in *" b "*) if [ ! -e {done} ]; then touch {done}; '
        f'exec {STUB} "$@" {first}; fi; exec {STUB} "$@" {later};; esac\n'
        f'exec {STUB} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def stubs_running() -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if any(str(STUB) == c for c in cmd[:3]):
            found.append(p)
    return found


def all_records(run: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for f in sorted(run.glob("**/*.jsonl")):
        rows, bad = read_records(f)
        assert bad == 0, f
        out += rows
    return out


class TestStopMarkers:
    # Request count per stub process, with --no-calibration: 1 warm-up, 2 and 3 measurements.
    @pytest.mark.parametrize(
        ("fault", "marker"),
        [
            ("reasoning@3", "** HIDDEN-REASONING=11 chars at 02_b_c1/prose_02"),
            ("unknown-delta@3", "** UNRECOGNISED-DELTA-FIELDS=secret_field at 02_b_c1/prose_02"),
        ],
    )
    def test_marker_stops_quarantines_and_analyses(
        self, pytester: pytest.Pytester, fault: str, marker: str
    ) -> None:
        few = stub_project(pytester, ["--fault", fault])
        result = run_stub(pytester, few, "--no-calibration")
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines([f"STOPPED by a protocol rule: {marker}"])
        result.assert_outcomes(passed=3)
        run = only_run(pytester.path)
        q = run / "quarantine" / "02_b_c1"
        assert marker in (q / "reason.txt").read_text()
        assert marker in (q / "server.log").read_text()
        assert len(read_records(q / "records.jsonl")[0]) == 2  # the marked measurement is kept
        assert marker in (run / "STOPPED").read_text()
        assert [p.name for p in (run / "records").iterdir()] == ["01_a_c1.jsonl"]
        report = (run / "analysis" / "report.md").read_text()
        assert "STOPPED by a protocol rule" in report
        assert stubs_running() == []

        again = pytester.runpytest(
            "experiments/",
            "--ladder=stub",
            f"--server-bin={STUB}",
            f"--prompts-dir={few}",
            f"--resume={run}",
        )
        assert again.ret == pytest.ExitCode.USAGE_ERROR
        again.stdout.fnmatch_lines(["*stopped by a protocol rule*must not be resumed*"])

    def test_reasoning_is_data_when_the_ladder_expects_it(self, pytester: pytest.Pytester) -> None:
        few = stub_project(pytester, ["--fault", "reasoning"])
        ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
        ladder.write_text("reasoning_expected = true\n" + ladder.read_text())
        result = run_stub(pytester, few, "--no-calibration")
        result.assert_outcomes(passed=8)
        recs = all_records(only_run(pytester.path))
        assert {r["reasoning_chars"] for r in recs if r["treatment"] == "b"} == {11}


class TestWarmup:
    def test_failed_twice_stops_the_run(self, pytester: pytest.Pytester) -> None:
        few = stub_project(pytester, ["--fault", "http-400@1"])
        result = run_stub(pytester, few)
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines(["*WARMUP-FAILED-TWICE=02_b_c1*HTTP 400*"])
        run = only_run(pytester.path)
        assert sorted(p.name for p in (run / "quarantine").iterdir()) == ["02_b_c1", "02_b_c1.2"]
        assert (
            "warm-up request failed: HTTP 400"
            in (run / "quarantine" / "02_b_c1" / "reason.txt").read_text()
        )
        assert stubs_running() == []

    def test_failed_once_gets_a_fresh_server(
        self, pytester: pytest.Pytester, tmp_path: Path
    ) -> None:
        # Only the first server for b refuses its warm-up; the fresh one works.
        wrapper = staged_stub(tmp_path, "--fault http-400@1")
        few = stub_project(pytester, [])
        result = run_stub(pytester, few, server_bin=wrapper)
        result.assert_outcomes(passed=8)
        run = only_run(pytester.path)
        assert [p.name for p in (run / "quarantine").iterdir()] == ["02_b_c1"]
        info = json.loads((run / "sessions" / "02_b_c1.json").read_text())
        assert info["warmup"]["valid"] is True and info["measured"] == 2


class TestPartialCensus:
    def test_invalid_measurement_quarantines_and_reruns_once(
        self, pytester: pytest.Pytester
    ) -> None:
        # no-usage@3 strikes the first attempt and the re-run alike: both are kept, no third try.
        few = stub_project(pytester, ["--fault", "no-usage@3"])
        result = run_stub(pytester, few, "--no-calibration")
        result.assert_outcomes(passed=6, failed=2)
        run = only_run(pytester.path)
        assert sorted(p.name for p in (run / "quarantine").iterdir()) == [
            "02_b_c1",
            "02_b_c1.2",
            "03_b_c2",
            "03_b_c2.2",
        ]
        reason = (run / "quarantine" / "02_b_c1.2" / "reason.txt").read_text()
        assert "partial census: 1 of 2 measurements usable (1 valid)" in reason
        rerun = json.loads((run / "quarantine" / "02_b_c1.2" / "session.json").read_text())
        assert rerun["rerun"] is True
        census = (run / "analysis" / "census.csv").read_text().splitlines()
        # every baseline measurement lost its partner: four gaps, none kept
        assert "primary,b,a,prose,0,0,4,0,1000,0" in census
        assert stubs_running() == []

    def test_stop_marker_in_the_rerun_still_stops_the_run(
        self, pytester: pytest.Pytester, tmp_path: Path
    ) -> None:
        # The first server for b loses a usage chunk (partial census); its re-run shows reasoning.
        wrapper = staged_stub(tmp_path, "--fault no-usage@3", "--fault reasoning@2")
        few = stub_project(pytester, [])
        result = run_stub(pytester, few, "--no-calibration", server_bin=wrapper)
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines(["*HIDDEN-REASONING=11 chars at 02_b_c1/prose_01*"])
        run = only_run(pytester.path)
        assert sorted(p.name for p in (run / "quarantine").iterdir()) == ["02_b_c1", "02_b_c1.2"]
        assert (run / "STOPPED").is_file()
        assert not (run / "sessions" / "03_b_c2.json").exists()  # nothing ran after the stop
        assert stubs_running() == []


class TestHang:
    def test_timeout_quarantines_the_session_and_the_run_goes_on(
        self, pytester: pytest.Pytester
    ) -> None:
        few = stub_project(pytester, ["--fault", "hang@3"], prompts=3)
        result = run_stub(pytester, few, "--no-calibration", "--timeout=5", "-k", "c1")
        # the hung measurement errors (its fixture timed out); the next one fails, not measured
        result.assert_outcomes(passed=4, errors=1, failed=1)
        result.stdout.fnmatch_lines(["*Timeout*"])
        run = only_run(pytester.path)
        q = run / "quarantine" / "02_b_c1"
        assert "interrupted" in (q / "reason.txt").read_text()
        recs = read_records(q / "records.jsonl")[0]
        assert [r["valid"] for r in recs] == [True, False, False]
        assert "interrupted" in str(recs[1]["reason"]) and "interrupted" in str(recs[2]["reason"])
        assert stubs_running() == []


class TestServerKilledMidSession:
    def test_quarantine_clean_next_session_no_lost_records(
        self, pytester: pytest.Pytester, server_bin: Path, machinery_model: Path
    ) -> None:
        copy_experiments(pytester, {"small": SMALL})
        few = prompt_dir(pytester, ["prose_01", "prose_02", "prose_03", "prose_04"])
        proc = spawn_pytest(
            pytester.path,
            "experiments/",
            "--ladder=small",
            f"--prompts-dir={few}",
            # long enough answers that the kill lands mid-session on a fast (tiny) model too
            "--max-tokens=256",
            "--no-calibration",
            "--boot=1000",
        )
        try:
            wait_for_record(pytester.path, "02_*.jsonl", proc)
            target = [c for c in psutil.Process(proc.pid).children() if c.exe() == str(server_bin)]
            assert target, "session 2's server should be running"
            target[0].kill()
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
        out = (pytester.path / "run.log").read_text()
        run = only_run(pytester.path)
        q = run / "quarantine" / "02_ngram-simple_c1"
        # named by its signal (the kill above is SIGKILL), never a bare negative status
        reason = (q / "reason.txt").read_text()
        assert "the server was killed by SIGKILL" in reason and "mid-session" in reason, out
        kept = read_records(q / "records.jsonl")[0]
        assert len(kept) == 4 and kept[0]["valid"] is True and kept[-1]["valid"] is False
        nxt = json.loads((run / "sessions" / "03_ngram-simple_c2.json").read_text())
        assert nxt["valid"] == nxt["planned_measurements"] == 4 and nxt["released"] is True
        assert sum(1 for _ in run.glob("records/*.jsonl")) == 3
        gaps = (run / "analysis" / "gaps.csv").read_text()
        assert "ngram-simple" in gaps and ",1," in gaps  # cycle 1 of ngram-simple is missing
        assert servers_of(server_bin) == []


class TestCurtailment:
    def test_the_deadline_stops_the_run_after_the_current_session_even_the_never_drop(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Every stub server takes 1.5 s to load, so a 1 s budget has passed when the first
        # session ends: the run stops there, the never-drop final baseline included (the drop
        # order plans sessions away while the deadline is ahead: tests/protocol/test_schedule).
        monkeypatch.setenv("MTPSWEEP_STUB_FAULTS", "slow-start=1.5")
        few = stub_project(pytester, [], prompts=1)
        ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
        ladder.write_text(ladder.read_text() + '\n[preregistration]\nnever_drop = "a:c2"\n')
        result = run_stub(pytester, few, "--no-calibration", "--time-budget=1s")
        result.assert_outcomes(passed=1, skipped=3)
        result.stdout.fnmatch_lines(
            ["*04_a_c2: not run: the deadline (*) had passed, so the run stopped after 01_a_c1"]
        )
        run = only_run(pytester.path)
        assert sorted(p.name for p in (run / "sessions").iterdir()) == ["01_a_c1.json"]
        cut = json.loads((run / "curtailment.json").read_text())
        assert cut["deadline_stop"]["after"] == "01_a_c1"
        assert cut["deadline_stop"]["not_run"] == ["02_b_c1", "03_b_c2", "04_a_c2"]
        assert cut["affected_treatments"] == ["a", "b"]
        report = (run / "analysis" / "report.md").read_text()
        assert "the run was stopped by its deadline" in report
        assert "This run was curtailed: b lost part of its counterbalanced positions" in report
        assert stubs_running() == []

    def test_bad_deadline_is_a_usage_error(self, pytester: pytest.Pytester) -> None:
        shutil.copytree(REPO / "experiments", pytester.path / "experiments")
        result = pytester.runpytest(
            "experiments/", "--ladder=drafters-cpu", "--deadline=25:00", "--collect-only"
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "write it as HH:MM" in result.stderr.str()


class TestResume:
    def test_interrupted_run_resumes_where_it_stopped(
        self, pytester: pytest.Pytester, server_bin: Path, machinery_model: Path
    ) -> None:
        copy_experiments(pytester, {"small": SMALL})
        few = prompt_dir(pytester, ["prose_01", "prose_02", "prose_03"])
        args = [
            "experiments/",
            "--ladder=small",
            f"--prompts-dir={few}",
            "--max-tokens=128",  # the kill lands mid-session on a fast (tiny) model too
            "--no-calibration",
            "--boot=1000",
        ]
        proc = spawn_pytest(pytester.path, *args)
        try:
            wait_for_record(pytester.path, "02_*.jsonl", proc)
            os.kill(proc.pid, signal.SIGKILL)  # the harshest interruption there is
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        run = only_run(pytester.path)

        refused = pytester.runpytest(*args, f"--resume={run}", "--max-tokens=8")
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        refused.stdout.fnmatch_lines(["*differs from the run in keyed.max_tokens*"])

        result = pytester.runpytest(*args, f"--resume={run}")
        result.assert_outcomes(passed=9, skipped=3)
        assert (
            "interrupted" in (run / "quarantine" / "02_ngram-simple_c1" / "reason.txt").read_text()
        )
        assert sorted(p.stem for p in (run / "sessions").glob("*.json")) == [
            "01_none_c1",
            "02_ngram-simple_c1",
            "03_ngram-simple_c2",
            "04_none_c2",
        ]
        kept = [r for f in (run / "records").glob("*.jsonl") for r in read_records(f)[0]]
        assert len(kept) == 12 and all(r["valid"] for r in kept)
        assert "resumed" in (run / "resume.log").read_text()
        assert servers_of(server_bin) == []


class TestGates:
    def test_expect_sets_the_exit_status(self, pytester: pytest.Pytester) -> None:
        # The stub streams b at 1 ms a token against a's default 2 ms: a known, large effect.
        # six prompts: fewer make the decision `insufficient`, whatever the effect
        few = stub_project(pytester, ["--stub-token-ms", "1"], prompts=6)
        # four cycles: two give the session-level interval one degree of freedom, and on a busy
        # CI host even this 2x effect came out `inconclusive` at two
        ok = run_stub(
            pytester, few, "--no-calibration", "--max-tokens=32", "--cycles=4",
            "--expect=b:prose:faster",
        )  # fmt: skip
        assert ok.ret == pytest.ExitCode.OK
        ok.stdout.fnmatch_lines(["*vs baseline 'a'*", "*b*prose*faster*"])
        # the CLI on the same records gives the same numbers as the session end did
        run = only_run(pytester.path)
        out = pytester.path / "cli"
        assert run_cli(["analyse", str(run), "--boot", "1000", "--out", str(out)]) == 0
        assert (out / "contrasts.csv").read_bytes() == (
            run / "analysis" / "contrasts.csv"
        ).read_bytes()
        shutil.rmtree(pytester.path / "runs")
        bad = run_stub(
            pytester, few, "--no-calibration", "--max-tokens=32", "--cycles=4",
            "--expect=b:prose:slower",
        )  # fmt: skip
        assert bad.ret == pytest.ExitCode.TESTS_FAILED
        bad.stdout.fnmatch_lines(["*--expect not met:*b*prose*slower*faster*"])
        # the gate is a test item of its own: the measurements pass, the gate fails
        bad.assert_outcomes(passed=48, failed=1)
        bad.stdout.fnmatch_lines(["FAILED mtpsweep::expect[[]b:prose:slower[]]*"])

    def test_bad_expectation_is_a_usage_error(self, pytester: pytest.Pytester) -> None:
        few = stub_project(pytester, [])
        result = run_stub(pytester, few, "--expect=c:prose:faster")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "--expect c:prose:faster" in result.stderr.str()


class TestDiskFull:
    def test_a_full_disk_stops_in_one_line_and_keeps_every_complete_record(
        self, pytester: pytest.Pytester
    ) -> None:
        # RLIMIT_FSIZE stands in for a full disk (no mount needed): any write past 6300 bytes
        # of a file fails, as ENOSPC would; the records file reaches it on its fourth record
        # (about 1.6 kB each at 16 tokens), while the session file (about 4.6 kB, more with a
        # long temporary path, as under xdist) still fits.
        few = stub_project(pytester, [], prompts=6)

        def small_files() -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (6300, 6300))

        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "experiments/",
                "--ladder=stub",
                f"--server-bin={STUB}",
                f"--prompts-dir={few}",
                "--no-calibration",
                "--boot=1000",
                "--max-tokens=16",
            ],
            cwd=pytester.path,
            preexec_fn=small_files,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        out = done.stdout + done.stderr
        assert done.returncode == pytest.ExitCode.INTERRUPTED, out
        assert "Traceback" not in out and "OSError" not in out
        assert "** WRITE-FAILED at 01_a_c1/c1-a-prose_04" in out and "File too large" in out
        run = only_run(pytester.path)
        kept, torn = read_records(run / "quarantine" / "01_a_c1" / "records.jsonl")
        assert torn == 0 and [r["prompt_id"] for r in kept] == ["prose_01", "prose_02", "prose_03"]
        assert not (run / "STOPPED").exists()  # once there is room again, it may be resumed
        assert "01_a_c1" in (run / "sessions.csv").read_text()
        assert "every session with records was quarantined (01_a_c1)" in out
        assert stubs_running() == []


# The modules are looked up by their full names, never as `from package import module`: an
# earlier in-process run on the same xdist worker can leave the package holding a module object
# that pytester has since dropped from sys.modules, and patching that stale copy patches nothing
# the run calls (CI once saw the fault never fire).
FAULT_CONFTEST = """
import importlib
import pytest
from pytest_mtpsweep.base.errors import RunDirError
from pytest_mtpsweep.state.rundir import RunDir
lifecycle = importlib.import_module("pytest_mtpsweep.protocol.lifecycle")
server = importlib.import_module("pytest_mtpsweep.rig.server")

calls = []
real = getattr({owner}, {name!r})

{fake}

@pytest.fixture(autouse=True, scope="session")
def _fault():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr({owner}, {name!r}, fake)
        yield
"""


def inject(pytester: pytest.Pytester, owner: str, name: str, fake: str) -> None:
    """A sandbox conftest that replaces `owner.name` with `fake` for the run's whole session."""
    conftest = FAULT_CONFTEST.format(owner=owner, name=name, fake=fake)
    (pytester.path / "experiments" / "conftest_fault.py").write_text(conftest)
    conf = pytester.path / "experiments" / "conftest.py"
    conf.write_text(conf.read_text() + "\nfrom conftest_fault import _fault  # noqa\n")


class TestStartFailures:
    def test_an_unexpected_error_after_the_launch_stops_that_server(
        self, pytester: pytest.Pytester
    ) -> None:
        few = stub_project(pytester, [], prompts=1)
        inject(
            pytester,
            "lifecycle",
            "_witness",
            "def fake(*a, **k):\n    raise ValueError('Out of range float')",
        )
        result = run_stub(pytester, few, "--no-calibration", "-k", "c1")
        result.assert_outcomes(errors=2)
        result.stdout.fnmatch_lines(["*session 01_a_c1: session start failed: Out of range float"])
        assert "During handling" not in result.stdout.str()
        run = only_run(pytester.path)
        for name in ("01_a_c1", "02_b_c1"):  # each filed, neither left running
            info = json.loads((run / "sessions" / f"{name}.json").read_text())
            assert info["error"] == "Out of range float" and info["released"] is True
        assert stubs_running() == []

    def test_a_full_disk_at_session_start_stops_the_run_in_one_line(
        self, pytester: pytest.Pytester
    ) -> None:
        few = stub_project(pytester, [], prompts=1)
        inject(
            pytester,
            "RunDir",
            "write_text_new",
            "def fake(*a, **k):\n"
            "    raise RunDirError('cannot write flags.txt (No space left on device); free space')",
        )
        result = run_stub(pytester, few, "--no-calibration")
        assert result.ret == pytest.ExitCode.INTERRUPTED
        out = result.stdout.str()
        assert "No space left on device" in out and "Traceback" not in out
        assert stubs_running() == []

    def test_a_session_file_that_cannot_be_written_still_quarantines(
        self, pytester: pytest.Pytester
    ) -> None:
        few = stub_project(pytester, [], prompts=1)
        inject(
            pytester,
            "RunDir",
            "write_json",
            "def fake(self, relpath, obj):\n"
            "    if relpath.startswith('sessions/'):\n"
            "        raise RunDirError(f'cannot write {relpath} (No space left on device)')\n"
            "    return real(self, relpath, obj)",
        )
        result = run_stub(pytester, few, "--no-calibration")
        assert result.ret == pytest.ExitCode.INTERRUPTED
        assert "Traceback" not in result.stdout.str()
        run = only_run(pytester.path)
        reason = (run / "quarantine" / "01_a_c1" / "reason.txt").read_text()
        assert "its session file could not be written" in reason
        assert list((run / "records").iterdir()) == []  # nothing unfiled enters the analysis
        assert stubs_running() == []


class TestStall:
    def test_a_stall_mid_answer_is_invalid_and_the_session_rerun(
        self, pytester: pytest.Pytester, tmp_path: Path
    ) -> None:
        # Only the first server for b falls silent for 5 s mid-answer (its second measurement);
        # the stall watch cuts it at the 1 s threshold (issue 43), long before the server goes on.
        wrapper = staged_stub(tmp_path, "--fault stall=5@3")
        few = stub_project(pytester, [])
        ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
        ladder.write_text("stall_threshold_s = 1\n" + ladder.read_text())
        junit = tmp_path / "junit.xml"
        result = run_stub(
            pytester, few, "--no-calibration", "-k", "c1", f"--junitxml={junit}", server_bin=wrapper
        )
        # The re-run completed the census: the stalled case is a rerun, not a failure, and the
        # run exits 0 (the re-run itself is the protocol's, not a test).
        assert result.ret == pytest.ExitCode.OK
        outcomes = result.parseoutcomes()
        assert (outcomes["passed"], outcomes["rerun"], outcomes.get("failed")) == (3, 1, None)
        case = ET.parse(junit).getroot().find(".//testcase[@name='test_decode[c1-b-prose_02]']")
        assert case is not None and case.find("failure") is None
        first = case.find("rerunFailure")
        assert first is not None and "stalled" in first.get("message", "")
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert str(props["first_attempt"]).startswith("call failed:")
        assert "02_b_c1 was re-run" in str(props["rerun"])
        run = only_run(pytester.path)
        q = run / "quarantine" / "02_b_c1"
        assert "partial census: 1 of 2" in (q / "reason.txt").read_text()
        stalled = read_records(q / "records.jsonl")[0][1]
        assert str(stalled["reason"]).startswith(
            "stalled: the stream fell silent for more than 1 s"
        )
        # the silence up to the cut: past the threshold, short of the server's 5 s
        assert 1.0 < float(str(stalled["max_gap_s"])) < 5.0
        rerun = read_records(run / "records" / "02_b_c1.jsonl")[0]
        assert [r["valid"] for r in rerun] == [True, True]
        assert all(float(str(r["max_gap_s"])) < 1.0 for r in rerun)


class TestInterruptedFiling:
    def test_ctrl_c_while_a_session_is_filed_lets_the_filing_finish(
        self, pytester: pytest.Pytester
    ) -> None:
        # b's second measurement answers HTTP 400 (a partial census, so the session is set
        # aside); the Ctrl-C arrives as its session file is written, before its quarantine.
        few = stub_project(pytester, ["--fault", "http-400@3"], prompts=2)
        inject(
            pytester,
            "RunDir",
            "write_json",
            "import os, signal\n"
            "def fake(self, relpath, obj):\n"
            "    if relpath.endswith('02_b_c1.json'):\n"
            "        os.kill(os.getpid(), signal.SIGINT)\n"
            "    return real(self, relpath, obj)",
        )
        proc = spawn_pytest(
            pytester.path, "experiments/", "--ladder=stub", f"--server-bin={STUB}",
            f"--prompts-dir={few}", "--no-calibration", "--boot=1000", "-k", "c1",
        )  # fmt: skip
        try:
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        out = (pytester.path / "run.log").read_text()
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
        run = only_run(pytester.path)
        # filed whole: its session file and records moved into quarantine, out of the analysis
        q = run / "quarantine" / "02_b_c1"
        assert (q / "reason.txt").read_text().startswith("partial census: 1 of 2"), out
        info = json.loads((q / "session.json").read_text())
        assert str(info["quarantined"]).startswith("partial census: 1 of 2")
        assert len(read_records(q / "records.jsonl")[0]) == 2
        assert not (run / "records" / "02_b_c1.jsonl").exists()
        assert not (run / "sessions" / "02_b_c1.json").exists()
        assert "mtpsweep 02_b_c1 closed" not in out  # the re-run never started
        assert "Traceback" not in out
        assert stubs_running() == []


class TestFrozenServer:
    def test_timeout_on_a_sigstopped_server_quarantines_and_leaves_nothing_running(
        self, pytester: pytest.Pytester, tmp_path: Path
    ) -> None:
        # A measurement takes ~1 s (8 tokens, 100 ms apart); a session's first item, which also
        # starts its server and warms it up, stays well inside the 10 s timeout. The first b
        # server's second measurement stalls for a minute: the freeze lands mid-answer however
        # busy the machine is.
        wrapper = staged_stub(tmp_path, "--fault stall=60@3")
        few = stub_project(pytester, ["--stub-token-ms", "100"], prompts=3)
        proc = spawn_pytest(
            pytester.path, "experiments/", "--ladder=stub", f"--server-bin={wrapper}",
            f"--prompts-dir={few}", "--no-calibration", "--boot=1000", "--timeout=10",
        )  # fmt: skip
        frozen = None
        try:
            wait_for_record(pytester.path, "02_b_c1.jsonl", proc)
            frozen = next(p for p in stubs_running() if " b " in " ".join(p.cmdline()))
            frozen.suspend()  # SIGSTOP: the whole server stops answering, mid-stream
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
            if frozen is not None and frozen.is_running():
                frozen.kill()
        out = (pytester.path / "run.log").read_text()
        assert "Timeout" in out, out
        run = only_run(pytester.path)
        q = run / "quarantine" / "02_b_c1"
        assert (q / "session.json").is_file(), out
        assert "interrupted" in (q / "reason.txt").read_text()
        assert not (run / "records" / "02_b_c1.jsonl").exists()  # out of the analysis
        info = json.loads((q / "session.json").read_text())
        assert info["released"] is True and info["release"]["signal"] == "SIGTERM"
        nxt = json.loads((run / "sessions" / "03_b_c2.json").read_text())
        assert nxt["valid"] == 3 and nxt["released"] is True
        assert not frozen.is_running() or frozen.status() == psutil.STATUS_ZOMBIE
        assert stubs_running() == []

    def test_a_timeout_inside_the_server_stop_still_files_and_quarantines(
        self, pytester: pytest.Pytester
    ) -> None:
        # pytest-timeout firing while the close waits for the server to exit (it did, on the
        # landed code, when a frozen server ignored SIGTERM): the first wait is interrupted.
        few = stub_project(pytester, [], prompts=2)
        inject(
            pytester,
            "server",
            "_wait_gone",
            "def fake(*a, **k):\n"
            "    calls.append(1)\n"
            "    if len(calls) == 1:\n"
            "        pytest.fail('Timeout (>5.0s) from pytest-timeout.')\n"
            "    return real(*a, **k)",
        )
        result = run_stub(pytester, few, "--no-calibration", "-k", "c1")
        # the interruption surfaces in the next item's setup (where pytest closes the session)
        result.assert_outcomes(passed=3, errors=1)
        run = only_run(pytester.path)
        q = run / "quarantine" / "01_a_c1"
        assert (
            "the session close was interrupted (Failed: Timeout" in (q / "reason.txt").read_text()
        )
        info = json.loads((q / "session.json").read_text())
        assert info["measured"] == 2 and info["released"] is True
        assert info["release"]["signal"] == "SIGKILL (the stop was interrupted)"
        assert (run / "sessions" / "02_b_c1.json").is_file()
        assert stubs_running() == []


class TestInterrupts:
    def test_ctrl_c_twice_exits_in_one_line_with_nothing_left_running(
        self, pytester: pytest.Pytester
    ) -> None:
        few = stub_project(pytester, ["--stub-token-ms", "50"], prompts=4)
        proc = spawn_pytest(
            pytester.path, "experiments/", "--ladder=stub", f"--server-bin={STUB}",
            f"--prompts-dir={few}", "--no-calibration", "--boot=1000",
        )  # fmt: skip
        try:
            wait_for_record(pytester.path, "02_b_c1.jsonl", proc)
            proc.send_signal(signal.SIGINT)
            time.sleep(0.05)  # the second arrives while the first is still being handled
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        out = (pytester.path / "run.log").read_text()
        assert proc.returncode == 130, out
        assert "Traceback" not in out and out.count("mtpsweep: interrupted twice") == 1
        run = only_run(pytester.path)
        for f in run.glob("**/*.jsonl"):
            assert read_records(f)[1] == 0, f  # every line on disk is a whole record
        assert stubs_running() == []

    def test_ctrl_c_during_the_end_calibration_files_and_quarantines_the_session(
        self, pytester: pytest.Pytester
    ) -> None:
        # Requests per server: 1 warm-up, 2 calibration at start, 3-4 the prompts, 5 the
        # calibration at the end. b's fifth answer stalls for a minute after a few tokens, so
        # the interrupt lands inside the end calibration however loaded the machine is (a 3 s
        # window of slow tokens once let a busy CI runner send it after the close).
        few = stub_project(pytester, ["--fault", "stall=60@5"], prompts=2)
        proc = spawn_pytest(
            pytester.path, "experiments/", "--ladder=stub", f"--server-bin={STUB}",
            f"--prompts-dir={few}", "--max-tokens=2", "--boot=1000",
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            log = None
            while time.monotonic() < deadline and proc.poll() is None:
                logs = list(pytester.path.glob("runs/*/*/servers/02_b_c1.log"))
                log = logs[0] if logs else None
                if log is not None and "request=5" in log.read_text(errors="replace"):
                    break
                time.sleep(0.02)
            assert log is not None and "request=5" in log.read_text(), "no end calibration seen"
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        out = (pytester.path / "run.log").read_text()
        run = only_run(pytester.path)
        q = run / "quarantine" / "02_b_c1"
        assert (
            "the session close was interrupted (KeyboardInterrupt" in (q / "reason.txt").read_text()
        ), out
        info = json.loads((q / "session.json").read_text())
        assert info["measured"] == 2 and info["released"] is True
        assert "end_tps" not in info["calibration"]
        assert not (run / "records" / "02_b_c1.jsonl").exists()  # not used by the analysis
        assert "Traceback" not in out
        assert stubs_running() == []


class TestLeftoverServers:
    def test_a_launched_server_left_by_kill_9_is_named_and_cleaned_up(
        self, pytester: pytest.Pytester
    ) -> None:
        # b's second measurement stalls for a minute: the kill lands while its server is up.
        few = stub_project(pytester, ["--stub-token-ms", "50", "--fault", "stall=60@3"], prompts=4)
        shutil.copytree(REPO / "launchers", pytester.path / "launchers")
        ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
        ladder.write_text(
            ladder.read_text().replace(
                "[server]",
                '[server]\nlaunch = "../../launchers/serve.sh"\nstop = "../../launchers/stop.sh"',
            )
        )
        args = ["--ladder=stub", f"--server-bin={STUB}", f"--prompts-dir={few}"]
        proc = spawn_pytest(pytester.path, "experiments/", *args, "--no-calibration")
        left: list[psutil.Process] = []
        try:
            wait_for_record(pytester.path, "02_b_c1.jsonl", proc)
            os.kill(proc.pid, signal.SIGKILL)  # the launched server is the rig's: it lives on
            proc.wait(10)
            run = only_run(pytester.path)
            (listed,) = json.loads((run / "servers" / "live.json").read_text())["servers"]
            assert listed["session"] == "02_b_c1" and listed["launcher"] is not None
            left = [psutil.Process(listed["pid"])]
            assert left[0].is_running()

            def mtpsweep(*argv: str) -> subprocess.CompletedProcess[str]:
                return subprocess.run(
                    [sys.executable, "-m", "pytest_mtpsweep.cli.main", *argv],
                    cwd=pytester.path, capture_output=True, text=True, timeout=120, check=False,
                    env={**os.environ, "COLUMNS": "300"},  # table cells whole
                )  # fmt: skip

            pre = mtpsweep("preflight", *args[:2])
            assert pre.returncode == 1, pre.stdout + pre.stderr
            row = next(x for x in pre.stdout.splitlines() if x.startswith("server_processes"))
            assert f"pid {listed['pid']} (02_b_c1, launched" in row and "fail" in row
            assert f"mtpsweep cleanup {run}" in pre.stderr

            done = mtpsweep("cleanup", str(run))
            assert done.returncode == 0, done.stdout + done.stderr
            assert "stopped (stop script, exit 0)" in done.stdout
            assert not left[0].is_running() or left[0].status() == psutil.STATUS_ZOMBIE
            again = mtpsweep("preflight", *args[:2])
            row = next(x for x in again.stdout.splitlines() if x.startswith("server_processes"))
            assert "pass" in row
        finally:
            if proc.poll() is None:
                proc.kill()
            for p in left:
                if p.is_running():
                    p.kill()
        assert stubs_running() == []

    def test_live_json_is_empty_after_a_clean_run(self, pytester: pytest.Pytester) -> None:
        few = stub_project(pytester, [], prompts=1)
        run_stub(pytester, few, "--no-calibration", "--no-analysis", "-k", "c1")
        run = only_run(pytester.path)
        assert json.loads((run / "servers" / "live.json").read_text()) == {"servers": []}


class TestResumeTables:
    def test_resuming_a_finished_run_says_so_and_changes_nothing(
        self, pytester: pytest.Pytester
    ) -> None:
        few = stub_project(pytester, [], prompts=2)
        run_stub(pytester, few, "--no-calibration", "--no-analysis").assert_outcomes(passed=8)
        run = only_run(pytester.path)
        before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
        again = run_stub(pytester, few, "--no-calibration", "--no-analysis", f"--resume={run}")
        assert again.ret == pytest.ExitCode.USAGE_ERROR
        again.stdout.fnmatch_lines(
            ["*every selected session already finished*nothing was changed*"]
        )
        after = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
        assert after == before  # sessions.csv (441 bytes, not 2) and every other file

    def test_the_row_table_after_a_resume_has_every_session(
        self, pytester: pytest.Pytester, tmp_path: Path
    ) -> None:
        # The first b server's second measurement stalls for a minute: the kill lands in
        # 02_b_c1 however busy the machine is; the resumed run's b servers answer at once.
        wrapper = staged_stub(tmp_path, "--fault stall=60@3")
        few = stub_project(pytester, ["--stub-token-ms", "30"], prompts=3)
        args = [
            "--ladder=stub", f"--server-bin={wrapper}", f"--prompts-dir={few}", "--no-calibration"
        ]  # fmt: skip
        proc = spawn_pytest(pytester.path, "experiments/", *args, "--no-analysis")
        try:
            wait_for_record(pytester.path, "02_b_c1.jsonl", proc)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        run = only_run(pytester.path)
        result = pytester.runpytest("experiments/", *args, "--no-analysis", f"--resume={run}")
        result.assert_outcomes(passed=9, skipped=3)
        table = result.stdout.str().split("mtpsweep sessions")[1]
        for row in ("1  a", "2  b", "3  b", "4  a"):
            assert f"\n{row} " in table, table  # sessions before the interruption too
        csv = (run / "sessions.csv").read_text().splitlines()
        assert len(csv) == 1 + 5  # four sessions, and the attempt killed mid-way (quarantined)
        assert sum("interrupted before it finished" in line for line in csv) == 1
        assert stubs_running() == []
