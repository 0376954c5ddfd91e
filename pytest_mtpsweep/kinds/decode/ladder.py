"""A decode ladder's own fields: the prompt set and the subset; treatments are compared."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...kindapi import SUBSETS, KindSpec, LadderError
from ...kindapi.ladder import Ladder, Spec, Treatment, parse_treatments

FIELDS: Spec = {
    "prompt_set": (str, False),
    "subset": (str, False),
    "repeats": (int, False),  # runs of each prompt per session, averaged before pairing
    "cache_prompt": (bool, False),  # llama-server's prompt cache (keyed; off by default)
    "degenerate": (str, False),  # flag (recorded) or stop (a stop rule)
    "request_seeds": (str, False),  # "ladder" (every request the ladder's seed) or per-measurement
}
DEGENERATE_RULES = ("flag", "stop")
# "per-measurement": each request's seed is drawn from (seed, prompt, cycle, repeat), the same for
# every treatment at that cell so pairs stay paired. Greedy answers do not change; what does is
# anything the server seeds by request (--spec-synth-rates' planted acceptance), which with one
# seed for every request is one draw per run, whatever the prompts.
REQUEST_SEEDS = ("ladder", "per-measurement")
MAX_REPEATS = 100  # runs of each prompt per session: cases are prompts x repeats x sessions


@dataclass(frozen=True)
class DecodeSettings:
    """A decode ladder's own fields, defaulted (the loader parses them once)."""

    prompt_set: str = "canonical"
    subset: str = SUBSETS.both
    repeats: int = 1
    cache_prompt: bool = False
    degenerate: str = "flag"  # one of DEGENERATE_RULES
    request_seeds: str = "ladder"  # one of REQUEST_SEEDS


def settings(ladder: Ladder, where: Path | str) -> DecodeSettings:
    """The ladder's decode fields (their types checked against FIELDS already)."""
    f = ladder.kind_fields
    return DecodeSettings(
        prompt_set=str(f.get("prompt_set", "canonical")),
        subset=str(f.get("subset", SUBSETS.both)),
        repeats=int(f.get("repeats", 1)),
        cache_prompt=bool(f.get("cache_prompt", False)),
        degenerate=str(f.get("degenerate", "flag")),
        request_seeds=str(f.get("request_seeds", "ladder")),
    )


def treatments(raw: dict[str, Any], path: Path) -> tuple[Treatment, ...]:
    if "treatments" not in raw:
        raise LadderError(f"{path}: missing required field 'treatments'; add [[treatments]].")
    return parse_treatments(raw["treatments"], "treatments", path)


def validate(ladder: Ladder, s: DecodeSettings, where: Path | str) -> None:
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
    if s.degenerate not in DEGENERATE_RULES:
        raise LadderError(
            f"{where}: field 'degenerate' is {s.degenerate!r}; use flag (record it) or stop (a "
            "stop rule)."
        )
    if s.request_seeds not in REQUEST_SEEDS:
        raise LadderError(
            f"{where}: field 'request_seeds' is {s.request_seeds!r}; use ladder (every request "
            "sends the ladder's seed) or per-measurement."
        )
    for text in (*ladder.prereg.primary_contrasts, *ladder.prereg.secondary_contrasts):
        ladder.contrast(text, where)
    if not 1 <= s.repeats <= MAX_REPEATS:
        raise LadderError(f"{where}: field 'repeats' is {s.repeats}; use 1 to {MAX_REPEATS}.")
    if s.subset not in SUBSETS.choices:
        raise LadderError(
            f"{where}: field 'subset' is {s.subset!r}; use one of {', '.join(SUBSETS.choices)}."
        )


SPEC = KindSpec("decode", FIELDS, treatments, validate, settings=settings)
