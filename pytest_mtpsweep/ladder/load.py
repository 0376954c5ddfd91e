"""Reading a ladder: TOML -> validated `Ladder`, command-line overrides merged in first."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..base.errors import LadderError
from ..base.fileio import BadFile, read_bounded
from . import hostthresholds as hostrule
from . import stop
from . import sweepaxes as sweep
from .attachfields import attach_fields
from .builds import build_fields
from .fields import (
    MAX_CPU_ID,
    Spec,
    check_ints,
    check_key,
    check_table,
    parse_cpus,
    parse_placement,
    str_list,
)
from .runplan import ladder_plan
from .values import (
    BOUNDS,
    DEFAULT_CURTAILMENT,
    DEFAULT_STALL_S,
    MAX_CTX_SIZE,
    MAX_CYCLES,
    MAX_TIMEOUT_S,
    AnalysisConfig,
    ExternalLaunchers,
    Ladder,
    PreflightConfig,
    Preregistration,
    Treatment,
)

# Tokens one request may ask for: past any context a server supports, and small enough that the
# disk estimate of a run stays a number (2**63 was once accepted).
MAX_TOKENS_CAP = 1 << 20
MAX_SEED = 2**31 - 1  # as authoring's `seeds`: llama-server's seed is 32 bits, -1 (all ones) random
TOP: Spec = {
    "kind": (str, False),
    "name": (str, False),
    "question": (str, True),
    "baseline": (str, True),
    "cycles": (int, False),
    "max_tokens": (int, False),
    "seed": (int, False),
    "temperature": ((int, float), False),
    "placement": ((str, dict), False),
    "note": (str, False),
    "model": (dict, True),
    "server": (dict, True),
    "treatments": (list, False),
    "analysis": (dict, False),
    "preflight": (dict, False),
    "preregistration": (dict, False),
    "reasoning_expected": (bool, False),
    "measurement_timeout_s": ((int, float), False),
    "stall_threshold_s": ((int, float), False),
    "stop": (dict, False),
    "host_rule": (dict, False),
    "sweep": (dict, False),
}
MODEL: Spec = {
    "path": (str, False),
    "id": (str, True),
    "requires": (str, False),
    "chat_template_sha256": (str, False),
}
SERVER: Spec = {
    "bin": (str, False),
    "args": (list, False),
    "host": (str, False),
    "port": (int, False),
    "ctx_size": (int, False),
    "ready_timeout_s": ((int, float), False),
    "cpus": (str, False),
    "launch": (str, False),
    "stop": (str, False),
    "launch_sha256": (str, False),
    "stop_sha256": (str, False),
}
TREATMENT: Spec = {
    "key": (str, True),
    "args": (list, False),
    "memory_step_mib": ((int, float), False),
    "base_url": (str, False),
    "api_key_env": (str, False),
    "served_model": (str, False),
    "flags_file": (str, False),
    "flags_command": (list, False),
    "ready_url": (str, False),
    "metrics": (bool, False),
    "model": (str, False),
    "model_id": (str, False),
    "server_bin": (str, False),
    "server_pip": (str, False),
    "server_commit": (str, False),
    "server_repo": (str, False),
}
ANALYSIS: Spec = {
    "margin_pct": ((int, float), False),
    "tiebreak_pp": ((int, float), False),
    "primary_endpoint": (str, False),
}
PREFLIGHT: Spec = {
    "server_build": (str, False),
    "ram_floor_gb": ((int, float), False),
    "disk_floor_gb": ((int, float), False),
    "inactive_processes": (list, False),
    "inactive_units": (list, False),
    "host_idle_pct": ((int, float), False),
    "host_noise_pct": ((int, float), False),
    "ports": (list, False),
    "self_test": (bool, False),
}
PREREG: Spec = {
    "primary_contrasts": (list, False),
    "secondary_contrasts": (list, False),
    "multiplicity": (str, False),
    "drop_order": (list, False),
    "never_drop": (str, False),
    "curtailment_sentence": (str, False),
    "scope": (str, False),
}


# A ladder is a page of settings: the longest shipped one is ~6 KiB, so a MiB is room for any
# hand-written sweep while a FIFO, /dev/zero or a GiB file is refused before it is read.
MAX_LADDER_BYTES = 1024 * 1024


def _ladder_bytes(path: Path) -> bytes:
    try:
        return read_bounded(path, MAX_LADDER_BYTES)
    except BadFile as exc:
        why = str(exc)
    if why == "does not exist":
        raise LadderError(f"{path}: ladder file not found; check the --ladder name or path.")
    if why.startswith("is a folder"):
        raise LadderError(f"{path}: is a directory, not a ladder file; name a .toml file.")
    if why.startswith("cannot be read"):
        raise LadderError(f"{path}: {why}; check the path and its permissions.")
    raise LadderError(f"{path}: {why}; name a ladder .toml file of at most 1 MiB.")


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML document at `path`, or a one-line LadderError saying why it cannot be read."""
    try:
        text = _ladder_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LadderError(
            f"{path}: not UTF-8 text (byte {exc.start}); save the ladder as UTF-8 TOML."
        ) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LadderError(f"{path}: not valid TOML ({exc}); fix the syntax at that spot.") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise LadderError(
            f"{path}: nests arrays or tables thousands deep; no ladder setting nests past two."
        ) from None
    except ValueError:  # int() refuses a number of over 4,300 digits before TOML's bound does
        raise LadderError(
            f"{path}: holds an integer of thousands of digits; TOML integers are 64-bit, so "
            "write a number within them."
        ) from None
    check_ints(doc, "", path)
    return doc


