"""The multi-turn chat client against a STUB OpenAI-compatible server (a real HTTP server in a
thread, tests/stub_openai_server.py): bearer keys, retries of what is transient, terminal
failures, replies without choices, and no key in anything a reply carries."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.kinds.authoring.chat import ChatSpec, RetryPolicy, chat, redact
from tests.stub_openai_server import OMIT, Script, serve

KEY = "sk-test-0123456789abcdef"
MESSAGES = [{"role": "user", "content": "Write add(a, b)."}]
POLICY = RetryPolicy(retries=3, backoff_s=0.5, max_backoff_s=4.0)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False) as c:
        yield c


def spec(key: str | None = None) -> ChatSpec:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return ChatSpec("stub-model", 64, 42, 0.0, timeout_s=10, headers=lambda: dict(headers))


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def test_a_reply_carries_content_usage_and_model(client: httpx.Client) -> None:
    script = Script(reply=lambda m: "```python\ndef add(a, b):\n    return a + b\n```")
    with serve(script) as url:
        reply = chat(client, url, MESSAGES, spec(), POLICY)
    assert reply.ok and reply.error is None and reply.tries == 1 and reply.retried == ()
    assert "def add" in reply.content and reply.finish_reason == "stop"
    assert reply.response_model == "stub-model"
    assert reply.prompt_tokens == len("Write add(a, b).") // 4 + 10
    assert reply.completion_tokens == len(reply.content) // 4 + 1
    assert script.requests == [MESSAGES]


def test_the_bearer_key_is_required_and_never_echoed(client: httpx.Client) -> None:
    script = Script(key=KEY)
    with serve(script) as url:
        denied = chat(client, url, MESSAGES, spec(), POLICY)
        wrong = chat(client, url, MESSAGES, spec("sk-wrong"), POLICY)
        ok = chat(client, url, MESSAGES, spec(KEY), POLICY)
    # 401 is terminal: not retried, zero tokens
    assert not denied.ok and denied.http_status == 401 and denied.tries == 1
    assert denied.prompt_tokens is None and denied.completion_tokens is None
    assert not wrong.ok and wrong.http_status == 401
    assert ok.ok and script.unauthorised == 2


def test_429_then_success_is_retried_with_backoff(client: httpx.Client) -> None:
    sleeps = Sleeps()
    script = Script()
    script.faults.extend([429, 429])
    with serve(script) as url:
        reply = chat(client, url, MESSAGES, spec(), POLICY, sleep=sleeps)
    assert reply.ok and reply.tries == 3 and reply.retried == ("429", "429")
    assert sleeps == [0.5, 1.0]


def test_retry_after_is_honoured_up_to_the_cap(client: httpx.Client) -> None:
    sleeps = Sleeps()
    script = Script(retry_after="60")
    script.faults.extend([429, 503])
    with serve(script) as url:
        reply = chat(client, url, MESSAGES, spec(), POLICY, sleep=sleeps)
    assert reply.ok and reply.retried == ("429", "503")
    assert sleeps == [4.0, 1.0]  # 60 s asked, capped at max_backoff_s; then 0.5 * 2


def test_a_persistent_500_is_terminal_after_the_policy(client: httpx.Client) -> None:
    sleeps = Sleeps()
    script = Script()
    script.faults.extend([500] * 10)
    with serve(script) as url:
        reply = chat(client, url, MESSAGES, spec(), POLICY, sleep=sleeps)
    assert not reply.ok and reply.http_status == 500
    assert reply.tries == 4 and reply.retried == ("500", "500", "500")
    assert reply.prompt_tokens is None and reply.completion_tokens is None and reply.tokens == 0
    assert reply.error is not None and "after 3 retries" in reply.error
    assert len(script.faults) == 6  # exactly retries + 1 requests were made


def test_a_reply_without_choices_is_terminal_and_keeps_its_usage(client: httpx.Client) -> None:
    script = Script()
    script.faults.append("empty")
    with serve(script) as url:
        reply = chat(client, url, MESSAGES, spec(), POLICY, sleep=Sleeps())
    assert not reply.ok and reply.tries == 1 and reply.error == "the response holds no choices"
    assert reply.prompt_tokens is not None and reply.completion_tokens == 1


def test_a_reply_that_is_not_json_is_terminal(client: httpx.Client) -> None:
    script = Script()
    script.faults.append("notjson")
    with serve(script) as url:
        reply = chat(client, url, MESSAGES, spec(), POLICY, sleep=Sleeps())
    assert not reply.ok and reply.error == "the response is not JSON" and reply.tries == 1


def test_a_reset_connection_is_retried(client: httpx.Client) -> None:
    sleeps = Sleeps()
    script = Script()
    script.faults.append("reset")
    with serve(script) as url:
        reply = chat(client, url, MESSAGES, spec(), POLICY, sleep=sleeps)
    assert reply.ok and reply.tries == 2 and len(reply.retried) == 1
    assert reply.retried[0] in ("RemoteProtocolError", "ReadError")


def test_a_refused_connection_is_retried_then_terminal(client: httpx.Client) -> None:
    with serve(Script()) as url:
        pass  # the port is closed again
    reply = chat(client, url, MESSAGES, spec(), RetryPolicy(1, 0.0, 0.0), sleep=Sleeps())
    assert not reply.ok and reply.retried == ("ConnectError",) and reply.http_status is None


def test_content_is_what_the_model_wrote_and_redaction_is_for_writing(
    client: httpx.Client,
) -> None:
    # The artefact is checked as written; a key it contains is redacted only where written.
    script = Script(key=KEY, reply=lambda m: f"the key is {KEY}")
    with serve(script) as url:
        reply = chat(client, url, MESSAGES, spec(KEY), POLICY)
    assert reply.ok and reply.content == f"the key is {KEY}"
    assert redact(reply.content, spec(KEY).secrets()) == "the key is [redacted]"


def test_a_short_key_never_rewrites_the_content(client: httpx.Client) -> None:
    script = Script(key="a", reply=lambda m: "def add(a, b):\n    return a + b\n")
    with serve(script) as url:
        reply = chat(client, url, MESSAGES, spec("a"), POLICY)
    assert reply.content == "def add(a, b):\n    return a + b\n"


def test_a_reply_without_usage_has_unknown_tokens(client: httpx.Client) -> None:
    with serve(Script(usage_of=lambda m, c: OMIT)) as url:
        reply = chat(client, url, MESSAGES, spec(), POLICY)
    assert reply.ok and not reply.tokens_known
    assert reply.prompt_tokens is None and reply.completion_tokens is None


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -100000, "completion_tokens": -100000},
        {"prompt_tokens": True, "completion_tokens": 1},
        {"prompt_tokens": 10, "completion_tokens": 65},  # max_tokens is 64
    ],
)
def test_usage_that_cannot_be_true_is_a_terminal_malformed_response(
    client: httpx.Client, usage: dict[str, object]
) -> None:
    script = Script(usage_of=lambda m, c: usage)
    with serve(script) as url:
        reply = chat(client, url, MESSAGES, spec(), POLICY)
    assert not reply.ok and reply.http_status == 200 and len(script.requests) == 1
    assert reply.error is not None and reply.error.startswith("malformed response: usage")
    assert reply.prompt_tokens is None and reply.completion_tokens is None


@given(st.integers(0, 20), st.floats(0, 10), st.floats(0, 100))
def test_backoff_is_exponential_and_capped(retry: int, base: float, cap: float) -> None:
    policy = RetryPolicy(5, base, max(base, cap))
    delay = policy.delay(retry)
    assert 0 <= delay <= policy.max_backoff_s
    assert delay == min(policy.max_backoff_s, base * 2**retry)


def test_the_spec_never_shows_its_headers() -> None:
    assert KEY not in repr(spec(KEY))
