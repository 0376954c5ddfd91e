"""The fault-injecting STUB llama-server does what fault tests will rely on it to do.

Each test runs the stub as a real subprocess on a free port and looks only at what a client
(or the plugin) could observe: HTTP status, SSE events, exit status, timing.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.sandbox import STUB_SERVER
from tests.stub_llama_server import FAULT_ENV, FaultError, StubState, parse_fault

STUB = STUB_SERVER  # one copy per xdist worker
HOST = "127.0.0.1"
ALIAS = "stub-alias"
MODEL = "/models/target.gguf"
TOKEN_MS = 1.0
LLAMA_FLAGS = (
    "--parallel",
    "1",
    "--spec-type",
    "ngram-simple",
    "-md",
    "/models/draft.gguf",
    "--spec-draft-n-max",
    "6",
    "-ctk",
    "q8_0",
    "-hf",
    "org/repo",
    "--seed",
    "-1",
)
Event = dict[str, Any] | str  # a parsed `data:` payload, or the literal "[DONE]"


@dataclass
class Stub:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path
    client: httpx.Client

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def wait_healthy(stub: Stub, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if stub.proc.poll() is not None:
            pytest.fail(f"stub exited {stub.proc.returncode}:\n{stub.output()}")
        with contextlib.suppress(httpx.HTTPError):
            if stub.client.get("/health", timeout=1.0).status_code == 200:
                return
        time.sleep(0.02)
    pytest.fail(f"stub not healthy after {timeout_s} s:\n{stub.output()}")


@contextlib.contextmanager
def launched(
    tmp_path: Path, *faults: str, env_faults: str | None = None, wait: bool = True
) -> Iterator[Stub]:
    """The stub with the plugin's argv shape plus llama flags it must ignore; always killed."""
    port = free_port()
    log = tmp_path / f"stub-{port}.log"
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    if env_faults is not None:
        env[FAULT_ENV] = env_faults
    argv = [
        sys.executable,
        str(STUB),
        "--host",
        HOST,
        "--port",
        str(port),
        "--alias",
        ALIAS,
        "-m",
        MODEL,
        "--ctx-size",
        "2048",
        *LLAMA_FLAGS,
        "--stub-token-ms",
        str(TOKEN_MS),
        *(x for f in faults for x in ("--fault", f)),
    ]
    with log.open("wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env)
    # Plain http: verify=False only skips building a TLS context (~0.1 s per client).
    client = httpx.Client(base_url=f"http://{HOST}:{port}", timeout=5.0, verify=False)
    stub = Stub(proc, port, log, client)
    try:
        if wait:
            wait_healthy(stub)
        yield stub
    finally:
        client.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=5)


