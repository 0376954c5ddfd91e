"""What a decode session's records add up to: finish reasons, draft acceptance, and the
shakedown the users ran over their first row (pure functions over record dicts)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def finish_reasons(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """`{"stop": 14, "length": 2}`: how the answers ended (unanswered requests left out)."""
    counts = Counter(str(r["finish_reason"]) for r in records if r.get("finish_reason"))
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def draft_totals(records: Sequence[Mapping[str, Any]]) -> dict[str, int | None]:
    """Drafted and accepted tokens over the valid records (None: no drafter reported any)."""
    drafted = [r for r in records if r.get("valid") is True and _int(r.get("draft_n")) is not None]
    if not drafted:
        return {"draft_n": None, "draft_n_accepted": None}
    return {
        "draft_n": sum(_int(r.get("draft_n")) or 0 for r in drafted),
        "draft_n_accepted": sum(_int(r.get("draft_n_accepted")) or 0 for r in drafted),
    }


def token_basis_agrees(record: Mapping[str, Any]) -> bool:
    """Whether usage's completion tokens match the content events one to one. A stop's
    end-of-generation token is counted but never streamed, so it is allowed for."""
    tokens, events = _int(record.get("completion_tokens")), _int(record.get("content_chunks"))
    if tokens is None or events is None:
        return False
    return tokens - events == (1 if record.get("finish_reason") == "stop" else 0)


def shakedown(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The log's "row-1 shakedown" over one session's records: streamed for real (not one
    chunk), usage on every response, one content event per token, no hidden events."""
    answered = [r for r in records if r.get("http_status") == 200]
    return {
        "responses": len(answered),
        "non_chunked": sum(
            1
            for r in answered
            if (_int(r.get("completion_tokens")) or 0) >= 2
            and (_int(r.get("content_chunks")) or 0) <= 1
        ),
        "with_usage": sum(1 for r in answered if _int(r.get("completion_tokens")) is not None),
        "token_basis_agree": sum(1 for r in answered if token_basis_agrees(r)),
        "hidden_events": sum(
            1
            for r in answered
            if (_int(r.get("reasoning_chars")) or 0) > 0 or r.get("unrecognised_delta_fields")
        ),
    }


def describe_shakedown(session: str, s: Mapping[str, int]) -> str:
    """One line, as the users wrote theirs."""
    n = s.get("responses", 0)
    return (
        f"row-1 shakedown ({session}, {n} responses): "
        f"{s.get('non_chunked', 0)} non-chunked, usage {s.get('with_usage', 0)}/{n}, "
        f"token-basis agreement {s.get('token_basis_agree', 0)}/{n}, "
        f"{s.get('hidden_events', 0)} hidden events"
    )
