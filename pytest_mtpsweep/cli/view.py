"""`mtpsweep view --serve`: a run directory's regular files on loopback, and nothing else.

A path is served only when, its links resolved, it is a regular file inside the resolved run
directory, with one name only and on the run's own device (a link in records/ to /etc/passwd is
a 404, as is a hard link, whose other name may be anywhere, and a directory: nothing is listed;
`/` leads to the report). A client that resets its connection is logged in one line. Only GET and HEAD; only a Host header naming the loopback address
and this port, so a page elsewhere that rebinds its name to 127.0.0.1 is refused. Every answer
carries nosniff and the report's own Content-Security-Policy.
"""

from __future__ import annotations

import http.server
import mimetypes
import os
import shutil
import stat
import sys
from http import HTTPStatus
from pathlib import Path
from urllib.parse import unquote

from ..base.errors import UserError
from ..report.document import CSP

# The page's own policy (it needs inline style, its two hashed scripts and data: pictures),
# and no framing by another page: a header may say what a <meta> policy cannot.
HEADERS = {
    "Content-Security-Policy": f"{CSP}; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
TEXT = {".csv", ".jsonl", ".md", ".txt", ".log", ".toml"}  # shown as text, never run
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class Handler(http.server.BaseHTTPRequestHandler):
    """One request: GET or HEAD of a regular file inside `root`."""

    root: Path
    page: str  # the report, relative to root: what `/` leads to
    server_version = "mtpsweep-view"
    sys_version = ""

    def end_headers(self) -> None:
        for name, value in HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        # A request line is the client's text: it is not echoed onto the terminal.
        return

    def _host_ok(self) -> bool:
        address = self.server.server_address
        port = address[1] if isinstance(address, tuple) else None
        host = (self.headers.get("Host") or "").strip().lower()
        return host in {f"{name}:{port}" for name in LOOPBACK_NAMES}

    def _path(self) -> str:
        # the path as sent, without query or fragment (urlsplit would read `//x` as a host)
        return unquote(self.path.split("?", 1)[0].split("#", 1)[0])

    def _file(self) -> tuple[int, os.stat_result] | None:
        """An open descriptor of the file the path names and its stat, or None (a 404)."""
        path = self._path()
        if "\x00" in path or not path.startswith("/"):
            return None
        try:
            target = (self.root / path.lstrip("/")).resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        if not target.is_relative_to(self.root):
            return None
        try:
            # O_NOFOLLOW: a link put in place after resolve() is not followed either
            fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        info = os.fstat(fd)
        # a hard link is the same file under a name outside the run too, and a file on another
        # device was mounted in: neither is a file the run wrote
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_nlink > 1
            or info.st_dev != os.stat(self.root).st_dev
        ):
            os.close(fd)
            return None
        return fd, info

    def _answer(self, body: bool) -> None:
        if not self._host_ok():
            self.send_error(HTTPStatus.MISDIRECTED_REQUEST, "unexpected Host header")
            return
        if self._path() == "/":
            self.send_response(HTTPStatus.FOUND)
            self.send_header("Location", f"/{self.page}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        found = self._file()
        if found is None:
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        fd, info = found
        with os.fdopen(fd, "rb") as handle:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", _content_type(self._path()))
            self.send_header("Content-Length", str(info.st_size))
            self.end_headers()
            if body:
                shutil.copyfileobj(handle, self.wfile)

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)


class Server(http.server.ThreadingHTTPServer):
    """The loopback server; a request that fails is one line on stderr, never a traceback."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        del request, client_address  # the client's address says nothing the user can act on
        exc = sys.exc_info()[1]
        what = (
            "reset its connection before the answer was sent"
            if isinstance(exc, ConnectionError)
            else f"request failed ({type(exc).__name__})"
        )
        print(f"view: a client {what}; still serving", file=sys.stderr, flush=True)


def _content_type(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in TEXT:
        return "text/plain; charset=utf-8"
    guessed = mimetypes.guess_type(path)[0] or "application/octet-stream"
    return f"{guessed}; charset=utf-8" if guessed in ("text/html", "application/json") else guessed


def serve(run: Path, page: str, port: int) -> int:
    """Serve `run` on 127.0.0.1:`port` (0: a free one) until Ctrl-C; `page` is the report."""
    handler = type("RunHandler", (Handler,), {"root": run.resolve(), "page": page})
    try:
        server = Server(("127.0.0.1", port), handler)
    except OSError as exc:
        raise UserError(
            f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); pass another --port, or 0 for "
            "a free one."
        ) from None
    with server:
        url = f"http://127.0.0.1:{server.server_address[1]}/{page}"
        print(f"serving {run} on loopback only: {url} (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("stopped serving")
    return 0
