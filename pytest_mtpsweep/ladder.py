"""Ladders: an experiment definition in TOML, its validation, and the counterbalanced run plan."""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EMBEDDED_MODEL = "embedded:gemma3-270m"


class LadderError(Exception):
    """A ladder file is missing, malformed or inconsistent; the message names file, field and fix."""


@dataclass(frozen=True)
class Treatment:
    """One server configuration: a key and the server flags that realise it."""

    key: str
    args: tuple[str, ...] = ()
    memory_step_mib: float | None = None  # expected extra memory after load over the baseline


@dataclass(frozen=True)
class AnalysisConfig:
    """Pre-registered analysis settings carried by the ladder."""

    margin_pct: float = 1.0
    tiebreak_pp: float = 1.0
    primary_endpoint: str = "primary"


@dataclass(frozen=True)
class PreflightConfig:
    """What the rig must look like before a run starts."""

    server_build: str | None = None
    ram_floor_gb: float | None = None
    disk_floor_gb: float | None = None
    inactive_processes: tuple[str, ...] = ()
    inactive_units: tuple[str, ...] = ()


DEFAULT_CURTAILMENT = (
    "This run was curtailed: [treatment] lost part of its counterbalanced positions, so its "
    "contrast with the baseline is not balanced against drift and may be biased in either "
    "direction; the cell is reported as order-confounded and no conclusion rests on it."
)


@dataclass(frozen=True)
class Preregistration:
    """What the ladder commits to before the first measurement."""

    primary_contrasts: tuple[str, ...] = ()
    secondary_contrasts: tuple[str, ...] = ()
    multiplicity: str = ""
    drop_order: tuple[str, ...] = ()  # "treatment:cN", first dropped first
    never_drop: str = ""
    curtailment_sentence: str = DEFAULT_CURTAILMENT


@dataclass(frozen=True)
class ExternalLaunchers:
    """A rig's own launch/stop executables, with optional pinned sha256 digests."""

    launch: Path
    stop: Path
    launch_sha256: str | None = None
    stop_sha256: str | None = None


@dataclass(frozen=True)
class Ladder:
    """An experiment definition, after command-line overrides are applied."""

    name: str
    path: Path
    question: str
    treatments: tuple[Treatment, ...]
    baseline: str
    cycles: int
    model: str
    model_id: str
    server_bin: str | None
    server_args: tuple[str, ...]
    host: str
    port: int
    ctx_size: int
    ready_timeout_s: float
    prompt_set: str
    subset: str
    max_tokens: int
    seed: int
    temperature: float
    placement: str
    note: str
    requires_model: str
    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)
    preflight: PreflightConfig = field(default_factory=PreflightConfig)
    launchers: ExternalLaunchers | None = None
    prereg: Preregistration = field(default_factory=Preregistration)
    reasoning_expected: bool = False

    def treatment(self, key: str) -> Treatment:
        for t in self.treatments:
            if t.key == key:
                return t
        raise KeyError(key)

    def replace(self, **changes: Any) -> Ladder:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class SessionSlot:
    """One server session of the plan: a (treatment, cycle) at its ordinal in the full plan."""

    ordinal: int
    treatment: str
    cycle: int

    @property
    def name(self) -> str:
        return f"{self.ordinal:02d}_{self.treatment}_c{self.cycle}"

    @property
    def id(self) -> str:
        return f"c{self.cycle}-{self.treatment}"


def run_plan(treatment_keys: tuple[str, ...] | list[str], cycles: int) -> list[SessionSlot]:
    """Odd cycles in ladder order, even cycles in exact reverse (ABC CBA …), numbered from 1."""
    slots: list[SessionSlot] = []
    for cycle in range(1, cycles + 1):
        order = list(treatment_keys) if cycle % 2 == 1 else list(reversed(treatment_keys))
        for key in order:
            slots.append(SessionSlot(len(slots) + 1, key, cycle))
    return slots


