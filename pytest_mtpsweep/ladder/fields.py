"""Field specifications for TOML tables, checked with one-line errors naming file and fix."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..base.errors import LadderError
from ..base.redact import redact_url

# field name -> (allowed type(s), required)
MAX_KEY_CHARS = 80  # a key names files (<key>.jsonl, a server log) and test ids; NAME_MAX is 255
# Flags the harness puts on every server's command line itself, from these ladder fields: a
# ladder that sets one (its args, a sweep) is refused at load, so lint, collection and analyse
# all refuse it before any session.
HARNESS_FLAGS = {
    "-m": "model.path (or --model)",  # -md (a draft model) is the ladder's to pass
    "--model": "model.path (or --model)",
    "--host": "server.host",
    "--port": "server.port",
    "-a": "model.id (the alias is <model.id>-<treatment>)",
    "--alias": "model.id (the alias is <model.id>-<treatment>)",
    "-c": "server.ctx_size",
    "--ctx-size": "server.ctx_size",
}
Spec = dict[str, tuple[type | tuple[type, ...], bool]]


def check_table(table: dict[str, Any], spec: Spec, where: str, path: Path | str) -> None:
    """Unknown fields, missing required fields and wrong types, each a one-line LadderError."""
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
            names = " or ".join(t.__name__ for t in allowed)
            raise LadderError(
                f"{path}: field {where}{key!r} is {value!r} but must be a {names}; fix its value."
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise LadderError(f"{path}: field {where}{key!r} is {value!r}; write a finite number.")


INT64 = (-(2**63), 2**63 - 1)


def check_ints(value: Any, where: str, path: Path | str) -> None:
    """TOML's integers are 64-bit (the spec has a reader refuse others); tomllib's are not,
    and a number past a float's range would overflow the first check that compares it."""
    if isinstance(value, dict):
        for key, item in value.items():
            check_ints(item, f"{where}.{key}" if where else str(key), path)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_ints(item, f"{where}[{i}]", path)
    elif isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        raise LadderError(
            f"{path}: field {where} has {len(str(abs(value)))} digits, past TOML's 64-bit "
            "integers; write a number within them."
        )


def str_list(value: list[Any], where: str, path: Path | str) -> tuple[str, ...]:
    """A TOML list whose items must all be strings (argv items, names)."""
    if not all(isinstance(v, str) for v in value):
        raise LadderError(
            f"{path}: field {where} must be a list of strings (one argv item each), e.g. "
            f'["--spec-type", "ngram-simple"]; quote every item.'
        )
    return tuple(value)


def check_key(key: str, where: str, path: Path | str) -> None:
    """A key that names files and test ids: letters, digits, '.', '_' or '-', bounded."""
    if len(key) > MAX_KEY_CHARS:
        raise LadderError(
            f"{path}: field {where} {key[:40]!r}... is {len(key)} characters, over the "
            f"{MAX_KEY_CHARS} a key may have (it names files and test ids); shorten it."
        )
    if not key or not all(c.isascii() and (c.isalnum() or c in "._-") for c in key):
        raise LadderError(
            f"{path}: field {where} {key!r} must be non-empty letters, digits, '.', '_' or '-' "
            "(it names files and test ids); rename it."
        )


def check_url(url: str, where: str, path: Path | str) -> str:
    """An http(s) base URL of an attached server, without a trailing `/v1` or slash."""
    # Parsed once, here, with every rule a request would apply later: a URL that passes is one
    # httpx can send to (a bad IPv6 literal or port fails now, not in a run).
    shown = redact_url(url)  # a refusal never prints the password
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError: not a number, or outside 0-65535
        host = parts.hostname
    except ValueError as exc:
        raise LadderError(
            f"{path}: field {where} {shown!r} is not a valid URL ({exc}); write it like "
            "http://127.0.0.1:8000 (an IPv6 address in brackets: http://[::1]:8000)."
        ) from None
    if parts.scheme not in ("http", "https") or not host:
        raise LadderError(
            f"{path}: field {where} {shown!r} is not an http(s) URL; write it like "
            "http://127.0.0.1:8000."
        )
    if port == 0:
        raise LadderError(
            f"{path}: field {where} {shown!r} names port 0; give the port the server listens on "
            "(1-65535)."
        )
    return re.sub(r"/v1/?$", "", url.rstrip("/"))


def check_env_name(name: str, where: str, path: Path | str) -> str:
    """The NAME of an environment variable (the key itself is never written in a ladder)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise LadderError(
            f"{path}: field {where} {name!r} is not an environment variable name; name the "
            "variable that holds the key (e.g. OPENAI_API_KEY), never the key itself."
        )
    return name


MAX_CPU_ID = 65535  # past any kernel's NR_CPUS: a range is bounded before it is expanded


def parse_cpus(text: str) -> set[int]:
    """`0-3,6` -> {0, 1, 2, 3, 6}; ValueError if it does not parse, runs backwards or names a
    CPU past MAX_CPU_ID."""
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        first, last = int(lo), int(hi or lo)
        if not 0 <= first <= last <= MAX_CPU_ID:
            raise ValueError(text)
        out.update(range(first, last + 1))
    if not out:
        raise ValueError(text)
    return out


PLACEMENT: Spec = {"name": (str, False), "devices": (list, False)}


def parse_placement(value: Any, path: Path | str) -> tuple[str, tuple[str, ...]]:
    """(the keyed placement text, devices) from `placement = "gpu"` or from a table
    `[placement] name = "gpu"  devices = ["0", "1"]` (one device per pytest-xdist worker)."""
    if isinstance(value, str):
        return value, ()
    check_table(value, PLACEMENT, "placement.", path)
    devices = str_list(value.get("devices", []), "placement.devices", path)
    if len(set(devices)) != len(devices) or any(not d.strip() for d in devices):
        raise LadderError(
            f"{path}: field placement.devices {list(devices)} must name each device once "
            '(CUDA_VISIBLE_DEVICES values such as "0", "1"); remove the repeat or the blank.'
        )
    return value.get("name", ""), devices
