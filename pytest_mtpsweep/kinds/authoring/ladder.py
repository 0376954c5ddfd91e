"""An authoring ladder's own fields: subjects, cohorts, tasks, turns, repeats, the budget, the
checker's limits, the API retry policy and the registered contrast settings.

`baseline` names the baseline cohort (cohort A): every other cohort is contrasted with it
within each subject. `[[subjects]]` are server configurations like decode's treatments: a
local subject runs our llama-server with the ladder's model or its own `model`; a remote one is
attached by `base_url`, `served_model` and `api_key_env` (the NAME of the variable).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...kindapi import BOOT, KindSpec, LadderError
from ...kindapi.ladder import (
    Ladder,
    Spec,
    Treatment,
    check_key,
    check_table,
    parse_treatments,
    str_list,
)

FIELDS: Spec = {
    "model": (dict, False),  # optional here: every subject may name its own
    "server": (dict, False),  # optional here: remote subjects need no local server
    "subjects": (list, True),
    "cohorts": (list, True),
    "tasks": (list, False),
    "authoring_dir": (str, False),
    "max_turns": (int, False),
    "repeats": (int, False),
    "seeds": (list, False),
    "token_budget": (int, False),
    "feedback_chars": (int, False),
    "checker": (dict, False),
    "api": (dict, False),
    "contrast": (dict, False),
    "concurrency": ((int, dict), False),  # cells in flight: one number, or per subject key
}
CHECKER: Spec = {
    "timeout_s": ((int, float), False),
    "cpu_s": (int, False),
    "memory_mib": (int, False),
    "file_mib": (int, False),
    "tmp_mib": (int, False),
    "nproc": (int, False),
    "output_kib": (int, False),
    "call_timeout_s": ((int, float), False),
}
API: Spec = {
    "retries": (int, False),
    "backoff_s": ((int, float), False),
    "max_backoff_s": ((int, float), False),
    "timeout_s": ((int, float), False),
    "cache": (bool, False),
}
CONTRAST: Spec = {"resamples": (int, False), "seed": (int, False), "pooled": (bool, False)}


@dataclass(frozen=True)
class CheckerLimits:
    """What one check may use; a check past any of them is a failed check with the reason."""

    timeout_s: float = 20.0  # wall clock
    cpu_s: int = 10
    memory_mib: int = 1024  # address space
    file_mib: int = 16  # the largest file it may write
    tmp_mib: int = 64  # all it may write, where a private tmpfs is possible
    nproc: int = 64  # processes and threads beyond those its user already has
    output_kib: int = 256  # stdout + stderr kept; more stops the check
    call_timeout_s: float = 5.0  # one call of the solution, grader to candidate and back


@dataclass(frozen=True)
class ApiPolicy:
    """Transient API errors (429, 5xx, a reset connection) are retried with backoff, bounded."""

    retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    timeout_s: float = 300.0
    cache: bool = False  # replies kept and reused (replycache.py); off for measuring the subject


@dataclass(frozen=True)
class AuthoringSettings:
    """An authoring ladder's own fields, validated."""

    cohorts: tuple[str, ...]
    tasks: tuple[str, ...]  # empty: every task in the task directory
    authoring_dir: Path
    max_turns: int = 3
    repeats: int = 3
    token_budget: int | None = None
    feedback_chars: int = 1500
    checker: CheckerLimits = CheckerLimits()
    api: ApiPolicy = ApiPolicy()
    resamples: int = 2000
    boot_seed: int = 42
    pooled: bool = False
    seeds: tuple[int, ...] = ()  # one sampling seed per repeat; empty: derived from the ladder's
    concurrency: Mapping[str, int] = field(default_factory=dict)  # subject -> cells in flight
    # what [contrast] states of resamples and seed: pre-registered, so no option may differ
    contrast_stated: frozenset[str] = frozenset()

    def cells_in_flight(self, subject: str) -> int:
        return self.concurrency.get(subject, 1)


