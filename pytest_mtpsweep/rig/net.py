"""Ports: can a server listen here now, and which free port to use."""

from __future__ import annotations

import socket


def bind_error(host: str, port: int) -> str | None:
    """Why a server could not listen on host:port now, or None when it could.

    SO_REUSEADDR as llama-server (cpp-httplib) binds, so a TIME_WAIT socket left by the last
    session's connection does not count, but any listener does.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        return f"cannot resolve {host}: {getattr(exc, 'strerror', None) or exc}"
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def port_is_free(host: str, port: int) -> bool:
    return bind_error(host, port) is None


def listening(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """Whether something accepts connections on host:port now.

    A released server's port is judged by this, not by a bind: any process's client socket
    may take the freed number as its ephemeral local port, and a bind then fails although
    nothing of ours is left.
    """
    wildcard = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}
    try:
        with socket.create_connection((wildcard.get(host, host), port), timeout=timeout_s):
            return True
    except OSError:  # refused, unreachable, or no answer within the bound
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS just handed out; used when the ladder says port 0."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port
