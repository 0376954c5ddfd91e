"""`mtpsweep view RUN`: the report in a browser, its path where there is none, or served on
loopback; a directory that is not a run, or has no report yet, is one line naming the fix."""

from __future__ import annotations

import http.client
import http.server
import json
import os
import selectors
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import webbrowser
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_mtpsweep.cli import main as cli
from pytest_mtpsweep.cli import view as viewserver
from pytest_mtpsweep.cli.main import main
from pytest_mtpsweep.report import REPORT_HTML
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
    (run / "records").mkdir()
    (run / "records" / "passwd").symlink_to("/etc/passwd")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_mtpsweep.cli.main", "view", str(run), "--serve"],
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
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(
                url.replace("analysis/report.html", "records/passwd"), timeout=30
            )
        assert refused.value.code == 404
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


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A run directory served in this process (the command's own server), and its port."""
    import threading

    run = a_run(tmp_path)
    (run / "records").mkdir()
    (run / "records" / "a.jsonl").write_text('{"x": 1}\n')
    (run / "records" / "passwd").symlink_to("/etc/passwd")
    (run / "records" / "up").symlink_to(tmp_path)
    (tmp_path / "secret.txt").write_text("outside the run\n")
    handler = type(
        "H", (viewserver.Handler,), {"root": run.resolve(), "page": "analysis/report.html"}
    )
    server = viewserver.Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield run, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def ask(
    port: int, path: str, method: str = "GET", host: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True)
        conn.putheader("Host", host if host is not None else f"127.0.0.1:{port}")
        conn.endheaders()
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        conn.close()


def test_the_report_and_a_record_are_served_with_the_page_policy(served: tuple[Path, int]) -> None:
    _, port = served
    status, headers, body = ask(port, "/analysis/report.html")
    assert status == 200 and body.decode() == PAGE
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["content-security-policy"].startswith("default-src 'none'")
    assert headers["content-type"] == "text/html; charset=utf-8"
    status, headers, body = ask(port, "/records/a.jsonl")
    assert status == 200 and body == b'{"x": 1}\n'
    assert headers["content-type"] == "text/plain; charset=utf-8"
    status, headers, _ = ask(port, "/")
    assert status == 302 and headers["location"] == "/analysis/report.html"


@pytest.mark.parametrize(
    "path",
    [
        "/records/passwd",  # a link in the run to a file outside it
        "/records/up/secret.txt",  # a link to a directory outside it
        "/records/%2e%2e/%2e%2e/secret.txt",  # ../ spelt in percent-escapes
        "/../secret.txt",
        "//etc/passwd",
        "/records/",  # a directory: nothing is listed
        "/records",
        "/analysis",
        "/missing.txt",
    ],
)
def test_nothing_but_a_regular_file_inside_the_run_is_served(
    served: tuple[Path, int], path: str
) -> None:
    status, headers, body = ask(served[1], path)
    assert status == 404, (path, body[:200])
    assert b"root:" not in body and b"outside the run" not in body and b"a.jsonl" not in body
    assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "host", ["evil.example:{port}", "127.0.0.1:1", "127.0.0.1", "", "localhost.evil:{port}"]
)
def test_a_host_header_other_than_loopback_and_this_port_is_refused(
    served: tuple[Path, int], host: str
) -> None:
    port = served[1]
    status, _, body = ask(port, "/analysis/report.html", host=host.format(port=port))
    assert status == 421 and b"headline" not in body


@pytest.mark.parametrize("host", ["localhost:{port}", "[::1]:{port}", "LOCALHOST:{port}"])
def test_every_loopback_name_of_this_port_is_accepted(served: tuple[Path, int], host: str) -> None:
    port = served[1]
    assert ask(port, "/analysis/report.html", host=host.format(port=port))[0] == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "PROPFIND"])
def test_only_get_and_head_are_answered(served: tuple[Path, int], method: str) -> None:
    status, _, body = ask(served[1], "/analysis/report.html", method=method)
    assert status in (405, 501) and b"headline" not in body


def test_head_sends_the_headers_without_the_file(served: tuple[Path, int]) -> None:
    status, headers, body = ask(served[1], "/analysis/report.html", method="HEAD")
    assert status == 200 and body == b"" and headers["content-length"] == str(len(PAGE))


def test_a_fifo_in_the_run_is_refused_without_waiting(served: tuple[Path, int]) -> None:
    run, port = served
    os.mkfifo(run / "records" / "pipe.jsonl")
    assert ask(port, "/records/pipe.jsonl")[0] == 404


def test_a_hard_link_to_a_file_outside_the_run_is_refused(served: tuple[Path, int]) -> None:
    run, port = served
    outside = run.parent / "outside.txt"
    outside.write_text("outside the run\n")
    os.link(outside, run / "records" / "linked.jsonl")
    status, _, body = ask(port, "/records/linked.jsonl")
    assert status == 404 and b"outside the run" not in body
    assert ask(port, "/records/a.jsonl")[0] == 200  # a file with one name is served


def test_a_client_reset_is_one_line_and_the_server_goes_on(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import socket
    import struct
    import threading

    run = a_run(tmp_path)
    (run / "records").mkdir()
    (run / "records" / "big.jsonl").write_bytes(b"x" * (16 << 20))  # more than socket buffers
    handler = type(
        "H", (viewserver.Handler,), {"root": run.resolve(), "page": "analysis/report.html"}
    )
    server = viewserver.Server(("127.0.0.1", 0), handler)
    server.daemon_threads = False  # server_close() then waits for the request's thread
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(f"GET /records/big.jsonl HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        sock.recv(1024)  # the answer has begun
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # a reset, not a close
        assert ask(port, "/analysis/report.html")[0] == 200
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert err.splitlines() == [
        "view: a client reset its connection before the answer was sent; still serving"
    ]