def merge_overrides(raw: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The document with dotted overrides (`max_tokens`, `model.path`, `server.port`) set."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    for dotted, value in overrides.items():
        table, _, name = dotted.rpartition(".")
        target = out.setdefault(table, {}) if table else out
        if isinstance(target, dict):
            target[name] = value
    return out


SUBTABLES: tuple[tuple[str, Spec], ...] = (
    ("model", MODEL),
    ("server", SERVER),
    ("analysis", ANALYSIS),
    ("preregistration", PREREG),
    ("preflight", PREFLIGHT),
    ("stop", stop.STOP),
    ("host_rule", hostrule.HOST_RULE),
    ("sweep", sweep.SWEEP),
)


def field_errors(raw: dict[str, Any], kind_fields: Spec, where: Path | str) -> list[LadderError]:
    """The first unknown, missing or mistyped field of the top level and of each table.

    `load_ladder` raises the first; `mtpsweep lint` reports them all.
    """
    out: list[LadderError] = []
    top = {**TOP, **kind_fields}
    for table, spec, prefix in (("", top, ""), *((t, s, f"{t}.") for t, s in SUBTABLES)):
        if table and table not in raw and not top[table][1]:
            continue  # a table the kind makes optional (e.g. one model when subjects name theirs)
        value = raw.get(table, {}) if table else raw
        if not isinstance(value, dict):
            continue  # the top level already says it must be a table
        try:
            check_table(value, spec, prefix, where)
        except LadderError as exc:
            out.append(exc)
    return out


def build(
    raw: dict[str, Any],
    path: Path,
    treatments: tuple[Treatment, ...],
    where: Path | str | None = None,  # the path, and the overrides the command line set
) -> Ladder:
    model, server = raw.get("model", {}), raw.get("server", {})
    common = set(TOP)
    placement, devices = parse_placement(raw.get("placement", ""), path)
    swept, treatments = sweep.treatments_with_sweep(raw, path, treatments)
    stop_rule = stop.parse(raw, where or path, treatments)
    preflight = _preflight(raw.get("preflight", {}), path)
    return Ladder(
        name=raw.get("name", path.stem),
        path=path,
        question=raw["question"].strip(),
        treatments=treatments,
        baseline=raw["baseline"],
        cycles=stop_rule.max_cycles if stop_rule else raw.get("cycles", 2),
        model=model.get("path", ""),
        model_id=model.get("id", ""),
        requires_model=model.get("requires", ""),
        chat_template_sha256=model.get("chat_template_sha256"),
        server_bin=server.get("bin"),
        server_args=str_list(server.get("args", []), "server.args", path),
        host=server.get("host", "127.0.0.1"),
        port=server.get("port", 8080),
        ctx_size=server.get("ctx_size", 4096),
        ready_timeout_s=float(server.get("ready_timeout_s", 300.0)),
        cpus=_cpus(server.get("cpus"), path),
        max_tokens=raw.get("max_tokens", 256),
        seed=raw.get("seed", 42),
        temperature=float(raw.get("temperature", 0.0)),
        placement=placement,
        devices=devices,
        note=raw.get("note", ""),
        kind=raw["kind"],
        kind_fields={k: v for k, v in raw.items() if k not in common},
        analysis=_analysis(raw.get("analysis", {})),
        preflight=preflight,
        launchers=_launchers(server, path),
        prereg=_prereg(raw.get("preregistration", {}), path),
        reasoning_expected=raw.get("reasoning_expected", False),
        measurement_timeout_s=_optional_float(raw.get("measurement_timeout_s")),
        stall_threshold_s=float(raw.get("stall_threshold_s", DEFAULT_STALL_S)),
        stop=stop_rule,
        host_rule=hostrule.parse(raw.get("host_rule", {}), path, preflight.host_noise_pct),
        sweep=swept,
    )


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def parse_treatments(items: list[Any], table: str, path: Path) -> tuple[Treatment, ...]:
    """`[[treatments]]` (or another array of server configurations) -> unique Treatments."""
    out: list[Treatment] = []
    for i, t in enumerate(items):
        where = f"{table}[{i}]."
        if not isinstance(t, dict):
            raise LadderError(
                f"{path}: {where[:-1]} must be a table with key and args; use [[{table}]]."
            )
        check_table(t, TREATMENT, where, path)
        check_key(t["key"], where + "key", path)
        step = t.get("memory_step_mib")
        out.append(
            Treatment(
                t["key"],
                str_list(t.get("args", []), where + "args", path),
                float(step) if step is not None else None,
                served_model=t.get("served_model"),
                **attach_fields(t, where, path),
                model=t.get("model"),
                model_id=t.get("model_id"),
                **build_fields(t, where, path),
            )
        )
    if not out:
        raise LadderError(f"{path}: field '{table}' is empty; add at least two [[{table}]].")
    keys = [t.key for t in out]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise LadderError(f"{path}: {table} keys {dupes} appear twice; give each a unique key.")
    return tuple(out)


def _analysis(raw: dict[str, Any]) -> AnalysisConfig:
    return AnalysisConfig(
        margin_pct=float(raw.get("margin_pct", 1.0)),
        tiebreak_pp=float(raw.get("tiebreak_pp", 1.0)),
        primary_endpoint=raw.get("primary_endpoint", "primary"),
    )


def _ports(raw: list[Any], path: Path) -> tuple[int, ...]:
    """`[preflight] ports`: every other port the rig uses, checked free before the run."""
    for port in raw:
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise LadderError(
                f"{path}: field preflight.ports holds {port!r}; list TCP ports 1-65535, e.g. "
                "[8099, 8100]."
            )
    return tuple(raw)


def _preflight(raw: dict[str, Any], path: Path) -> PreflightConfig:
    # shares of all cores: host_noise_pct is also the host rule's default cpu_noise_pct
    for name in ("host_idle_pct", "host_noise_pct"):
        value = raw.get(name)
        if value is not None and not 0 <= value <= 100:
            raise LadderError(
                f"{path}: field preflight.{name} is {value!r}; use a share of all cores in "
                "percent, from 0 to 100."
            )
    return PreflightConfig(
        ports=_ports(raw.get("ports", []), path),
        self_test=raw.get("self_test", False),
        server_build=raw.get("server_build"),
        ram_floor_gb=raw.get("ram_floor_gb"),
        disk_floor_gb=raw.get("disk_floor_gb"),
        inactive_processes=str_list(
            raw.get("inactive_processes", []), "preflight.inactive_processes", path
        ),
        inactive_units=str_list(raw.get("inactive_units", []), "preflight.inactive_units", path),
        host_idle_pct=raw.get("host_idle_pct"),
        host_noise_pct=float(raw.get("host_noise_pct", 10.0)),
    )


def _cpus(text: str | None, path: Path) -> frozenset[int] | None:
    if text is None:
        return None
    try:
        cpus = parse_cpus(text)
    except ValueError:
        raise LadderError(
            f"{path}: field server.cpus {text!r} is not a CPU list of ids 0 to {MAX_CPU_ID}; "
            'write it like "0-3" or "0,2".'
        ) from None
    available = set(os.sched_getaffinity(0))
    if not cpus <= available:
        raise LadderError(
            f"{path}: field server.cpus names CPUs {sorted(cpus - available)} this process may not "
            f"use (it may use {sorted(available)}); name CPUs from that set."
        )
    return frozenset(cpus)


def _prereg(raw: dict[str, Any], path: Path) -> Preregistration:
    def names(field: str) -> tuple[str, ...]:
        return str_list(raw.get(field, []), f"preregistration.{field}", path)

    return Preregistration(
        primary_contrasts=names("primary_contrasts"),
        secondary_contrasts=names("secondary_contrasts"),
        multiplicity=raw.get("multiplicity", ""),
        drop_order=names("drop_order"),
        never_drop=raw.get("never_drop", ""),
        curtailment_sentence=raw.get("curtailment_sentence", DEFAULT_CURTAILMENT),
        scope=_one_line(raw.get("scope", ""), "preregistration.scope", path),
    )


def _one_line(value: str, where: str, path: Path) -> str:
    """A sentence the report quotes on one line: stripped, and refused if it spans lines."""
    text = value.strip()
    if "\n" in text or "\r" in text:
        raise LadderError(
            f"{path}: field {where} spans several lines; write it as one sentence on one line."
        )
    return text


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


def _within(ladder: Ladder) -> Callable[[str], tuple[bool, str, str]]:
    """A `validate` check of an analysis setting against `BOUNDS`, the table plan.json's
    reader checks too."""

    def check(name: str) -> tuple[bool, str, str]:
        value = getattr(ladder.analysis, name.split(".")[1])
        return BOUNDS[name].holds(value), name, BOUNDS[name].fix

    return check


def validate(ladder: Ladder, where: Path | str) -> None:
    """The numeric ranges and the pre-registered sessions, whatever kind the ladder is."""
    checks: list[tuple[bool, str, str]] = [
        (ladder.cycles >= 1, "cycles", "use 1 or more (2 for one counterbalanced pair)"),
        (ladder.cycles <= MAX_CYCLES, "cycles", f"use at most {MAX_CYCLES}"),
        (ladder.max_tokens >= 2, "max_tokens", "use 2 or more (a decode rate needs two tokens)"),
        (
            ladder.max_tokens <= MAX_TOKENS_CAP,
            "max_tokens",
            f"use at most {MAX_TOKENS_CAP} (tokens per request; no server generates more)",
        ),
        (
            0 <= ladder.port <= 65535,
            "server.port",
            "use a TCP port 1-65535, or 0 for any free port",
        ),
        (
            0 < ladder.ctx_size <= MAX_CTX_SIZE,
            "server.ctx_size",
            f"use a positive context size of at most {MAX_CTX_SIZE} tokens",
        ),
        (ladder.temperature >= 0, "temperature", "use 0 (greedy) or a positive temperature"),
        (
            0 <= ladder.seed <= MAX_SEED,
            "seed",
            f"use a seed from 0 to {MAX_SEED} (the server reads 32 bits; 2**32-1 is its random seed)",
        ),
        (
            0 < ladder.ready_timeout_s <= MAX_TIMEOUT_S,
            "server.ready_timeout_s",
            f"use a number of seconds above 0 and at most {MAX_TIMEOUT_S:g} (a day)",
        ),
        (
            ladder.measurement_timeout_s is None
            or 0 < ladder.measurement_timeout_s <= MAX_TIMEOUT_S,
            "measurement_timeout_s",
            f"use a number of seconds above 0 and at most {MAX_TIMEOUT_S:g} (a day), or leave it "
            "out for no limit",
        ),
        (
            0 < ladder.stall_threshold_s <= MAX_TIMEOUT_S,
            "stall_threshold_s",
            f"use a number of seconds above 0 and at most {MAX_TIMEOUT_S:g} (the longest "
            "silence allowed mid-answer)",
        ),
        *map(_within(ladder), ("analysis.margin_pct", "analysis.tiebreak_pp")),
        (
            ladder.analysis.primary_endpoint in ("primary", "interval"),
            "analysis.primary_endpoint",
            "use primary or interval",
        ),
    ]
    for ok, name, fix in checks:
        if not ok:
            obj: Any = ladder.analysis if name.startswith("analysis.") else ladder
            value = getattr(obj, name.split(".")[-1])
            raise LadderError(f"{where}: {name} is {value!r}; {fix}.")
    own = [t.key for t in ladder.treatments if t.own_server]
    if own and ladder.launchers is not None:
        raise LadderError(
            f"{where}: treatment {own[0]!r} names its own server, but server.launch starts "
            "every server through the rig's launcher; let the launcher choose the binary, or "
            "drop server.launch and server.stop."
        )
    labels = {s.label for s in ladder_plan(ladder)}
    reg = ladder.prereg
    for label in (*reg.drop_order, *([reg.never_drop] if reg.never_drop else [])):
        if label not in labels:
            raise LadderError(
                f"{where}: preregistration names session {label!r}, which is not in the plan; "
                f"use TREATMENT:cN with one of {', '.join(sorted(labels))}."
            )
    if reg.never_drop and reg.never_drop in reg.drop_order:
        raise LadderError(
            f"{where}: preregistration.drop_order includes the never-drop session "
            f"{reg.never_drop!r}; remove it from drop_order."
        )
