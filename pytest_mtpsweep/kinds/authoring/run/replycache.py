"""An opt-in cache of a subject's replies (`[api] cache = true`): a re-run or a `--resume` after
a crash spends nothing on what was already answered.

A reply is keyed by everything that decides it: the subject, the model it names, the endpoint,
the whole conversation so far, max_tokens, temperature, seed and any extra request fields
(sha256 of their canonical JSON). Only answered replies are kept (never an error), as JSON under
`<cache>/replies/`; no header, so no key, is part of a key or an entry. A cached reply is marked
`reply_cached: true` in its turn record, and its latency fields are those of the first answer.
It is off by default: a measurement of the subject itself must ask the subject.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ....kindapi import RunReadError
from ....kindapi.records import RunReader, atomic_write_json, cache_dir
from ..chat import ChatReply, ChatSpec

Messages = list[dict[str, str]]  # as the conversation holds them


def cache_root() -> Path:
    return cache_dir() / "replies"


def key(subject: str, endpoint: str, messages: Sequence[Mapping[str, str]], spec: ChatSpec) -> str:
    """What decides a reply, hashed (the spec's headers are left out: they carry the key)."""
    decided = {
        "subject": subject,
        "endpoint": endpoint,
        "model": spec.model,
        "messages": [dict(m) for m in messages],
        "max_tokens": spec.max_tokens,
        "temperature": spec.temperature,
        "seed": spec.seed,
        "extra": dict(spec.extra),
    }
    text = json.dumps(decided, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load(root: Path, digest: str) -> ChatReply | None:
    """The cached reply, or None (missing, unreadable or not a reply: asked again)."""
    path = root / digest[:2] / f"{digest}.json"
    try:
        # read bounded (a FIFO, device or deep file planted here is asked again, never waited on)
        data = RunReader(path.parent).document(path.name, "cached reply")
        fields = {f.name for f in dataclasses.fields(ChatReply)}
        reply = ChatReply(**{k: v for k, v in data.items() if k in fields})
    except (OSError, ValueError, TypeError, RunReadError):
        return None
    if not reply.ok:
        return None
    return dataclasses.replace(reply, retried=tuple(reply.retried))


def store(root: Path, digest: str, reply: ChatReply) -> None:
    if reply.ok:
        atomic_write_json(root / digest[:2] / f"{digest}.json", dataclasses.asdict(reply))


def cached(
    send: Callable[[Messages], ChatReply],
    subject: str,
    endpoint: str,
    spec: ChatSpec,
    root: Path,
    hits: list[bool],
) -> Callable[[Messages], ChatReply]:
    """`send` through the cache; each call appends whether it was a hit to `hits`."""

    def through(messages: Messages) -> ChatReply:
        digest = key(subject, endpoint, messages, spec)
        found = load(root, digest)
        hits.append(found is not None)
        if found is not None:
            return found
        reply = send(messages)
        store(root, digest, reply)
        return reply

    return through
