"""One load request as values and bytes: where it goes (`LoadTarget`, loopback unless allowed),
what it carries (`LoadSpec`, a prompt), and the whole HTTP/1.1 request, built before a level
starts so that no send encodes anything (`level` sends them)."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from ....kindapi.records import redact_url
from ....kindapi.rig import bearer


@dataclass(frozen=True)
class LoadTarget:
    """Where to send: an OpenAI-compatible server on loopback unless `allow_remote`."""

    base_url: str
    model: str
    api_key_env: str | None = None  # the variable's name; its value is read at the start only
    allow_remote: bool = False


class PromptLike(Protocol):
    """What a request needs of a prompt (the ladder's `Prompt` has it)."""

    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...


@dataclass(frozen=True)
class LoadPrompt:
    id: str
    text: str
    max_tokens: int | None = None  # this request's own cap (a trace's output), else the spec's


@dataclass(frozen=True)
class LoadSpec:
    """What every request carries besides its prompt."""

    max_tokens: int
    temperature: float = 0.0
    seed: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. {"cache_prompt": False}
    read_timeout_s: float = 120.0  # the longest silence a stream may keep


def is_loopback(base_url: str) -> bool:
    """Whether a URL's host is this host's loopback (`localhost` or a loopback address)."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_target(target: LoadTarget) -> None:
    """Refuse a non-loopback URL unless the target allows it (a load test is not for others)."""
    if not target.allow_remote and not is_loopback(target.base_url):
        raise ValueError(
            f"load target {redact_url(target.base_url)} is not on loopback; point it at 127.0.0.1 or set "
            "allow_remote=True for a server you may load"
        )


def auth_headers(target: LoadTarget) -> dict[str, str]:
    """The Authorization header, read from the environment now (empty without a key)."""
    return bearer(target.api_key_env, redact_url(target.base_url), ValueError)


def request_bytes(
    target: LoadTarget, spec: LoadSpec, prompt: PromptLike, headers: Mapping[str, str]
) -> bytes:
    """The whole HTTP/1.1 request, built before the level so no send encodes anything."""
    messages = [{"role": "user", "content": prompt.text}]
    return chat_bytes(target, spec, messages, headers, getattr(prompt, "max_tokens", None))


def chat_bytes(
    target: LoadTarget,
    spec: LoadSpec,
    messages: Sequence[Mapping[str, str]],
    headers: Mapping[str, str],
    max_tokens: int | None = None,
) -> bytes:
    """The whole HTTP/1.1 request of a chat of these messages (a conversation's turn)."""
    url = urlsplit(target.base_url)
    body = chat_body(target, spec, messages, max_tokens)
    path = f"{url.path.rstrip('/')}/v1/chat/completions"
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {url.netloc.rsplit('@', 1)[-1]}",
        "Content-Type: application/json",
        "Accept: text/event-stream",
        f"Content-Length: {len(body)}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def request_body(target: LoadTarget, spec: LoadSpec, prompt: PromptLike) -> bytes:
    messages = [{"role": "user", "content": prompt.text}]
    return chat_body(target, spec, messages, getattr(prompt, "max_tokens", None))


def chat_body(
    target: LoadTarget,
    spec: LoadSpec,
    messages: Sequence[Mapping[str, str]],
    max_tokens: int | None = None,
) -> bytes:
    """The JSON body; `max_tokens`: a request's own cap (a replayed trace's), else the spec's."""
    body = {
        "model": target.model,
        "messages": list(messages),
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": max_tokens or spec.max_tokens,
        "temperature": spec.temperature,
        "seed": spec.seed,
        **spec.extra,
    }
    return json.dumps(body).encode()
