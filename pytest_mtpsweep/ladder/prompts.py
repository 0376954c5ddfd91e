"""Prompt sets: one text file per prompt, named `<subset>_<nn>.txt`."""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path

from ..base.constants import SUBSETS
from ..base.errors import PromptError
from ..base.fileio import BadFile, read_bounded

_NAME = re.compile(rf"({'|'.join(SUBSETS.names)})_[0-9]+")


@dataclass(frozen=True)
class Prompt:
    """One canonical prompt."""

    id: str
    subset: str
    text: str


# A prompt, task or trace text is read whole: 16 MiB holds a prompt of millions of tokens, past
# any context a server takes, while a FIFO, /dev/zero or a GiB file is refused unread.
MAX_TEXT_FILE_BYTES = 16 * 1024 * 1024


def read_text_file(path: Path, what: str) -> str:
    """A UTF-8 text file, or a one-line error saying why it cannot be read and what to do."""
    try:
        data = read_bounded(path, MAX_TEXT_FILE_BYTES)
    except BadFile as exc:
        why = str(exc)
        if why.startswith("is a folder"):
            raise PromptError(
                f"{what} {path} is a directory; remove it or put a file there."
            ) from None
        if why.startswith("cannot be read"):
            raise PromptError(
                f"{what} {path} {why}; fix its permissions or replace the file."
            ) from None
        raise PromptError(
            f"{what} {path} {why}; replace it with a UTF-8 text file of at most 16 MiB."
        ) from None
    if b"\0" in data:
        raise PromptError(f"{what} {path} is binary, not text; replace it with a UTF-8 text file.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptError(
            f"{what} {path} is not UTF-8 (byte {exc.start}); save it as UTF-8."
        ) from None


def load_prompt_set(directory: Path) -> tuple[Prompt, ...]:
    """Every `<subset>_<nn>.txt` in a directory, sorted by id."""
    if not directory.is_dir():
        raise PromptError(
            f"prompt set {directory} does not exist; pass --prompts-dir or set prompt_set in "
            "the ladder."
        )
    prompts: list[Prompt] = []
    for path in sorted(directory.glob("*.txt")):
        if not _NAME.fullmatch(path.stem):
            raise PromptError(
                f"{path}: prompt file names must be prose_<nn>.txt or structured_<nn>.txt "
                "(e.g. prose_01.txt); rename it or move it out of the prompt set."
            )
        text = read_text_file(path, "prompt file").strip()
        if not text:
            raise PromptError(f"{path}: the prompt is empty; write the prompt or remove the file.")
        prompts.append(Prompt(path.stem, path.stem.split("_", 1)[0], text))
    if not prompts:
        raise PromptError(f"prompt set {directory} holds no *.txt prompts; add prose_01.txt etc.")
    return tuple(prompts)


def select(prompts: tuple[Prompt, ...], subset: str) -> tuple[Prompt, ...]:
    """One subset's prompts (`constants.SUBSETS.names`), or all of them (`both`)."""
    if subset == SUBSETS.both:
        return prompts
    return tuple(p for p in prompts if p.subset == subset)


@dataclass(frozen=True)
class PromptSet:
    """A prompt set as a run uses it: the folder it was read from and its prompts (one subset,
    or both)."""

    directory: Path
    prompts: tuple[Prompt, ...]

    @classmethod
    def of_ladder(
        cls, ladder_path: Path, prompt_set: str, subset: str, prompts_dir: Path | None = None
    ) -> PromptSet:
        """The prompt set a ladder names (`prompts/<set>` beside its folder, or
        `--prompts-dir`), selected by subset; PromptError when the subset has none."""
        directory = prompts_dir or ladder_path.parent.parent / "prompts" / prompt_set
        prompts = select(load_prompt_set(directory), subset)
        if not prompts:
            raise PromptError(
                f"prompt set {directory} has no {subset} prompts; choose another --subset."
            )
        return cls(directory, prompts)

    @property
    def digest(self) -> str:
        """sha256 over ids and texts: the prompt set's identity for comparability."""
        h = hashlib.sha256()
        for p in sorted(self.prompts, key=lambda p: p.id):
            h.update(p.id.encode())
            h.update(b"\0")
            h.update(p.text.encode())
            h.update(b"\0")
        return h.hexdigest()

    def in_order(self, cycle: int, seed: int) -> list[Prompt]:
        """The prompts in the order a session of this cycle runs them.

        Every session of a cycle runs the same order, so a treatment and its baseline meet each
        prompt at the same position; odd cycles rotate the set by a seeded offset per cycle pair
        and even cycles run the exact reverse, so over a pair every prompt's positions sum to
        n−1 and a treatment whose speed drifts within a session shows it as a trend on position.
        """
        prompts = self.prompts
        n = len(prompts)
        pair = (cycle - 1) // 2
        offset = 0 if pair == 0 or n == 0 else random.Random(f"{seed}:{pair}").randrange(n)
        order = list(prompts[offset:] + prompts[:offset])
        return order if cycle % 2 == 1 else order[::-1]
