"""The served-model witness, one rule for every kind: each response's `model` field must name
the treatment's alias (what the harness gave a server it launched, or what an attached server
serves); another name, or none on an answer that came to its end, makes the request invalid."""

from __future__ import annotations

from collections.abc import Collection


def model_reason(models: Collection[str], expected: str, *, answered: bool) -> str | None:
    """Why the `model` fields a stream carried disqualify it (None: they do not). `answered`:
    the stream came to its end without another error, so a missing witness counts."""
    if models and set(models) != {expected}:
        return f"wrong server answered: model {sorted(models)} != alias {expected!r}"
    if answered and not models:
        return "no model field in the stream: the alias witness is missing"
    return None


def shown(models: Collection[str]) -> str | None:
    """The record's `model`: the one name, or every name seen (comma-joined), or None."""
    return ",".join(sorted(models)) or None