def repeat_seed(ladder_seed: int, repeat: int, seeds: tuple[int, ...] = ()) -> int:
    """The sampling seed of repeat `repeat` (from 1): the ladder's `seeds`, else derived from its
    seed, so repeats sample differently at temperature > 0 and every cohort and task of one
    repeat share its seed (a repeat pairs across cohorts)."""
    if seeds:
        return seeds[repeat - 1]
    digest = hashlib.sha256(f"{ladder_seed}:repeat:{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def settings(ladder: Ladder, where: Path | str | None = None) -> AuthoringSettings:
    """The authoring fields of a loaded ladder, their tables' fields checked (errors name
    `where`, else the ladder's path); `validate` checks the values."""
    f = ladder.kind_fields
    for table, spec in (("checker", CHECKER), ("api", API), ("contrast", CONTRAST)):
        check_table(f.get(table, {}), spec, f"{table}.", ladder.path if where is None else where)
    chk, api, con = f.get("checker", {}), f.get("api", {}), f.get("contrast", {})
    directory = Path(f.get("authoring_dir", "../authoring")).expanduser()
    return AuthoringSettings(
        cohorts=tuple(f["cohorts"]),
        tasks=tuple(f.get("tasks", ())),
        authoring_dir=(ladder.path.parent / directory).resolve(),
        max_turns=f.get("max_turns", 3),
        repeats=f.get("repeats", 3),
        token_budget=f.get("token_budget"),
        feedback_chars=f.get("feedback_chars", 1500),
        checker=CheckerLimits(**{k: chk[k] for k in chk}),
        api=ApiPolicy(**{k: api[k] for k in api}),
        resamples=con.get("resamples", 2000),
        boot_seed=con.get("seed", 42),
        pooled=con.get("pooled", False),
        seeds=tuple(f.get("seeds", ())),
        concurrency=_concurrency(f.get("concurrency", 1), ladder),
        contrast_stated=frozenset(k for k in ("resamples", "seed") if k in con),
    )


def _concurrency(value: int | dict[str, int], ladder: Ladder) -> dict[str, int]:
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    return {t.key: value for t in ladder.treatments}


def treatments(raw: dict[str, Any], path: Path) -> tuple[Treatment, ...]:
    if not raw.get("subjects"):
        raise LadderError(f"{path}: field 'subjects' is empty; add at least one [[subjects]].")
    subjects = parse_treatments(raw["subjects"], "subjects", path)
    for i, s in enumerate(subjects):
        where = f"{path}: subjects[{i}] ({s.key})"
        if s.attached and s.model:
            raise LadderError(
                f"{where} has both base_url and model; a remote subject names what it serves "
                "with served_model, a local one its GGUF with model."
            )
        if s.attached and not s.served_model:
            raise LadderError(
                f"{where} has a base_url but no served_model; name the model to request there."
            )
        if not s.attached and not s.model and "path" not in raw.get("model", {}):
            raise LadderError(
                f"{where} is local but names no model and the ladder has no [model] path; add "
                'model = "...gguf" to it, or a [model] table.'
            )
    return subjects


def _check_names(values: list[Any], field: str, where: Path | str) -> tuple[str, ...]:
    names = str_list(values, field, where)
    for n in names:
        check_key(n, field, where)
    if len(set(names)) != len(names):
        raise LadderError(f"{where}: field '{field}' names an entry twice; list each once.")
    return names


def validate(ladder: Ladder, s: AuthoringSettings, where: Path | str) -> None:
    f = ladder.kind_fields
    cohorts = _check_names(f["cohorts"], "cohorts", where)
    _check_names(f.get("tasks", []), "tasks", where)
    if ladder.baseline not in cohorts:
        raise LadderError(
            f"{where}: field 'baseline' is {ladder.baseline!r}, which is not one of the cohorts "
            f"({', '.join(cohorts)}); name the cohort the others are contrasted with."
        )
    if ladder.cycles != 1:
        raise LadderError(
            f"{where}: cycles is {ladder.cycles}; an authoring ladder runs one session per "
            "subject: drop cycles (or --cycles) and use repeats."
        )
    raw_seeds = f.get("seeds", [])
    if raw_seeds and (
        any(type(x) is not int or not 0 <= x < 2**31 for x in raw_seeds)
        or len(raw_seeds) != f.get("repeats", 3)
    ):
        raise LadderError(
            f"{where}: seeds is {raw_seeds!r}; give one integer from 0 to 2**31-1 per repeat "
            f"({f.get('repeats', 3)} repeats), or leave it out to derive them from seed."
        )
    c, a = s.checker, s.api
    checks: list[tuple[bool, str, Any, str]] = [
        (1 <= s.max_turns <= MAX_TURNS, "max_turns", s.max_turns, f"use 1 to {MAX_TURNS} turns"),
        (
            1 <= s.repeats <= MAX_REPEATS,
            "repeats",
            s.repeats,
            f"use 1 to {MAX_REPEATS} (3 or more at temperature 0)",
        ),
        (
            s.token_budget is None or 0 < s.token_budget <= MAX_TOKEN_BUDGET,
            "token_budget",
            s.token_budget,
            f"use a positive number of tokens up to {MAX_TOKEN_BUDGET:.0e}, or "
            "leave it out for no budget",
        ),
        (
            80 <= s.feedback_chars <= MAX_FEEDBACK_CHARS,
            "feedback_chars",
            s.feedback_chars,
            f"use 80 to {MAX_FEEDBACK_CHARS}",
        ),
        *_limit_checks(c),
        (
            a.retries >= 0 and a.backoff_s >= 0 and a.max_backoff_s >= a.backoff_s,
            "api",
            a,
            "use retries >= 0 and 0 <= backoff_s <= max_backoff_s",
        ),
        (
            0 < a.timeout_s <= MAX_SECONDS,
            "api.timeout_s",
            a.timeout_s,
            f"use a number of seconds from 1 to {MAX_SECONDS}",
        ),
        (
            a.max_backoff_s <= MAX_SECONDS,
            "api.max_backoff_s",
            a.max_backoff_s,
            f"use at most {MAX_SECONDS} seconds",
        ),
        (a.retries <= 100, "api.retries", a.retries, "use at most 100 retries"),
        (
            1000 <= s.resamples <= BOOT.max,
            "contrast.resamples",
            s.resamples,
            f"use 1000 to {BOOT.max}",
        ),
        (s.boot_seed >= 0, "contrast.seed", s.boot_seed, "use a non-negative seed"),
    ]
    for ok, name, value, fix in checks:
        if not ok:
            raise LadderError(f"{where}: {name} is {value!r}; {fix}.")
    _check_concurrency(f.get("concurrency", 1), ladder, where)


def _check_concurrency(value: Any, ladder: Ladder, where: Path | str) -> None:
    subjects = {t.key for t in ladder.treatments}
    items = value.items() if isinstance(value, dict) else [("", value)]
    for key, n in items:
        name = f"concurrency.{key}" if key else "concurrency"
        if key and key not in subjects:
            raise LadderError(
                f"{where}: {name} names no subject; use one of {', '.join(sorted(subjects))}."
            )
        if type(n) is not int or not 1 <= n <= MAX_CONCURRENCY:
            raise LadderError(
                f"{where}: {name} is {n!r}; use a whole number of cells in flight from 1 to "
                f"{MAX_CONCURRENCY}."
            )


MAX_CONCURRENCY = 64
# Counts that multiply a run's conversations and turns (subjects x cohorts x tasks x repeats x
# turns): bounded so a typo cannot plan a run that never ends.
MAX_REPEATS = 100
MAX_TURNS = 100
MAX_TOKEN_BUDGET = 10**12
MAX_FEEDBACK_CHARS = 1_000_000  # the checker's output kept is bounded too (output_kib)
MAX_SECONDS = 3600  # a check (or a request) that needs longer than an hour is a mistake
MAX_NPROC = 4096


def host_ram_mib() -> int:
    """This host's physical memory in MiB: no check may be allowed more."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20


def _limit_checks(c: CheckerLimits) -> list[tuple[bool, str, Any, str]]:
    """Each checker limit within (0, its bound]; the bounds keep every rlimit representable."""
    ram = host_ram_mib()
    seconds = f"use a number of seconds above 0 and at most {MAX_SECONDS} (an hour)"
    sizes = f"use 1 to {ram} MiB (this host's memory)"
    return [
        (0 < c.timeout_s <= MAX_SECONDS, "checker.timeout_s", c.timeout_s, seconds),
        (
            1 <= c.cpu_s <= MAX_SECONDS,
            "checker.cpu_s",
            c.cpu_s,
            f"use whole seconds from 1 to {MAX_SECONDS}",
        ),
        (0 < c.call_timeout_s <= MAX_SECONDS, "checker.call_timeout_s", c.call_timeout_s, seconds),
        (1 <= c.memory_mib <= ram, "checker.memory_mib", c.memory_mib, sizes),
        (1 <= c.tmp_mib <= ram, "checker.tmp_mib", c.tmp_mib, sizes),
        (1 <= c.file_mib <= ram, "checker.file_mib", c.file_mib, sizes),
        (
            1 <= c.output_kib <= ram * 1024,
            "checker.output_kib",
            c.output_kib,
            f"use 1 to {ram * 1024} KiB",
        ),
        (1 <= c.nproc <= MAX_NPROC, "checker.nproc", c.nproc, f"use 1 to {MAX_NPROC}"),
    ]


SPEC = KindSpec(
    "authoring", FIELDS, treatments, validate, defaults={"cycles": 1}, settings=settings
)
