"""Prompt sets: one text file per prompt, its subset named by the file's prefix."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

SUBSET_NAMES = ("prose", "structured")


class PromptError(Exception):
    """A prompt set is missing or malformed; the message names the path and the fix."""


@dataclass(frozen=True)
class Prompt:
    """One canonical prompt."""

    id: str
    subset: str
    text: str


def load_prompt_set(directory: Path) -> tuple[Prompt, ...]:
    """Every `<subset>_<nn>.txt` in a directory, sorted by id."""
    if not directory.is_dir():
        raise PromptError(
            f"prompt set {directory} does not exist; pass --prompts-dir or set prompt_set in the ladder."
        )
    prompts: list[Prompt] = []
    for path in sorted(directory.glob("*.txt")):
        subset = path.stem.split("_", 1)[0]
        if subset not in SUBSET_NAMES:
            raise PromptError(
                f"{path}: prompt file names must start with 'prose_' or 'structured_'; rename it."
            )
        text = path.read_text(encoding="utf-8").strip()
        if not text:
            raise PromptError(f"{path}: the prompt is empty; write the prompt or remove the file.")
        prompts.append(Prompt(path.stem, subset, text))
    if not prompts:
        raise PromptError(f"prompt set {directory} holds no *.txt prompts; add prose_01.txt etc.")
    return tuple(prompts)


def select(prompts: tuple[Prompt, ...], subset: str) -> tuple[Prompt, ...]:
    """`prose`, `structured` or `both`."""
    if subset == "both":
        return prompts
    return tuple(p for p in prompts if p.subset == subset)


def digest(prompts: tuple[Prompt, ...]) -> str:
    """sha256 over ids and texts: the prompt set's identity for comparability."""
    h = hashlib.sha256()
    for p in sorted(prompts, key=lambda p: p.id):
        h.update(p.id.encode())
        h.update(b"\0")
        h.update(p.text.encode())
        h.update(b"\0")
    return h.hexdigest()
