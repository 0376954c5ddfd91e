"""The red-team's bad inputs (issue 14, part B): each is refused in one line, before any
server starts and before a run directory exists, never with a traceback.

Run through pytest with the STUB server, so that a refusal that came too late (after a launch)
would show as a started server or a run directory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.protocol.test_session import STUB, stub_project, stubs_running

Setup = Callable[[Path, Path], list[str]]  # (sandbox, prompt dir) -> extra args


def prompt(name: str, body: bytes | None = None, link: bool = False, folder: bool = False) -> Setup:
    def setup(root: Path, few: Path) -> list[str]:
        path = few / name
        if link:
            os.symlink(path, path)
        elif folder:
            path.mkdir()
        else:
            path.write_bytes(body or b"x")
        return []

    return setup


def ladder_text(edit: Callable[[str], str]) -> Setup:
    def setup(root: Path, few: Path) -> list[str]:
        path = root / "experiments" / "ladders" / "stub.toml"
        path.write_text(edit(path.read_text()))
        return []

    return setup


def ladder_file(kind: str) -> Setup:
    def setup(root: Path, few: Path) -> list[str]:
        path = root / "experiments" / "ladders" / "stub.toml"
        path.unlink()
        if kind == "binary":
            path.write_bytes(b"\x00\xff\xfe" * 10)
        elif kind == "latin-1":
            path.write_bytes(b'question = "caf\xe9"\n')
        elif kind == "loop":
            os.symlink(path, path)
        else:
            path.mkdir()
        return [f"--ladder={path}"]

    return setup


def model(data: bytes) -> Setup:
    def setup(root: Path, few: Path) -> list[str]:
        bad = root / "bad.gguf"
        bad.write_bytes(data)
        return [f"--model={bad}"]

    return setup


def attached(url: str) -> Setup:
    return ladder_text(lambda s: s.replace('key = "b"', f'key = "b"\nbase_url = "{url}"', 1))


def args(*extra: str) -> Setup:
    return lambda root, few: list(extra)


def run_dir(where: Callable[[Path], Path]) -> Setup:
    def setup(root: Path, few: Path) -> list[str]:
        return [f"--run-dir={where(root)}"]

    return setup


def a_file(root: Path) -> Path:
    (root / "afile").write_text("x")
    return root / "afile" / "run"


def existing(root: Path) -> Path:
    (root / "there").mkdir()
    return root / "there"


USAGE, FAILED = pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.TESTS_FAILED
CASES: dict[str, tuple[Setup, int, str]] = {
    "prompt not utf-8": (prompt("prose_03.txt", b"caf\xe9"), USAGE, "not UTF-8"),
    "prompt binary": (prompt("prose_03.txt", b"\x00\x01bin"), USAGE, "binary"),
    "prompt symlink loop": (prompt("prose_03.txt", link=True), USAGE, "cannot be read"),
    "prompt a directory": (prompt("prose_03.txt", folder=True), USAGE, "is a directory"),
    "prompt prose.txt": (prompt("prose.txt"), USAGE, "prose_<nn>.txt"),
    "prompt prose_1_a.txt": (prompt("prose_1_a.txt"), USAGE, "prose_<nn>.txt"),
    "ladder not utf-8": (ladder_file("latin-1"), USAGE, "not UTF-8"),
    "ladder binary": (ladder_file("binary"), USAGE, "not UTF-8"),
    "ladder symlink loop": (ladder_file("loop"), USAGE, "a symlink that leads nowhere"),
    "ladder a directory": (ladder_file("dir"), USAGE, "is a directory"),
    "one treatment": (
        ladder_text(lambda s: s.split('[[treatments]]\nkey = "b"')[0]),
        USAGE,
        "at least two",
    ),
    "expect the baseline": (args("--expect=a:prose:faster"), USAGE, "is the baseline itself"),
    "unknown baseline": (args("--baseline=nosuch"), USAGE, "not a treatment"),
    "boot 0": (args("--boot=0"), USAGE, "--boot 0"),
    "boot -1": (args("--boot=-1"), USAGE, "--boot -1"),
    "boot seed -1": (args("--boot-seed=-1"), USAGE, "--boot-seed -1"),
    "endpoint speed": (
        ladder_text(lambda s: s + '[analysis]\nprimary_endpoint = "speed"\n'),
        USAGE,
        "analysis.primary_endpoint",
    ),
    "margin -5": (ladder_text(lambda s: s + "[analysis]\nmargin_pct = -5\n"), USAGE, "margin"),
    "temperature inf": (args("--temperature=inf"), USAGE, "not a finite number"),
    "temperature nan": (args("--temperature=nan"), USAGE, "not a finite number"),
    "repeats 0": (args("--repeats=0"), USAGE, "'repeats' is 0"),
    "stall 0": (ladder_text(lambda s: "stall_threshold_s = 0\n" + s), USAGE, "stall_threshold_s"),
    "bad preflight port": (
        ladder_text(lambda s: s + "[preflight]\nports = [0]\n"),
        USAGE,
        "preflight.ports",
    ),
    "unresolvable host": (
        ladder_text(lambda s: s.replace("[server]", '[server]\nhost = "no-such-host.invalid"')),
        FAILED,
        "cannot resolve no-such-host.invalid",
    ),
    "0-byte model": (model(b""), FAILED, "empty file (0 bytes)"),
    "not a gguf": (model(b"<html>not found</html>"), FAILED, "not a GGUF file"),
    "run dir under /proc": (run_dir(lambda r: Path("/proc/mtpsweep-run")), FAILED, "pseudo"),
    "run dir under /sys": (run_dir(lambda r: Path("/sys/mtpsweep/run")), FAILED, "pseudo"),
    "run dir under a file": (run_dir(a_file), FAILED, "is not a directory"),
    # round three (issue 22): URLs parsed once, at load, with the rules a request applies
    "base_url bad IPv6": (attached("http://[::1"), USAGE, "Invalid IPv6 URL"),
    "base_url port abc": (attached("http://127.0.0.1:abc"), USAGE, "not a valid URL"),
    "base_url port 99999": (attached("http://127.0.0.1:99999"), USAGE, "Port out of range"),
    "max_tokens 2**63": (args(f"--max-tokens={2**63}"), USAGE, "max_tokens"),
    # round six (issue 50): a sweep lint refused ran under pytest
    "sweep on --ctx-size": (
        ladder_text(
            lambda s: s + '[sweep]\nflag = "--ctx-size"\nvalues = [512, 1024]\nfrom = "low"\n'
        ),
        USAGE,
        "harness sets",
    ),
    "sweep value nan": (
        ladder_text(lambda s: s + '[sweep]\nflag = "--x-y"\nvalues = [1.0, nan]\nfrom = "low"\n'),
        USAGE,
        "finite numbers",
    ),
    "treatment args --port": (
        ladder_text(lambda s: s.replace('key = "a"', 'key = "a"\nargs = ["--port", "9"]', 1)),
        USAGE,
        "--port is set by the harness from server.port",
    ),
    "server args {modle}": (
        ladder_text(lambda s: s.replace("[server]", '[server]\nargs = ["-md", "{modle}"]', 1)),
        USAGE,
        "names {modle}, which nothing replaces",
    ),
    "run dir exists, waived": (
        lambda root, few: [f"--run-dir={existing(root)}", "--waive=run_dir"],
        USAGE,
        "already exists",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_input_is_one_line_before_anything_starts(
    pytester: pytest.Pytester, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # preflight cells whole, so the needle is findable
    setup, code, needle = CASES[case]
    few = stub_project(pytester, [], prompts=2)
    extra = setup(pytester.path, few)
    argv = ["--ladder=stub", *[a for a in extra if a.startswith("--ladder=")][-1:]]
    result = pytester.runpytest(
        "experiments/", argv[-1], f"--server-bin={STUB}", f"--prompts-dir={few}",
        *[a for a in extra if not a.startswith("--ladder=")],
    )  # fmt: skip
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == code, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    hits = [line for line in out.splitlines() if needle in line]
    assert hits, out  # the message names the problem ...
    assert not any(line.startswith(("E   ", "    ")) for line in hits)  # ... on its own line
    assert not list((pytester.path / "runs").glob("*/*/records")), "a run began"
    if case != "run dir exists, waived":
        assert not (pytester.path / "runs").exists()
    assert stubs_running() == []


# Round six (issue 50): what the tool wrote earlier is never trusted blindly when it is read back.


@pytest.mark.parametrize(
    ("analysis", "stop", "needle"),
    [
        ({"margin_pct": 1e308}, None, "`analysis.margin_pct` is 1e+308"),
        ({}, {"looks": [10**18]}, "`stop.looks` is [1000000000000000000]"),
    ],
)
def test_a_hand_edited_plan_is_refused_by_analyse_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    analysis: dict[str, object],
    stop: dict[str, object] | None,
    needle: str,
) -> None:
    import json

    from pytest_mtpsweep.cli.main import main
    from tests.strategies import Design, make_plan, make_records, noisy, write_run

    design = Design(treatments=("none", "b"), cycles=4)
    plan = make_plan(design, analysis=analysis)
    if stop is not None:
        plan["stop"] = {"rule": "decided", "spending": "pocock", "confidence": [0.95],
                        "equivalence_confidence": [0.9], "width_pct": None, **stop}  # fmt: skip
    run = write_run(tmp_path, design, make_records(design, noisy(design, {"b": 1.86})), plan=plan)
    assert json.loads((run / "plan.json").read_text())["analysis"] or stop
    assert main(["analyse", str(run)]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (run / "analysis").exists()  # nothing published "equivalent"