def body(
    max_tokens: int = 5, seed: int = 7, prompt: str = "hello there", **extra: Any
) -> dict[str, Any]:
    return {
        "model": ALIAS,
        "messages": [{"role": "user", "content": prompt}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "seed": seed,
        "cache_prompt": False,
        **extra,
    }


def parse(line: str) -> Event | None:
    if not line.startswith("data: "):
        return None
    payload = line[len("data: ") :]
    return payload if payload == "[DONE]" else dict(json.loads(payload))


def stream(stub: Stub, **kw: Any) -> contextlib.AbstractContextManager[httpx.Response]:
    return stub.client.stream("POST", "/v1/chat/completions", json=body(**kw))


def chat(stub: Stub, **kw: Any) -> tuple[int, list[Event]]:
    """One streamed request read to the end: the status and every data payload in order."""
    with stream(stub, **kw) as resp:
        if resp.status_code != 200:
            resp.read()
            return resp.status_code, [dict(resp.json())]
        events = [e for e in map(parse, resp.iter_lines()) if e is not None]
        return 200, events


def deltas(events: list[Event]) -> list[dict[str, Any]]:
    return [c["delta"] for e in events if isinstance(e, dict) for c in e["choices"] if "delta" in c]


def content(events: list[Event]) -> str:
    return "".join(d.get("content") or "" for d in deltas(events))


def read_until_content(lines: Iterator[str], n: int) -> list[Event]:
    """Consume the stream until n content events have arrived."""
    got: list[Event] = []
    for line in lines:
        event = parse(line)
        if event is not None:
            got.append(event)
        if sum(1 for d in deltas(got) if d.get("content")) >= n:
            return got
    pytest.fail(f"the stream ended before {n} content events: {got}")


class TestNormal:
    def test_stream_shape_usage_timings_and_done(self, tmp_path: Path) -> None:
        with launched(tmp_path) as stub, stream(stub, max_tokens=5) as resp:
            assert resp.status_code == 200
            assert resp.headers["content-type"] == "text/event-stream"
            assert resp.headers["transfer-encoding"] == "chunked"
            events = [e for e in map(parse, resp.iter_lines()) if e is not None]
        # role, 5 tokens, finish, usage, [DONE]
        assert len(events) == 9 and events[-1] == "[DONE]"
        chunks = [e for e in events if isinstance(e, dict)]
        assert all(c["model"] == ALIAS for c in chunks)
        assert all(c["object"] == "chat.completion.chunk" for c in chunks)
        assert chunks[0]["choices"] == [
            {"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}
        ]
        tokens = [c["choices"][0]["delta"]["content"] for c in chunks[1:6]]
        assert all(t.startswith("tok") and t.endswith(" ") for t in tokens)
        assert chunks[6]["choices"] == [{"index": 0, "delta": {}, "finish_reason": "length"}]
        final = chunks[7]
        assert final["choices"] == []
        usage, timings = final["usage"], final["timings"]
        assert usage["completion_tokens"] == 5
        assert usage["total_tokens"] == usage["prompt_tokens"] + 5 > 5
        assert timings["prompt_n"] == usage["prompt_tokens"]
        assert timings["predicted_n"] == 5
        # the decode's measured wall time: at least the four sleeps between five tokens
        assert timings["predicted_ms"] >= 4 * TOKEN_MS
        assert timings["predicted_per_second"] == pytest.approx(
            5 / (timings["predicted_ms"] / 1000)
        )
        assert timings["cache_n"] == 0

    def test_content_is_deterministic_in_prompt_and_seed(self, tmp_path: Path) -> None:
        with launched(tmp_path) as stub:
            a = content(chat(stub, seed=1)[1])
            assert content(chat(stub, seed=1)[1]) == a
            assert content(chat(stub, seed=2)[1]) != a
            assert content(chat(stub, seed=1, prompt="another")[1]) != a

    def test_usage_only_when_asked_for(self, tmp_path: Path) -> None:
        with launched(tmp_path) as stub:
            _, events = chat(stub, stream_options={"include_usage": False})
        assert events[-1] == "[DONE]"
        assert not any(isinstance(e, dict) and "usage" in e for e in events)

    def test_health_props_and_unknown_llama_flags_ignored(self, tmp_path: Path) -> None:
        # launched() passes -md, -ctk, -hf and friends, which must not reach -m, -c or -h.
        with launched(tmp_path) as stub:
            assert stub.client.get("/health").json() == {"status": "ok"}
            assert stub.client.get("/props").json() == {
                "build_info": "b1-5tub5tub",
                "model_path": MODEL,
                "model_alias": ALIAS,
                "total_slots": 1,
                "default_generation_settings": {"n_ctx": 2048},
            }
            listening = [
                c.laddr
                for c in psutil.Process(stub.proc.pid).net_connections("tcp")
                if c.status == psutil.CONN_LISTEN
            ]
        assert [(a.ip, a.port) for a in listening] == [(HOST, stub.port)]
        assert "STUB llama-server listening" in stub.output()
        assert '"GET /props HTTP/1.1" 200' in stub.output()  # one log line per request

    def test_concurrent_requests_are_counted_once_each(self, tmp_path: Path) -> None:
        with launched(tmp_path, "http-400@5") as stub:
            statuses: list[int] = []
            lock = threading.Lock()

            def one() -> None:
                status, _ = chat(stub, max_tokens=3)
                with lock:
                    statuses.append(status)

            threads = [threading.Thread(target=one) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=10)
        assert sorted(statuses) == [200] * 7 + [400]
        assert stub.output().count("request=") == 8


class TestRequestFaults:
    def test_http_400_on_the_nth_request_only(self, tmp_path: Path) -> None:
        with launched(tmp_path, "http-400@1") as stub:
            status, events = chat(stub)
            assert status == 400
            assert events == [
                {
                    "error": {
                        "code": 400,
                        "message": "stream_options not supported",
                        "type": "invalid_request_error",
                    }
                }
            ]
            status, events = chat(stub)
            assert status == 200 and events[-1] == "[DONE]"

    def test_reasoning_delta_comes_before_content(self, tmp_path: Path) -> None:
        with launched(tmp_path, "reasoning") as stub:
            ds = deltas(chat(stub)[1])
        assert ds[1] == {"reasoning_content": "thinking..."}
        assert ds[2]["content"].startswith("tok")

    def test_unknown_delta_field(self, tmp_path: Path) -> None:
        with launched(tmp_path, "unknown-delta") as stub:
            _, events = chat(stub)
        odd = [d for d in deltas(events) if "secret_field" in d]
        assert len(odd) == 1 and odd[0]["secret_field"] == 1 and odd[0]["content"]
        assert len(events) == 9  # the same shape otherwise: no extra event

    def test_no_usage(self, tmp_path: Path) -> None:
        with launched(tmp_path, "no-usage") as stub:
            _, events = chat(stub)
        assert events[-1] == "[DONE]" and len(events) == 8
        assert not any(isinstance(e, dict) and ("usage" in e or "timings" in e) for e in events)

    def test_wrong_alias_in_every_chunk(self, tmp_path: Path) -> None:
        with launched(tmp_path, "wrong-alias") as stub:
            _, events = chat(stub)
        chunks = [e for e in events if isinstance(e, dict)]
        assert len(chunks) == 8 and {c["model"] for c in chunks} == {"someone-else"}

    def test_faults_from_the_environment(self, tmp_path: Path) -> None:
        with launched(tmp_path, env_faults="wrong-alias@1, http-400@2") as stub:
            _, first = chat(stub)
            second, _ = chat(stub)
            third, last = chat(stub)
        assert isinstance(first[0], dict) and first[0]["model"] == "someone-else"
        assert second == 400
        assert third == 200 and isinstance(last[0], dict) and last[0]["model"] == ALIAS

    def test_disconnect_truncates_the_stream_and_the_server_lives_on(self, tmp_path: Path) -> None:
        with launched(tmp_path, "disconnect@1") as stub:
            with (
                stream(stub, max_tokens=10) as resp,
                pytest.raises(httpx.RemoteProtocolError),
            ):
                lines = resp.iter_lines()
                seen = read_until_content(lines, 3)
                seen += [e for e in map(parse, lines) if e is not None]
            assert "[DONE]" not in seen
            assert stub.proc.poll() is None
            assert chat(stub)[1][-1] == "[DONE]"

    def test_stall_falls_silent_then_finishes(self, tmp_path: Path) -> None:
        with launched(tmp_path, "stall=1@1") as stub:
            stamps: list[float] = []
            with stream(stub, max_tokens=6) as resp:
                lines = []
                for line in resp.iter_lines():
                    stamps.append(time.monotonic())
                    lines.append(line)
            assert "data: [DONE]" in lines
            # sleep(1) in the stub: the longest silence is about that long (arrival stamps jitter
            # by the client's scheduling, a late chunk before the pause shortens it; other gaps
            # are milliseconds)
            assert max(b - a for a, b in itertools.pairwise(stamps)) >= 0.9
            assert chat(stub)[1][-1] == "[DONE]"  # the next request is not stalled


class TestProcessFaults:
    def test_die_kills_the_server_mid_stream(self, tmp_path: Path) -> None:
        with launched(tmp_path, "die@1") as stub:
            with (
                stream(stub, max_tokens=10) as resp,
                pytest.raises(httpx.TransportError),
            ):
                for _ in resp.iter_lines():
                    pass
            assert stub.proc.wait(timeout=2) == 1

    def test_exit_after_answers_in_full_then_exits(self, tmp_path: Path) -> None:
        with launched(tmp_path, "exit-after@2") as stub:
            assert chat(stub)[1][-1] == "[DONE]"
            assert chat(stub)[1][-1] == "[DONE]"
            assert stub.proc.wait(timeout=2) == 0

    def test_exit_at_start_never_listens(self, tmp_path: Path) -> None:
        with launched(tmp_path, "exit-at-start", wait=False) as stub:
            assert stub.proc.wait(timeout=5) == 1
            assert "exit-at-start" in stub.output()
            with pytest.raises(httpx.ConnectError):
                stub.client.get("/health")

    def test_slow_start_answers_503_then_200(self, tmp_path: Path) -> None:
        with launched(tmp_path, "slow-start=1", wait=False) as stub:
            codes: list[int] = []
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and 200 not in codes:
                with contextlib.suppress(httpx.ConnectError):
                    r = stub.client.get("/health")
                    codes.append(r.status_code)
                    if r.status_code == 503:
                        assert r.json() == {"error": {"code": 503, "message": "Loading model"}}
                time.sleep(0.05)
        assert codes and codes[0] == 503 and codes[-1] == 200

    def test_while_loading_every_endpoint_is_503_and_uncounted(self, tmp_path: Path) -> None:
        with launched(tmp_path, "slow-start=60", "http-400@1", wait=False) as stub:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                with contextlib.suppress(httpx.ConnectError):
                    assert stub.client.get("/health").status_code == 503
                    break
                time.sleep(0.02)
            assert stub.client.get("/props").status_code == 503
            assert chat(stub)[0] == 503
            assert "request=" not in stub.output()  # http-400@1 still waits for request 1

    @pytest.mark.parametrize(
        "during",
        [pytest.param(None, id="idle"), pytest.param("hang", id="during-hang")],
    )
    def test_sigterm_exits_0_promptly(self, tmp_path: Path, during: str | None) -> None:
        faults = (during,) if during else ()
        with launched(tmp_path, *faults) as stub:

            def stop() -> float:
                t0 = time.monotonic()
                stub.proc.send_signal(signal.SIGTERM)
                assert stub.proc.wait(timeout=2) == 0
                return time.monotonic() - t0

            if during is None:
                assert stop() < 2.0
                return
            with (
                stream(stub, max_tokens=10) as resp,
                pytest.raises(httpx.RemoteProtocolError),
            ):
                lines = resp.iter_lines()
                read_until_content(lines, 3)
                assert stop() < 2.0
                for _ in lines:
                    pass


class TestCommandLine:
    def test_version_through_the_shebang(self) -> None:
        assert os.access(STUB, os.X_OK)
        assert STUB.read_text().startswith("#!/usr/bin/env python3\n")
        done = subprocess.run(
            [str(STUB), "--version"], capture_output=True, text=True, timeout=10, check=False
        )
        assert done.returncode == 0 and done.stdout == ""
        assert done.stderr.splitlines() == [
            "version: 0.0.0-stub (build 1, commit 5tub5tub)",
            "built with stub",
        ]

    def test_a_bad_fault_spec_fails_at_start(self) -> None:
        done = subprocess.run(
            [sys.executable, str(STUB), "--port", "1", "--fault", "explode"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        assert done.returncode == 2 and "unknown mode" in done.stderr

    @pytest.mark.parametrize(
        ("spec", "mode", "nth", "seconds"),
        [
            ("hang", "hang", None, 0.0),
            ("die@3", "die", 3, 0.0),
            ("slow-start=2.5", "slow-start", None, 2.5),
            ("stall=1.5@2", "stall", 2, 1.5),
            ("exit-after@1", "exit-after", 1, 0.0),
            ("slow-from=40@5", "slow-from", 5, 40.0),
        ],
    )
    def test_fault_specs(self, spec: str, mode: str, nth: int | None, seconds: float) -> None:
        f = parse_fault(spec)
        assert (f.mode, f.nth, f.seconds) == (mode, nth, seconds)

    @pytest.mark.parametrize(
        "spec",
        [
            "explode",
            "die@0",
            "die@x",
            "slow-start",
            "slow-start=1@2",
            "hang=3",
            "exit-after",
            "stall",
            "slow-from@5",
        ],
    )
    def test_bad_fault_specs(self, spec: str) -> None:
        with pytest.raises(FaultError):
            parse_fault(spec)

    def test_slow_from_slows_every_request_from_its_nth(self) -> None:
        faults = (parse_fault("slow-from=40@5"),)
        state = StubState("a", "m", 512, 1, 0.002, faults)
        assert [state.token_pause(n) for n in (1, 4, 5, 9)] == [0.002, 0.002, 0.04, 0.04]
        always = StubState("a", "m", 512, 1, 0.002, (parse_fault("slow-from=10"),))
        assert always.token_pause(1) == 0.01
