"""A decode ladder's own fields: the prompt set and the subset; treatments are compared."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...constants import BOTH, SUBSETS
from ...errors import LadderError
from ...kindapi import KindSpec
from ...ladder.fields import Spec, parse_contrast
from ...ladder.load import parse_treatments
from ...ladder.model import Ladder, Treatment

FIELDS: Spec = {
    "prompt_set": (str, False),
    "subset": (str, False),
    "repeats": (int, False),  # runs of each prompt per session, averaged before pairing
    "cache_prompt": (bool, False),  # llama-server's prompt cache (keyed; off by default)
    "degenerate": (str, False),  # flag (recorded) or stop (a stop rule)
}
DEGENERATE_RULES = ("flag", "stop")
MAX_REPEATS = 100  # runs of each prompt per session: cases are prompts x repeats x sessions


def treatments(raw: dict[str, Any], path: Path) -> tuple[Treatment, ...]:
    if "treatments" not in raw:
        raise LadderError(f"{path}: missing required field 'treatments'; add [[treatments]].")
    return parse_treatments(raw["treatments"], "treatments", path)


def validate(ladder: Ladder, where: Path | str) -> None:
    keys = ladder.treatment_keys
    if len(keys) < 2:
        raise LadderError(
            f"{where}: a decode ladder needs at least two [[treatments]] (a baseline and one to "
            f"compare with it), but it has only {', '.join(keys)}; add another treatment."
        )
    if ladder.baseline not in keys:
        raise LadderError(
            f"{where}: field 'baseline' is {ladder.baseline!r}, which is not a treatment key "
            f"({', '.join(keys)}); name one of them."
        )
    rule = ladder.kind_fields.get("degenerate", "flag")
    if rule not in DEGENERATE_RULES:
        raise LadderError(
            f"{where}: field 'degenerate' is {rule!r}; use flag (record it) or stop (a stop rule)."
        )
    for text in (*ladder.prereg.primary_contrasts, *ladder.prereg.secondary_contrasts):
        parse_contrast(text, keys, where)
    repeats = ladder.kind_fields.get("repeats", 1)
    if not 1 <= repeats <= MAX_REPEATS:
        raise LadderError(f"{where}: field 'repeats' is {repeats}; use 1 to {MAX_REPEATS}.")
    subset = ladder.kind_fields.get("subset", BOTH)
    if subset not in SUBSETS:
        raise LadderError(
            f"{where}: field 'subset' is {subset!r}; use one of {', '.join(SUBSETS)}."
        )


SPEC = KindSpec("decode", FIELDS, treatments, validate)