def session_label(slot: SessionSlot) -> str:
    """How a ladder names a session in its drop order: `treatment:cN`."""
    return f"{slot.treatment}:c{slot.cycle}"


def run_order_key(slot: SessionSlot, prompt_index: int) -> tuple[int, int]:
    """Sort key of a measurement: its session's ordinal, then its prompt's place in the set."""
    return (slot.ordinal, prompt_index)


# field name -> (type(s), required)
_TOP: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "name": (str, False),
    "question": (str, True),
    "baseline": (str, True),
    "cycles": (int, False),
    "prompt_set": (str, False),
    "subset": (str, False),
    "max_tokens": (int, False),
    "seed": (int, False),
    "temperature": ((int, float), False),
    "placement": (str, False),
    "note": (str, False),
    "model": (dict, True),
    "server": (dict, True),
    "treatments": (list, True),
    "analysis": (dict, False),
    "preflight": (dict, False),
    "preregistration": (dict, False),
    "reasoning_expected": (bool, False),
}
_PREREG: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "primary_contrasts": (list, False),
    "secondary_contrasts": (list, False),
    "multiplicity": (str, False),
    "drop_order": (list, False),
    "never_drop": (str, False),
    "curtailment_sentence": (str, False),
}
_MODEL: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "path": (str, False),
    "id": (str, True),
    "requires": (str, False),
}
_SERVER: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "bin": (str, False),
    "args": (list, False),
    "host": (str, False),
    "port": (int, False),
    "ctx_size": (int, False),
    "ready_timeout_s": ((int, float), False),
    "launch": (str, False),
    "stop": (str, False),
    "launch_sha256": (str, False),
    "stop_sha256": (str, False),
}
_TREATMENT: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "key": (str, True),
    "args": (list, False),
    "memory_step_mib": ((int, float), False),
}
_ANALYSIS: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "margin_pct": ((int, float), False),
    "tiebreak_pp": ((int, float), False),
    "primary_endpoint": (str, False),
}
_PREFLIGHT: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "server_build": (str, False),
    "ram_floor_gb": ((int, float), False),
    "disk_floor_gb": ((int, float), False),
    "inactive_processes": (list, False),
    "inactive_units": (list, False),
}
SUBSETS = ("prose", "structured", "both")


def _check_table(
    table: dict[str, Any],
    spec: dict[str, tuple[type | tuple[type, ...], bool]],
    where: str,
    path: Path,
) -> None:
    for key in table:
        if key not in spec:
            known = ", ".join(sorted(spec))
            raise LadderError(
                f"{path}: unknown field {where}{key!r}; remove it or use one of: {known}."
            )
    for key, (types, required) in spec.items():
        if key not in table:
            if required:
                raise LadderError(f"{path}: missing required field {where}{key!r}; add it.")
            continue
        value = table[key]
        # bool is an int subclass; a flag value of `true` for cycles would slip through otherwise.
        allowed = (types,) if isinstance(types, type) else types
        if (isinstance(value, bool) and bool not in allowed) or not isinstance(value, types):
            names = (
                types.__name__
                if isinstance(types, type)
                else " or ".join(t.__name__ for t in types)
            )
            raise LadderError(
                f"{path}: field {where}{key!r} is {value!r} but must be a {names}; fix its value."
            )


def _str_list(value: list[Any], where: str, path: Path) -> tuple[str, ...]:
    if not all(isinstance(v, str) for v in value):
        raise LadderError(
            f"{path}: field {where} must be a list of strings (one argv item each), e.g. "
            f'["--spec-type", "ngram-simple"]; quote every item.'
        )
    return tuple(value)


