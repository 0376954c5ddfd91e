"""Did the model answer, or produce degenerate text? Judged after the stream, never inside it.

A decode rate measured on an echo loop says little about a server configuration: an n-gram
drafter predicts repeated text unusually well. So every record says whether its content was a
real answer, and why not when it was not.
"""

from __future__ import annotations

import re
from collections import Counter

# Turn markers of common chat templates: in an answer they mean the template did not fit.
CONTROL_STRINGS = (
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<|eot_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|begin_of_text|>",
    "[INST]",
    "[/INST]",
)
DEFAULT_REPEATS = 3  # the same line or sentence this often is a loop
MIN_UNIT_CHARS = 12  # shorter lines ("}", "return x") repeat in honest code
PROMPT_HEAD_CHARS = 40


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _most_repeated(units: list[str]) -> tuple[str, int]:
    counts = Counter(u for u in (_norm(u) for u in units) if len(u) >= MIN_UNIT_CHARS)
    return counts.most_common(1)[0] if counts else ("", 0)


def degenerate(prompt: str, content: str, repeats: int = DEFAULT_REPEATS) -> str | None:
    """Why `content` is not a real answer to `prompt`, or None when nothing says it is not."""
    if not content.strip():
        return "empty: the answer has no content"
    reasons: list[str] = []
    found = [s for s in CONTROL_STRINGS if s in content]
    if found:
        reasons.append(f"chat-template control strings in the content ({', '.join(found)})")
    head = _norm(prompt)[:PROMPT_HEAD_CHARS]
    text = _norm(content)
    if head and text.startswith(head):
        reasons.append("echo: the content starts with the prompt")
    elif head and text.count(head) >= 2:
        reasons.append(f"echo: the prompt appears {text.count(head)} times in the content")
    # Lines, and sentences (a loop need not break lines), long enough not to repeat by accident.
    unit, n = max(
        _most_repeated(content.splitlines()),
        _most_repeated(re.split(r"(?<=[.!?])\s+|\n", content)),
        key=lambda t: t[1],
    )
    if n >= repeats:
        shown = unit if len(unit) <= 40 else unit[:37] + "..."
        reasons.append(f"loop: {shown!r} repeated {n} times")
    return "; ".join(reasons) or None
