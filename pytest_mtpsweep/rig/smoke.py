"""Proof that a server binary runs on this machine: start it once, decode a few tokens, stop it.

`mtpsweep provision` runs it on the build it made; preflight runs it on a server the user names
(`--server-bin`, MTPSWEEP_SERVER_BIN, the ladder's server.bin) before any session starts. A pass
is remembered per binary (its bytes and its libraries' bytes) and CPU, so a suite of runs pays
for it once; a failure is never remembered.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ServerCrashed, ServerError
from ..base.fileio import atomic_write_json, cache_dir, load_json_bounded
from .build import cpu_key, files_digest
from .client import RequestSpec, new_http_client, stream_chat
from .exits import ended, exit_of
from .net import free_port
from .server import LaunchSpec, last_log_line, start, stop

SMOKE_TOKENS = 4
SMOKE_PROMPT = "Write a Python function that adds two numbers."
SMOKE_READY_S = 300.0  # a large model may take minutes to load
SMOKE_REQUEST_S = 120.0
SMOKE_CTX = 512
_ALIAS = "mtpsweep-smoke"
_MAX_REMEMBERED = 256  # entries in smoke.json; the oldest go first


@dataclass(frozen=True)
class Smoke:
    """What the smoke test saw: ok, or one sentence saying what happened, where, why, and the fix."""

    ok: bool
    observed: str  # "decoded 4 tokens in 1.2 s (load 0.8 s)" or the failure sentence
    status: int | None = None  # the exit status when the server ended (negative: a signal)
    remembered: bool = False  # a pass from an earlier smoke of the same bytes on this CPU


def binary_digest(binary: Path) -> str:
    """sha256 over the binary and the shared libraries beside it (where ggml's code lives)."""
    libs = (p for p in binary.parent.glob("*.so*") if p.is_file() and not p.is_symlink())
    return files_digest([binary, *sorted(libs)])


def smoke(binary: Path, model: Path, *, fix: str, host: str = "127.0.0.1") -> Smoke:
    """Start `binary` on `model`, decode SMOKE_TOKENS tokens, stop it; `fix` ends a failure."""
    key = _memo_key(binary)
    if key is not None and _remembered(key):
        return Smoke(True, "passed before on this CPU (same binary and libraries)", None, True)
    with tempfile.TemporaryDirectory(prefix="mtpsweep-smoke-") as tmp:
        spec = LaunchSpec(
            server_bin=binary,
            argv_tail=("-m", str(model), "--ctx-size", str(SMOKE_CTX)),
            host=host,
            port=free_port(host),
            alias=_ALIAS,
            log_path=Path(tmp) / "server.log",
            ready_timeout_s=SMOKE_READY_S,
        )
        t0 = time.monotonic()
        try:
            server = start(spec)
        except ServerCrashed as exc:
            return Smoke(False, crash_sentence(binary, exc, fix), exc.status)
        except ServerError as exc:
            first = str(exc).splitlines()[0]
            return Smoke(False, f"{binary} did not start: {first}; {fix}")
        try:
            load_s = time.monotonic() - t0
            spec_req = RequestSpec(_ALIAS, SMOKE_TOKENS, 0, 0.0, timeout_s=SMOKE_REQUEST_S)
            with new_http_client() as client:
                m = stream_chat(client, spec.base_url, SMOKE_PROMPT, spec_req)
            code = server.exit_code()
        finally:
            stop(server)
        if code is not None:
            end = exit_of(code)
            return Smoke(
                False,
                f"{binary} {ended(code)} during its first decode, after the log line "
                f"{last_log_line(spec.log_path)!r}{_cause(end.illegal_instruction)}; {fix}",
                code,
            )
        tokens = m.completion_tokens or 0
        if not m.valid or tokens < 1:
            why = m.reason or "no token came back"
            return Smoke(False, f"{binary} started but did not decode ({why}); {fix}")
    if key is not None:
        _remember(key)
    return Smoke(True, f"decoded {tokens} token(s) in {m.e2e_s or 0:.1f} s (load {load_s:.1f} s)")


def crash_sentence(binary: Path, exc: ServerCrashed, fix: str) -> str:
    """One sentence: what (the signal by name), where (last log line, fault site), why, the fix."""
    end = exit_of(exc.status)
    site = f" in {exc.site}" if exc.site else ""
    return (
        f"{binary} {ended(exc.status)}{site} while loading, after the log line "
        f"{exc.last_line!r}{_cause(end.illegal_instruction)}; {fix}"
    )


def _cause(illegal: bool) -> str:
    if not illegal:
        return ""
    return (
        "; it was likely built for CPU features this machine lacks (a native build made on "
        "another machine or reused from a shared wheel cache, or llama.cpp's AMX kernels)"
    )


def _memo_path() -> Path:
    return cache_dir() / "smoke.json"


def _memo_key(binary: Path) -> str | None:
    try:
        return f"{cpu_key()}:{binary_digest(binary)}"
    except OSError:
        return None


def _read_memo() -> dict[str, float]:
    try:
        data = load_json_bounded(_memo_path())  # never a FIFO waited on
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, int | float)}


def _remembered(key: str) -> bool:
    return key in _read_memo()


def _remember(key: str) -> None:
    memo = _read_memo()
    memo[key] = time.time()
    kept = dict(sorted(memo.items(), key=lambda kv: kv[1])[-_MAX_REMEMBERED:])
    # A cache we cannot write costs the next run one more smoke test, nothing else.
    with contextlib.suppress(OSError):
        atomic_write_json(_memo_path(), kept)
