"""End to end against the real llama-server and the real embedded models (CPU)."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import psutil
import pytest

from tests.sandbox import (
    MACHINERY_MODEL,
    REPO,
    copy_experiments,
    only_run,
    prompt_dir,
    read_records,
    servers_of,
    spawn_pytest,
    wait_for_record,
)

SMALL = f"""
question = "Does ngram-simple decode faster than none on the small model?"
baseline = "none"
cycles = 2
max_tokens = 16
placement = "cpu"
[model]
path = "{MACHINERY_MODEL}"
id = "m"
[server]
args = ["--parallel", "1"]
port = 0
ctx_size = 2048
ready_timeout_s = 120
[[treatments]]
key = "none"
[[treatments]]
key = "ngram-simple"
args = ["--spec-type", "ngram-simple"]
"""

RECORD_KEYS = {
    "run_id",
    "ladder",
    "treatment",
    "cycle",
    "ordinal",
    "prompt_id",
    "subset",
    "repeat",
    "valid",
    "reason",
    "decode_rate_tps_primary",
    "decode_rate_tps_interval",
    "interval_basis",
    "ttft_s",
    "prompt_tokens",
    "completion_tokens",
    "draft_n",
    "draft_n_accepted",
    "finish_reason",
    "content_chars",
    "content_sha256",
    "chunks",
    "server_alias",
    "started_at",
}


@pytest.fixture
def project(pytester: pytest.Pytester, server_bin: Path, machinery_model: Path) -> pytest.Pytester:
    """The shipped experiments plus a small two-treatment ladder, in a sandbox."""
    copy_experiments(pytester, {"small": SMALL})
    prompt_dir(pytester, ["prose_01", "structured_01"])
    return pytester


class TestSmallLadder:
    def test_records_sessions_argv_and_release(
        self, project: pytest.Pytester, server_bin: Path
    ) -> None:
        result = project.runpytest(
            "experiments/", "--ladder=small", f"--prompts-dir={project.path / 'few'}"
        )
        result.assert_outcomes(passed=8)
        run = only_run(project.path)

        plan = json.loads((run / "plan.json").read_text())
        assert [(s["ordinal"], s["treatment"], s["cycle"]) for s in plan["sessions"]] == [
            (1, "none", 1),
            (2, "ngram-simple", 1),
            (3, "ngram-simple", 2),
            (4, "none", 2),
        ]
        assert plan["keyed"]["server_build"] == "b11434-515e85511"

        records = []
        for f in sorted((run / "records").glob("*.jsonl")):
            rows, bad = read_records(f)
            assert bad == 0
            records += rows
        assert len(records) == 8
        for r in records:
            assert r.keys() >= RECORD_KEYS
            assert r["valid"] is True and r["reason"] is None
            assert r["server_alias"] == f"m-{r['treatment']}"
            assert r["completion_tokens"] == 16 and r["finish_reason"] == "length"
            assert r["decode_rate_tps_primary"] > 0 and r["interval_basis"] == "server_timings"
            assert r["started_at"].endswith("Z")
            # the tiny model's text is no answer: every record says so (rig/tinymodel.py)
            tiny = MACHINERY_MODEL == "embedded:tiny"
            assert str(r["degenerate"]).startswith("not language: the tiny model") == tiny
        assert {r["ordinal"] for r in records} == {1, 2, 3, 4}
        # the n-gram drafter really ran: the server reports drafted tokens only for that treatment
        assert all(r["draft_n"] is None for r in records if r["treatment"] == "none")
        # the mechanism (issue 49): steps and tokens per step where it drafted, none where not
        for r in records:
            if r["draft_n"] is None:
                assert r["tokens_per_step"] is None and r["spec_steps"] is None
                continue
            assert r["mechanism_invalid"] is None
            assert r["spec_steps"] == r["predicted_n"] - 1 - r["draft_n_accepted"] >= 1
            assert r["tokens_per_step"] == pytest.approx((r["predicted_n"] - 1) / r["spec_steps"])
            assert r["step_ms"] == pytest.approx(r["predicted_ms"] / r["spec_steps"])

        sessions = sorted((run / "sessions").glob("*.json"))
        assert [s.stem for s in sessions] == [
            "01_none_c1",
            "02_ngram-simple_c1",
            "03_ngram-simple_c2",
            "04_none_c2",
        ]
        for s in sessions:
            info = json.loads(s.read_text())
            argv = info["argv"]
            assert argv[0] == str(server_bin) and argv[argv.index("--host") + 1] == "127.0.0.1"
            assert argv[argv.index("--alias") + 1] == info["alias"]
            assert ("--spec-type" in argv) == (info["treatment"] == "ngram-simple")
            assert info["n_ctx"] == 2048 and info["build_info"] == "b11434-515e85511"
            # a live process read from /proc: the tiny model's server holds ~90 MiB
            assert info["load_s"] > 0 and info["rss_after_load_bytes"] > 32 * 2**20
            assert info["released"] is True and info["warmup"]["valid"] is True
            assert info["measured"] == info["valid"] == 2
            assert info["props_stable"] is True and info["props_changed"] == []
            assert info["props_end"]["model_alias"] == info["alias"]
        assert len(list((run / "servers").glob("*.flags.txt"))) == 4
        # the two ngram-simple sessions keep a flags file each, with the argv each really ran
        for name in ("02_ngram-simple_c1", "03_ngram-simple_c2"):
            argv = json.loads((run / "sessions" / f"{name}.json").read_text())["argv"]
            assert (run / "servers" / f"{name}.flags.txt").read_text() == " ".join(argv) + "\n"
            assert "--spec-type ngram-simple" in " ".join(argv)
        assert (run / "sessions.csv").read_text().count("\n") == 5
        result.stdout.fnmatch_lines(
            ["*mtpsweep sessions*", "2*ngr*1*2/2/2/0*length 2*yes*"]  # shortened at 80 columns
        )
        # the first session's shakedown, from its records: the real server streams for real
        result.stdout.fnmatch_lines(
            ["row-1 shakedown (01_none_c1, 2 responses): 0 non-chunked, usage 2/2,"
             " token-basis agreement 2/2, 0 hidden events"]
        )  # fmt: skip
        if MACHINERY_MODEL == "embedded:tiny":
            result.stdout.fnmatch_lines(["*this run measures the machinery*not a model*"])
        assert servers_of(server_bin) == []

    def test_k_starts_exactly_the_selected_servers(
        self, project: pytest.Pytester, server_bin: Path
    ) -> None:
        result = project.runpytest(
            "experiments/",
            "--ladder=drafters-cpu",
            f"--model={MACHINERY_MODEL}",
            "-k",
            "ngram-mod and prose",
            "--max-tokens=8",
            "--port=0",
            "--cycles=2",
        )
        result.assert_outcomes(passed=16, deselected=80)
        run = only_run(project.path)
        assert sorted(p.name for p in (run / "servers").glob("*.log")) == [
            "03_ngram-mod_c1.log",
            "04_ngram-mod_c2.log",
        ]
        assert [s["selected"] for s in json.loads((run / "plan.json").read_text())["sessions"]] == [
            False,
            False,
            True,
            True,
            False,
            False,
        ]
        assert servers_of(server_bin) == []


class TestFailures:
    def test_server_that_exits_at_start_fails_its_session_only(
        self, project: pytest.Pytester, server_bin: Path
    ) -> None:
        bad = SMALL.replace(
            'args = ["--spec-type", "ngram-simple"]', 'args = ["--spec-type", "no-such-type"]'
        )
        (project.path / "experiments" / "ladders" / "bad.toml").write_text(bad)
        result = project.runpytest(
            "experiments/", "--ladder=bad", f"--prompts-dir={project.path / 'few'}"
        )
        result.assert_outcomes(passed=4, errors=4)
        result.stdout.fnmatch_lines(
            [
                "*session 02_ngram-simple_c1: the server exited with status 1 while loading*",
                "*unknown speculative type: no-such-type*",
            ]
        )
        run = only_run(project.path)
        info = json.loads((run / "sessions" / "02_ngram-simple_c1.json").read_text())
        assert "exited with status" in info["error"] and info["measured"] == 0
        assert servers_of(server_bin) == []

    def test_served_context_must_match_the_request(
        self, project: pytest.Pytester, server_bin: Path
    ) -> None:
        # Four slots share the 2048 context, so each serves 512: the witness must refuse it.
        (project.path / "experiments" / "ladders" / "np.toml").write_text(
            SMALL.replace('args = ["--parallel", "1"]', 'args = ["--parallel", "4"]')
        )
        result = project.runpytest(
            "experiments/", "--ladder=np", f"--prompts-dir={project.path / 'few'}", "-k", "c1-none"
        )
        result.assert_outcomes(errors=2)
        result.stdout.fnmatch_lines(["*serves n_ctx 512, not the requested 2048*"])
        info = json.loads((only_run(project.path) / "sessions" / "01_none_c1.json").read_text())
        assert info["released"] is True and info["argv"][-2:] == ["--parallel", "4"]
        assert servers_of(server_bin) == []

    def test_occupied_port_is_named(self, project: pytest.Pytester, server_bin: Path) -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            port = s.getsockname()[1]
            # preflight stops this run first (tests/test_plugin.py); waived, the launch refuses too
            result = project.runpytest(
                "experiments/",
                "--ladder=small",
                f"--port={port}",
                "--waive=ports",
                f"--prompts-dir={project.path / 'few'}",
            )
        result.assert_outcomes(errors=8)
        result.stdout.fnmatch_lines([f"*port {port} on 127.0.0.1 is already in use*"])

    def test_kill_9_of_pytest_leaves_no_server_and_whole_lines(
        self, project: pytest.Pytester, server_bin: Path
    ) -> None:
        proc = spawn_pytest(
            project.path,
            "experiments/",
            "--ladder=small",
            "--max-tokens=256",  # the kill lands mid-session on a fast (tiny) model too
            f"--prompts-dir={project.path / 'few'}",
        )
        try:
            wait_for_record(project.path, "*.jsonl", proc)
            children = [
                c for c in psutil.Process(proc.pid).children() if c.exe() == str(server_bin)
            ]
            assert children, "a server should be running mid-session"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            _, alive = psutil.wait_procs(children, timeout=5)
            assert alive == []
        finally:
            if proc.poll() is None:
                proc.kill()
        for f in project.path.glob("runs/*/*/records/*.jsonl"):
            rows, bad = read_records(f)
            assert bad == 0 and rows


class TestExternalLaunchers:
    @pytest.fixture
    def launched(self, project: pytest.Pytester) -> pytest.Pytester:
        shutil.copytree(REPO / "launchers", project.path / "launchers")
        ladder = SMALL.replace(
            "[server]",
            '[server]\nlaunch = "../../launchers/serve.sh"\nstop = "../../launchers/stop.sh"',
        )
        (project.path / "experiments" / "ladders" / "ext.toml").write_text(ladder)
        return project

    def test_reference_pair_runs_every_treatment(
        self, launched: pytest.Pytester, server_bin: Path
    ) -> None:
        result = launched.runpytest(
            "experiments/", "--ladder=ext", f"--prompts-dir={launched.path / 'few'}"
        )
        result.assert_outcomes(passed=8)
        run = only_run(launched.path)
        info = json.loads((run / "sessions" / "02_ngram-simple_c1.json").read_text())
        assert info["argv"][-2:] == ["--spec-type", "ngram-simple"]
        assert info["launchers"]["launch"]["path"].endswith("launchers/serve.sh")
        assert len(info["launchers"]["launch"]["sha256"]) == 64
        assert info["released"] is True and "stop script stop.sh" in info["release"]["signal"]
        pid = int((run / "servers" / "02_ngram-simple_c1" / "server.pid").read_text())
        assert info["pid"] == pid and not psutil.pid_exists(pid)
        items = {i["name"]: i for i in json.loads((run / "preflight.json").read_text())}
        assert items["launcher:launch"]["verdict"] == "pass"
        assert servers_of(server_bin) == []

    def test_changed_launcher_fails_preflight(self, launched: pytest.Pytester) -> None:
        ladder = launched.path / "experiments" / "ladders" / "ext.toml"
        ladder.write_text(
            ladder.read_text().replace("[server]", f'[server]\nlaunch_sha256 = "{"0" * 64}"')
        )
        result = launched.runpytest(
            "experiments/", "--ladder=ext", f"--prompts-dir={launched.path / 'few'}"
        )
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(["*launcher:launch*fail*", "*no server was started*"])
        assert not (launched.path / "runs").exists()

    def test_launcher_that_drops_treatment_flags_is_caught(
        self, launched: pytest.Pytester, server_bin: Path
    ) -> None:
        # A launcher that "forgets" the treatment: it strips --spec-type and its value.
        bad = launched.path / "launchers" / "forgetful.sh"
        bad.write_text(
            "#!/usr/bin/env bash\n"
            "d=$3; shift 4; args=(); skip=0\n"
            'for a in "$@"; do if [ $skip = 1 ]; then skip=0; continue; fi\n'
            '  if [ "$a" = --spec-type ]; then skip=1; continue; fi; args+=("$a"); done\n'
            'mkdir -p "$d"; setsid "${args[@]}" >>"$d/server.log" 2>&1 </dev/null &\n'
            'echo $! >"$d/server.pid"\n'
        )
        bad.chmod(0o755)
        ladder = launched.path / "experiments" / "ladders" / "ext.toml"
        ladder.write_text(
            ladder.read_text().replace("launchers/serve.sh", "launchers/forgetful.sh")
        )
        result = launched.runpytest(
            "experiments/", "--ladder=ext", f"--prompts-dir={launched.path / 'few'}"
        )
        result.assert_outcomes(passed=4, errors=4)
        result.stdout.fnmatch_lines(
            ["*argv lacks the treatment flags*'--spec-type', 'ngram-simple'*check the launcher*"]
        )
        assert servers_of(server_bin) == []


class TestMemoryStep:
    def test_declared_steps_are_confirmed_or_flagged(self, project: pytest.Pytester) -> None:
        # A draft model really loads a second copy of the weights; ngram drafting loads nothing.
        # 32 MiB: the tiny model's draft copy adds ~64 MiB, the 0.5B model's over 400
        ladder = SMALL + (
            "memory_step_mib = 32\n"
            '[[treatments]]\nkey = "draft"\nmemory_step_mib = 32\n'
            'args = ["--spec-type", "draft-simple", "-md", "{model}"]\n'
        )
        (project.path / "experiments" / "ladders" / "mem.toml").write_text(ladder)
        result = project.runpytest(
            "experiments/",
            "--ladder=mem",
            "--cycles=1",
            "--max-tokens=4",
            "--no-calibration",
            f"--prompts-dir={project.path / 'few'}",
            "-k",
            "prose_01",
        )
        result.assert_outcomes(passed=3, deselected=3)
        steps = {
            s["treatment"]: s
            for s in json.loads((only_run(project.path) / "memory_check.json").read_text())
        }
        assert steps["draft"]["verdict"] == "confirmed" and steps["draft"]["observed_mib"] > 32
        assert steps["ngram-simple"]["verdict"] == "flagged"
        result.stdout.fnmatch_lines(["*memory step ngram-simple: flagged*"])


QWEN_TEMPLATE = "55b2f4a26ac9ee719330a61a0c39d9e538b0e9322212f048326318cff4f8674a"


def records_of(run: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for f in sorted((run / "records").glob("*.jsonl")):
        rows, bad = read_records(f)
        assert bad == 0
        out += rows
    return out


class TestWhatTheModelDid:
    def test_the_embedded_default_answers_every_canonical_prompt(
        self, project: pytest.Pytester
    ) -> None:
        result = project.runpytest(
            "experiments/", "--ladder=drafters-cpu", "-k", "c1-none", "--max-tokens=64", "--port=0",
            "--no-analysis", "--no-calibration",
        )  # fmt: skip
        result.assert_outcomes(passed=16, deselected=176)
        run = only_run(project.path)
        records = records_of(run)
        assert len(records) == 16
        for r in records:
            assert r["degenerate"] is None, (r["prompt_id"], r["degenerate"], r["content"])
            assert isinstance(r["content"], str) and len(r["content"]) > 40
        info = json.loads((run / "sessions" / "01_none_c1.json").read_text())
        assert info["chat_template_sha256"] == QWEN_TEMPLATE
        assert info["chat_template_first_line"] == "{%- if tools %}"
        assert info["degenerate_prompts"] == []
        items = {i["name"]: i for i in json.loads((run / "preflight.json").read_text())}
        assert items["chat_template"]["verdict"] == "pass"
        assert QWEN_TEMPLATE in items["chat_template"]["observed"]

    def test_the_gemma_control_is_flagged_degenerate(self, project: pytest.Pytester) -> None:
        result = project.runpytest(
            "experiments/", "--ladder=gemma-control", "-k", "c1-none and (prose_01 or prose_02)",
            "--port=0", "--no-analysis", "--no-calibration",
        )  # fmt: skip
        result.assert_outcomes(passed=2, deselected=62)
        run = only_run(project.path)
        flagged = [r["degenerate"] for r in records_of(run)]
        assert all(isinstance(d, str) and d for d in flagged), flagged
        info = json.loads((run / "sessions" / "01_none_c1.json").read_text())
        assert info["degenerate_prompts"] == ["prose_01", "prose_02"]
        # llama-server's ChatML fallback (Gemma's GGUF carries no template), which Gemma does not
        # know: its first line is the message loop, the im_start markers come after it
        assert info["chat_template_first_line"] and info["chat_template_sha256"] != QWEN_TEMPLATE
        assert "<|im_start|>" in info["props_start"]["chat_template"]
        result.stdout.fnmatch_lines(["*degen*", "*1*none*1*2/2/0*2*"])
        items = {i["name"]: i for i in json.loads((run / "preflight.json").read_text())}
        assert "none in the GGUF" in items["chat_template"]["observed"]

    def test_a_template_other_than_the_pinned_one_is_refused(
        self, project: pytest.Pytester
    ) -> None:
        ladder = project.path / "experiments" / "ladders" / "drafters-cpu.toml"
        ladder.write_text(ladder.read_text().replace(QWEN_TEMPLATE, "0" * 64))
        refused = project.runpytest(
            "experiments/", "--ladder=drafters-cpu", "-k", "c1-none", "--port=0"
        )
        refused.stdout.fnmatch_lines(["*chat_template*fail*", "*no server was started*"])
        waived = project.runpytest(
            "experiments/", "--ladder=drafters-cpu", "-k", "c1-none and prose_01", "--port=0",
            "--waive=chat_template", "--no-analysis",
        )  # fmt: skip
        waived.assert_outcomes(errors=1, deselected=191)
        waived.stdout.fnmatch_lines(
            ["*uses chat template sha256 " + QWEN_TEMPLATE + "*not the pinned*"]
        )
