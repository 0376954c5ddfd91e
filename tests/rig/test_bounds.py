"""Every read of a server ends within its bound, whatever the server sends: a stream without
end, only keep-alive comments, one line without end, a body that trickles a byte at a time or
declares 10 GB. Against the STUB servers (tests/stub_llama_server.py as a subprocess,
tests/stub_openai_server.py in a thread): real sockets, real httpx, the load client's wire.
pytest-timeout is the outer guard, so a read that hung again fails rather than hangs."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.base.errors import ReplyCut
from pytest_mtpsweep.kinds.authoring.chat import ChatSpec, RetryPolicy, chat
from pytest_mtpsweep.kinds.load.loadgen.level import ClosedLoop, run_level
from pytest_mtpsweep.kinds.load.loadgen.payload import LoadPrompt, LoadSpec, LoadTarget
from pytest_mtpsweep.kinds.load.loadgen.reads import RawRequest, reduce_request
from pytest_mtpsweep.rig import bounds
from pytest_mtpsweep.rig.bounds import ReadBound
from pytest_mtpsweep.rig.client import RequestSpec, new_http_client, stream_chat
from pytest_mtpsweep.rig.endpoint import Endpoint
from pytest_mtpsweep.rig.stream import RawStream, reduce_stream
from tests.stub_openai_server import Script, serve
from tests.test_stub_llama_server import ALIAS, launched

pytestmark = pytest.mark.timeout(60)
MAX_TOKENS = 8


@contextlib.contextmanager
def stub(tmp_path: Path, *faults: str) -> Iterator[str]:
    with launched(tmp_path, *faults) as s:
        yield f"http://127.0.0.1:{s.port}"


def spec(timeout_s: float = 30.0) -> RequestSpec:
    return RequestSpec(alias=ALIAS, max_tokens=MAX_TOKENS, seed=1, temperature=0.0,
                       timeout_s=timeout_s)  # fmt: skip


def streamed(url: str, timeout_s: float = 30.0) -> str:
    with new_http_client() as client:
        m = stream_chat(client, url, "hello", spec(timeout_s))
    assert not m.valid and m.reason is not None
    return m.reason


# -- streamed: decode's measurements, every warm-up and calibration -------------------------


def test_a_stream_without_end_is_cut_at_its_events(tmp_path: Path) -> None:
    with stub(tmp_path, "endless") as url:
        reason = streamed(url)
    limit = MAX_TOKENS + bounds.EVENT_SLACK
    assert reason.startswith(
        f"the stream sent {limit + 1} events for max_tokens={MAX_TOKENS} (at most {limit})"
    )


def test_a_stream_of_comments_only_is_cut_at_its_lines(tmp_path: Path) -> None:
    with stub(tmp_path, "pings=0") as url:
        reason = streamed(url)
    lines = ReadBound.stream(MAX_TOKENS, 1.0).max_lines
    assert lines is not None
    assert reason.startswith(f"the stream sent {lines + 1} lines, 0 of them events")


def test_slow_comments_without_end_are_cut_at_the_time_bound(tmp_path: Path) -> None:
    # one comment each 50 ms: no read waits long, so only the total bound can end it
    with stub(tmp_path, "pings=0.05") as url:
        reason = streamed(url, timeout_s=0.6)
    assert reason.startswith("the reply did not end within its bound of 0.6 s; cut after 0.")


def test_one_line_without_end_is_cut_at_its_bytes(tmp_path: Path) -> None:
    with stub(tmp_path, "huge-body") as url:
        reason = streamed(url)
    assert reason.startswith(f"the reply passed its bound of {ReadBound.stream(8, 1).max_bytes}")


def test_a_silent_stream_is_cut_at_the_stall_threshold_not_the_total_bound(
    tmp_path: Path,
) -> None:
    # Issue 43, finding 8: a stand-in that falls silent mid-answer held the read ~608 s with
    # stall_threshold_s = 5. The total bound here is 30 s and the stall threshold 0.5 s: the
    # reason says which cut it (the stall watch), and the measurement is invalid.
    with stub(tmp_path, "hang") as url, new_http_client() as client:
        m = stream_chat(client, url, "hello", replace(spec(30.0), stall_s=0.5))
    assert not m.valid
    assert (m.reason or "").startswith(
        "stalled: the stream fell silent for more than 0.5 s after its last line "
        "(stall threshold 0.5 s); cut there"
    )
    assert "did not end within its bound" not in (m.reason or "")


def test_a_pause_shorter_than_the_stall_threshold_is_not_cut(tmp_path: Path) -> None:
    with stub(tmp_path, "stall=0.2") as url, new_http_client() as client:
        m = stream_chat(client, url, "hello", replace(spec(), stall_s=3.0))
    assert m.valid, m.reason


def test_the_same_stand_in_answers_in_full_without_a_fault(tmp_path: Path) -> None:
    with stub(tmp_path) as url, new_http_client() as client:
        m = stream_chat(client, url, "hello", spec())
    assert m.valid, m.reason


def test_more_content_chunks_than_max_tokens_is_invalid_whatever_usage_says() -> None:
    events = [f'data: {{"model": "a", "choices": [{{"delta": {{"content": "t{i}"}}}}]}}'
              for i in range(MAX_TOKENS + bounds.CHUNK_SLACK + 1)]  # fmt: skip
    tail = ['data: {"model": "a", "choices": [{"delta": {}, "finish_reason": "length"}], '
            '"usage": {"prompt_tokens": 3, "completion_tokens": 8}}', "data: [DONE]"]  # fmt: skip
    lines = events + tail
    raw = RawStream(lines, list(range(len(lines))), 0, len(lines), 200, None)
    m = reduce_stream(raw, expected_alias="a", max_tokens=MAX_TOKENS)
    assert not m.valid
    assert m.reason == f"the stream sent {len(events)} content chunks for max_tokens=8"
    fits = RawStream(lines[4:], list(range(len(lines) - 4)), 0, len(lines), 200, None)
    assert reduce_stream(fits, expected_alias="a", max_tokens=MAX_TOKENS).valid


# -- non-streamed: the authoring kind's chat ----------------------------------------------


def chat_reply(url: str, timeout_s: float = 30.0) -> tuple[str, int]:
    s = ChatSpec(model="stub-model", max_tokens=MAX_TOKENS, seed=1, temperature=0.0,
                 timeout_s=timeout_s)  # fmt: skip
    with httpx.Client(trust_env=False) as client:
        reply = chat(client, url, [{"role": "user", "content": "hi"}], s, RetryPolicy(retries=2))
    assert not reply.ok and reply.error is not None
    return reply.error, reply.tries


def test_a_reply_without_end_is_cut_at_its_bytes_and_not_retried(tmp_path: Path) -> None:
    with stub(tmp_path, "endless") as url:
        error, tries = chat_reply(url)
    assert error.startswith(f"the reply passed its bound of {ReadBound.reply(8, 1).max_bytes}")
    assert tries == 1


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        ("huge-length", "the reply declares 10737418240 bytes, past its bound of"),
        ("trickle", "the reply did not end within its bound of 0.6 s; cut after 0."),
    ],
)
def test_a_reply_of_10_gb_or_one_that_trickles_is_cut(fault: str, expected: str) -> None:
    script = Script()
    script.faults.append(fault)
    with serve(script) as url:
        error, tries = chat_reply(url, timeout_s=0.6)
    assert error.startswith(expected) and tries == 1


# -- probes: readiness, identity, metrics --------------------------------------------------


@pytest.mark.parametrize("fault", ["endless", "trickle", "huge-length"])
def test_a_probe_without_end_is_cut(fault: str) -> None:
    with serve(Script(get_faults={"/v1/models": fault})) as url, pytest.raises(ReplyCut) as cut:
        Endpoint(url).get("/v1/models", timeout_s=0.6)
    assert str(cut.value).startswith("the reply")


def test_a_server_whose_probes_never_end_is_not_ready_and_says_nothing_of_itself() -> None:
    with serve(Script(get_faults={"/v1/models": "endless", "/health": "endless"})) as url:
        ep = Endpoint(url)
        why = ep.probe()
        assert why is not None and why.startswith("/health: the reply passed its bound of")
        assert "/v1/models" not in ep.identity()


def test_a_silent_server_is_cut_by_the_deadline_not_by_a_read_timeout() -> None:
    # each read gets a byte within 50 ms: httpx's own timeouts alone would wait for ever
    with (
        serve(Script(get_faults={"/v1/models": "trickle"})) as url,
        pytest.raises(ReplyCut, match=r"did not end within its bound of 0\.3 s"),
    ):
        bounds.get(f"{url}/v1/models", ReadBound(0.3, 2**40))


# -- the load client --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "expected"),
    [("endless", "the stream sent"), ("pings=0", "keep-alive comments"),
     ("huge-body", "the reply passed its bound")],
)  # fmt: skip
def test_a_load_request_without_end_is_a_failed_record_before_the_level_ends(
    tmp_path: Path, fault: str, expected: str
) -> None:
    with stub(tmp_path, fault) as url:
        run = run_level(LoadTarget(url, ALIAS), LoadSpec(max_tokens=MAX_TOKENS),
                        [LoadPrompt("p", "hi")], ClosedLoop(1, 2), timeout_s=30.0)  # fmt: skip
    assert not run.timed_out  # each request was cut, not the level
    assert [r.ok for r in run.records] == [False, False]
    assert all(r.error and expected in r.error for r in run.records), run.records[0].error


def test_a_load_record_with_more_chunks_than_max_tokens_is_failed() -> None:
    events = b"".join(b'data: {"choices": [{"delta": {"content": "t"}}]}\n\n' for _ in range(20))
    end = b'data: {"choices": [{"delta": {}, "finish_reason": "length"}]}\n\ndata: [DONE]\n\n'
    raw = RawRequest(0, 0, "p", 0, 0, 1, (events + end,), (1,), 200)
    assert reduce_request(raw, max_tokens=MAX_TOKENS).error == (
        "the stream sent 20 content chunks for max_tokens=8"
    )
    assert reduce_request(raw, max_tokens=16).error is None


# -- the line splitter: as httpx (str.splitlines) splits, however the bytes are cut ----------


@given(st.text(alphabet="ab\r\n\u2028 ", max_size=40), st.lists(st.integers(0, 40), max_size=6))
def test_lines_split_as_splitlines_however_the_text_is_cut(text: str, cuts: list[int]) -> None:
    splitter = bounds._Lines()
    at = [0, *sorted(c for c in cuts if c < len(text)), len(text)]
    got = [line for a, b in itertools.pairwise(at) for line in splitter.feed(text[a:b])]
    assert got + splitter.flush() == text.splitlines()


def test_a_request_takes_its_bound_from_the_ladder_and_ends_before_the_alarm() -> None:
    assert bounds.request_s(8, None) == bounds.DEFAULT_REQUEST_S + 8 * bounds.SECONDS_PER_TOKEN
    assert bounds.request_s(8, 3.0) == 2.0  # a second before pytest-timeout's alarm
    assert bounds.request_s(8, 600.0) == 570.0  # 5 % before it
    assert bounds.request_s(8, 1.0) == 0.5  # never less than half
