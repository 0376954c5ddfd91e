"""`mtpsweep view RUN`: the report in a browser, its path where there is none, or served on
loopback; a directory that is not a run, or has no report yet, is one line naming the fix."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import urllib.request
import webbrowser
from pathlib import Path

import pytest

from pytest_mtpsweep import cli
from pytest_mtpsweep.analysis.html import REPORT_HTML
from pytest_mtpsweep.cli import main
from tests.sandbox import REPO

PAGE = "<!DOCTYPE html><title>report</title><p>headline</p>\n"


def a_run(tmp_path: Path, report: bool = True) -> Path:
    run = tmp_path / "runs" / "demo" / "r1"
    (run / "analysis").mkdir(parents=True)
    (run / "plan.json").write_text(json.dumps({"run_id": "r1"}))
    if report:
        (run / "analysis" / "report.html").write_text(PAGE)
    return run


def test_the_cli_names_the_file_the_analysis_writes() -> None:
    assert cli.REPORT_HTML == REPORT_HTML


def test_a_directory_that_is_not_a_run_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert (
        line
        == f"mtpsweep: {tmp_path} is not a run directory (no plan.json); name one like runs/<ladder>/<id>."
    )


def test_a_run_without_a_report_names_the_command_that_writes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = a_run(tmp_path, report=False)
    assert main(["view", str(run)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith(f"write it: mtpsweep analyse {run}") and "has no report yet" in line


class Browser:
    def __init__(self) -> None:
        self.opened: list[str] = []

    def open(self, url: str) -> bool:
        self.opened.append(url)
        return True


def test_the_report_opens_in_the_browser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = a_run(tmp_path)
    browser = Browser()
    monkeypatch.setattr(webbrowser, "get", lambda: browser)
    assert main(["view", str(run)]) == 0
    assert browser.opened == [(run / "analysis" / "report.html").resolve().as_uri()]
    assert capsys.readouterr().out == f"opened {run / 'analysis' / 'report.html'}\n"


def test_without_a_browser_the_path_is_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def none() -> Browser:
        raise webbrowser.Error("could not locate runnable browser")

    run = a_run(tmp_path)
    monkeypatch.setattr(webbrowser, "get", none)
    assert main(["view", str(run)]) == 0
    path = (run / "analysis" / "report.html").resolve()
    assert capsys.readouterr().out == f"no browser found here; open {path}\n"


def test_serve_answers_on_loopback_until_ctrl_c(tmp_path: Path) -> None:
    run = a_run(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_mtpsweep.cli", "view", str(run), "--serve"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            assert sel.select(timeout=60), "no URL printed within 60 s"
        line = proc.stdout.readline()
        url = line.split(": ", 1)[1].split()[0]
        assert line.startswith(f"serving {run} on loopback only: http://127.0.0.1:")
        assert url.endswith("/analysis/report.html") and line.rstrip().endswith("(Ctrl-C stops)")
        with urllib.request.urlopen(url, timeout=30) as answer:
            assert answer.status == 200 and answer.read().decode() == PAGE
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and out == "stopped serving\n"


def test_a_port_that_is_not_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["view", "RUN", "--port", "70000"])
    assert "'70000' is not a port (0 to 65535; 0: a free one)" in capsys.readouterr().err


def test_a_port_in_use_is_one_line_naming_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    run = a_run(tmp_path)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert main(["view", str(run), "--serve", "--port", str(port)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"mtpsweep: cannot listen on 127.0.0.1:{port} (")
    assert line.endswith("pass another --port, or 0 for a free one.")