def load_ladder(path: Path) -> Ladder:
    """Read and validate one ladder file."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LadderError(
            f"{path}: ladder file not found; check the --ladder name or path."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise LadderError(f"{path}: not valid TOML ({exc}); fix the syntax at that spot.") from None
    _check_table(raw, _TOP, "", path)
    model, server = raw["model"], raw["server"]
    _check_table(model, _MODEL, "model.", path)
    _check_table(server, _SERVER, "server.", path)
    analysis_raw = raw.get("analysis", {})
    _check_table(analysis_raw, _ANALYSIS, "analysis.", path)
    reg = raw.get("preregistration", {})
    _check_table(reg, _PREREG, "preregistration.", path)
    pre = raw.get("preflight", {})
    _check_table(pre, _PREFLIGHT, "preflight.", path)

    treatments: list[Treatment] = []
    for i, t in enumerate(raw["treatments"]):
        where = f"treatments[{i}]."
        if not isinstance(t, dict):
            raise LadderError(
                f"{path}: {where[:-1]} must be a table with key and args; use [[treatments]]."
            )
        _check_table(t, _TREATMENT, where, path)
        key = t["key"]
        if not key or not all(c.isalnum() or c in "._-" for c in key):
            raise LadderError(
                f"{path}: field {where}key {key!r} must be non-empty letters, digits, '.', '_' or '-' "
                "(it names files and test ids); rename it."
            )
        step = t.get("memory_step_mib")
        treatments.append(
            Treatment(
                key,
                _str_list(t.get("args", []), where + "args", path),
                float(step) if step is not None else None,
            )
        )
    if not treatments:
        raise LadderError(f"{path}: field 'treatments' is empty; add at least two [[treatments]].")
    keys = [t.key for t in treatments]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise LadderError(
            f"{path}: treatment keys {dupes} appear twice; give each treatment a unique key."
        )
    if raw["baseline"] not in keys:
        raise LadderError(
            f"{path}: field 'baseline' is {raw['baseline']!r}, which is not a treatment key "
            f"({', '.join(keys)}); name one of them."
        )
    if not raw["question"].strip():
        raise LadderError(f"{path}: field 'question' is empty; write the question before the run.")
    subset = raw.get("subset", "both")
    if subset not in SUBSETS:
        raise LadderError(f"{path}: field 'subset' is {subset!r}; use one of {', '.join(SUBSETS)}.")
    ladder = Ladder(
        name=raw.get("name", path.stem),
        path=path,
        question=raw["question"].strip(),
        treatments=tuple(treatments),
        baseline=raw["baseline"],
        cycles=raw.get("cycles", 2),
        model=model.get("path", ""),
        model_id=model["id"],
        requires_model=model.get("requires", ""),
        server_bin=server.get("bin"),
        server_args=_str_list(server.get("args", []), "server.args", path),
        host=server.get("host", "127.0.0.1"),
        port=server.get("port", 8080),
        ctx_size=server.get("ctx_size", 4096),
        ready_timeout_s=float(server.get("ready_timeout_s", 300.0)),
        prompt_set=raw.get("prompt_set", "canonical"),
        subset=subset,
        max_tokens=raw.get("max_tokens", 256),
        seed=raw.get("seed", 42),
        temperature=float(raw.get("temperature", 0.0)),
        placement=raw.get("placement", ""),
        note=raw.get("note", ""),
        analysis=AnalysisConfig(
            margin_pct=float(analysis_raw.get("margin_pct", 1.0)),
            tiebreak_pp=float(analysis_raw.get("tiebreak_pp", 1.0)),
            primary_endpoint=analysis_raw.get("primary_endpoint", "primary"),
        ),
        preflight=PreflightConfig(
            server_build=pre.get("server_build"),
            ram_floor_gb=pre.get("ram_floor_gb"),
            disk_floor_gb=pre.get("disk_floor_gb"),
            inactive_processes=_str_list(
                pre.get("inactive_processes", []), "preflight.inactive_processes", path
            ),
            inactive_units=_str_list(
                pre.get("inactive_units", []), "preflight.inactive_units", path
            ),
        ),
    )
    ladder = ladder.replace(
        launchers=_launchers(server, path),
        reasoning_expected=raw.get("reasoning_expected", False),
        prereg=Preregistration(
            primary_contrasts=_str_list(
                reg.get("primary_contrasts", []), "preregistration.primary_contrasts", path
            ),
            secondary_contrasts=_str_list(
                reg.get("secondary_contrasts", []), "preregistration.secondary_contrasts", path
            ),
            multiplicity=reg.get("multiplicity", ""),
            drop_order=_str_list(reg.get("drop_order", []), "preregistration.drop_order", path),
            never_drop=reg.get("never_drop", ""),
            curtailment_sentence=reg.get("curtailment_sentence", DEFAULT_CURTAILMENT),
        ),
    )
    validate(ladder, path)
    return ladder


def _launchers(server: dict[str, Any], path: Path) -> ExternalLaunchers | None:
    if "launch" not in server and "stop" not in server:
        return None
    if "launch" not in server or "stop" not in server:
        raise LadderError(
            f"{path}: server.launch and server.stop come as a pair; give both or neither."
        )
    found: list[Path] = []
    for key in ("launch", "stop"):
        p = Path(server[key]).expanduser()
        p = (p if p.is_absolute() else path.parent / p).resolve()
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise LadderError(
                f"{path}: server.{key} names {p}, which is not an executable file; fix the path "
                "(relative paths start at the ladder's directory) or chmod +x it."
            )
        found.append(p)
    return ExternalLaunchers(
        found[0], found[1], server.get("launch_sha256"), server.get("stop_sha256")
    )


def validate(ladder: Ladder, where: Path | str) -> None:
    """Check the numeric ranges; called again after command-line overrides."""
    checks: list[tuple[bool, str, str]] = [
        (ladder.cycles >= 1, "cycles", "use 1 or more (2 for one counterbalanced pair)"),
        (ladder.max_tokens >= 2, "max_tokens", "use 2 or more (a decode rate needs two tokens)"),
        (
            0 <= ladder.port <= 65535,
            "server.port",
            "use a TCP port 1-65535, or 0 for any free port",
        ),
        (ladder.ctx_size > 0, "server.ctx_size", "use a positive context size"),
        (ladder.temperature >= 0, "temperature", "use 0 (greedy) or a positive temperature"),
        (ladder.ready_timeout_s > 0, "server.ready_timeout_s", "use a positive number of seconds"),
        (ladder.subset in SUBSETS, "subset", f"use one of {', '.join(SUBSETS)}"),
    ]
    for ok, name, fix in checks:
        if not ok:
            value = getattr(ladder, name.split(".")[-1])
            raise LadderError(f"{where}: {name} is {value!r}; {fix}.")
    names = {session_label(s) for s in run_plan([t.key for t in ladder.treatments], ladder.cycles)}
    reg = ladder.prereg
    for label in (*reg.drop_order, *([reg.never_drop] if reg.never_drop else [])):
        if label not in names:
            raise LadderError(
                f"{where}: preregistration names session {label!r}, which is not in the plan; "
                f"use TREATMENT:cN with one of {', '.join(sorted(names))}."
            )
    if reg.never_drop and reg.never_drop in reg.drop_order:
        raise LadderError(
            f"{where}: preregistration.drop_order includes the never-drop session "
            f"{reg.never_drop!r}; remove it from drop_order."
        )


def find_ladder(name_or_path: str, search_dirs: list[Path]) -> Path:
    """Resolve `--ladder` as a file path or a name under one of the `ladders/` directories."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.is_file():
        if candidate.is_file():
            return candidate.resolve()
        raise LadderError(f"--ladder {name_or_path}: no such file; check the path.")
    tried: list[Path] = []
    for d in search_dirs:
        p = d / f"{name_or_path}.toml"
        tried.append(p)
        if p.is_file():
            return p.resolve()
    available = sorted({p.stem for d in search_dirs if d.is_dir() for p in d.glob("*.toml")})
    raise LadderError(
        f"--ladder {name_or_path}: no ladder of that name in "
        f"{', '.join(str(t.parent) for t in tried) or 'any ladders/ directory'}; "
        f"available: {', '.join(available) or 'none'}."
    )
