"""Non-streamed chat completions for multi-turn conversations, with a bounded retry policy.

One request per turn; usage is read from the response. Transient failures — HTTP 429, any 5xx,
a connection refused, reset or closed without an answer — are retried with exponential backoff
(`backoff_s` × 2^k, capped at `max_backoff_s`; a `Retry-After` in seconds is honoured up to the
cap), at most `retries` times, and every retry is counted. Anything else (another 4xx, a reply
that is not JSON, a reply without choices, usage that cannot be true (rig/usage.py), a timeout,
a reply past its bound of `timeout_s` in all or of bytes from `max_tokens` (rig/bounds.py))
is terminal at once: the reply says so, with its HTTP status. Tokens the server did not report
are None (unknown), never 0. Any header value (a bearer key) is scrubbed from the error texts;
the content is returned as it came, since the checked artefact must be what the model wrote:
whoever writes it redacts it (`redact`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from ...kindapi import ReplyCut
from ...kindapi.records import redact_url
from ...kindapi.rig import ReadBound, read_usage

RETRIED_ERRORS = (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
ERROR_EXCERPT = 300  # characters of an error body kept


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds before retry number `retry` (from 0)."""
        base = self.backoff_s * 2**retry if retry_after is None else retry_after
        return max(0.0, min(self.max_backoff_s, base))


@dataclass(frozen=True)
class ChatSpec:
    """What every request of a conversation carries besides its messages."""

    model: str
    max_tokens: int
    seed: int
    temperature: float
    timeout_s: float = 300.0  # one try, its whole reply read (rig/bounds.py)
    extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. llama-server's cache_prompt
    headers: Callable[[], dict[str, str]] = dict  # read at request time, never stored
    context_tokens: int | None = None  # the served context, where known: usage beyond it lies

    def secrets(self) -> list[str]:
        """What must never be written: each header's value (a bearer key without `Bearer`)."""
        return [v.split(" ", 1)[-1] for v in self.headers().values()]

    def __repr__(self) -> str:  # the headers may hold a key: keep them out of any repr
        return f"ChatSpec(model={self.model!r}, max_tokens={self.max_tokens})"


@dataclass(frozen=True)
class ChatReply:
    """One turn's answer, or why there is none."""

    ok: bool
    content: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_chars: int = 0
    response_model: str | None = None
    http_status: int | None = None
    error: str | None = None
    tries: int = 1
    retried: tuple[str, ...] = ()  # the HTTP status (or error name) of each retried try
    latency_s: float = 0.0  # the last try, send to full response
    total_s: float = 0.0  # every try and every wait

    @property
    def tokens_known(self) -> bool:
        """The server reported both counts (plausibly: rig/usage.py)."""
        return self.prompt_tokens is not None and self.completion_tokens is not None

    @property
    def tokens(self) -> int:
        """The reported tokens (0 for an unknown count: check `tokens_known` first)."""
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)


def request_body(messages: Sequence[Mapping[str, str]], spec: ChatSpec) -> dict[str, Any]:
    return {
        "model": spec.model,
        "messages": [dict(m) for m in messages],
        "max_tokens": spec.max_tokens,
        "temperature": spec.temperature,
        "seed": spec.seed,
        "stream": False,
        **spec.extra,
    }


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret replaced, for writing; never applied to what is checked."""
    for s in secrets:
        if s:
            text = text.replace(s, "[redacted]")
    return text


def _retry_after(resp: httpx.Response) -> float | None:
    try:
        return float(resp.headers.get("retry-after", ""))
    except ValueError:
        return None


def parse(
    resp: httpx.Response, max_tokens: int | None = None, context_tokens: int | None = None
) -> ChatReply:
    """A 200 response -> a reply (terminal errors for what a completion must hold)."""
    status = resp.status_code
    try:
        body = resp.json()
    except ValueError:
        return ChatReply(False, http_status=status, error="the response is not JSON")
    usage = read_usage(
        body.get("usage") if isinstance(body, dict) else None, max_tokens, context_tokens
    )
    if usage.problem is not None:
        return ChatReply(False, http_status=status, error=usage.problem)
    prompt, completion = usage.prompt_tokens, usage.completion_tokens
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ChatReply(
            False,
            prompt_tokens=prompt,
            completion_tokens=completion,
            http_status=status,
            error="the response holds no choices",
        )
    message = choices[0].get("message") or {}
    content = message.get("content") if isinstance(message, dict) else None
    reasoning = message.get("reasoning_content") if isinstance(message, dict) else None
    return ChatReply(
        True,
        content=content if isinstance(content, str) else "",
        finish_reason=choices[0].get("finish_reason"),
        reasoning_chars=len(reasoning) if isinstance(reasoning, str) else 0,
        response_model=body.get("model") if isinstance(body.get("model"), str) else None,
        http_status=status,
        prompt_tokens=prompt,
        completion_tokens=completion,
    )


def chat(
    client: httpx.Client,
    base_url: str,
    messages: Sequence[Mapping[str, str]],
    spec: ChatSpec,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> ChatReply:
    """One turn: send, retry what is transient within the policy, return what came back."""
    body = request_body(messages, spec)
    bound = ReadBound.reply(spec.max_tokens, spec.timeout_s)
    retried: list[str] = []
    t0 = time.monotonic()
    while True:
        headers = spec.headers()
        secrets = [v.split(" ", 1)[-1] for v in headers.values()]  # as ChatSpec.secrets
        wait: float | None = None
        t_send = time.monotonic()
        try:
            resp = bound.fetch(
                client, "POST", f"{base_url}/v1/chat/completions", headers=headers, json=body
            )
        except ReplyCut as exc:  # past its time or its bytes: asking again would not help
            failure, status, what = None, None, str(exc)
        except RETRIED_ERRORS as exc:
            failure, status, what = (
                type(exc).__name__,
                None,
                redact_url(f"{type(exc).__name__}: {exc}"),
            )
        except httpx.HTTPError as exc:  # a timeout, or anything else of the transport: terminal
            failure, status, what = None, None, redact_url(f"{type(exc).__name__}: {exc}")
        else:
            status = resp.status_code
            if status == 200:
                reply = parse(resp, spec.max_tokens, spec.context_tokens)
                if reply.error is not None:
                    reply = dataclasses.replace(reply, error=redact(reply.error, secrets))
                return _finish(reply, retried, t_send, t0)
            what = f"HTTP {status}: {resp.text[:ERROR_EXCERPT]!r}"
            failure = str(status) if status == 429 or status >= 500 else None
            wait = _retry_after(resp)
        what = redact(what, secrets)
        if failure is None or len(retried) >= policy.retries:
            if failure is not None:
                what = f"{what} (after {len(retried)} retries)"
            return _finish(ChatReply(False, http_status=status, error=what), retried, t_send, t0)
        sleep(policy.delay(len(retried), wait))
        retried.append(failure)


def _finish(reply: ChatReply, retried: list[str], t_send: float, t0: float) -> ChatReply:
    now = time.monotonic()
    return dataclasses.replace(
        reply,
        tries=len(retried) + 1,
        retried=tuple(retried),
        latency_s=now - t_send,
        total_s=now - t0,
    )
