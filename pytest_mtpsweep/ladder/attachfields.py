"""A treatment's attach fields: how to reach a server the harness does not launch, how to learn
its argv, when it is ready, and whether to read its speculative-decoding counters; and
`--base-url`, which attaches a one-treatment ladder from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base.errors import LadderError, OptionError
from ..base.redact import redact_url
from .fields import check_env_name, check_url, str_list

# Fields that only mean something for an attached treatment (one with base_url).
ATTACH_ONLY = ("api_key_env", "flags_file", "flags_command", "ready_url", "metrics")


def attach_fields(t: dict[str, Any], where: str, path: Path) -> dict[str, Any]:
    """The Treatment keyword arguments of one `[[treatments]]` table's attach fields."""
    if "base_url" not in t:
        given = [k for k in ATTACH_ONLY if k in t]
        if given:
            raise LadderError(
                f"{path}: {where}{given[0]} applies to an attached server only; add "
                f"{where}base_url (the server's address) or remove {given[0]}."
            )
        return {}
    if "flags_file" in t and "flags_command" in t:
        raise LadderError(
            f"{path}: {where}flags_file and {where}flags_command both say where the server's argv "
            "comes from; keep one."
        )
    command = t.get("flags_command")
    if command is not None:
        command = str_list(command, where + "flags_command", path)
        if not command:
            raise LadderError(
                f"{path}: {where}flags_command is empty; give the argv of a command that prints "
                'the server\'s argv, e.g. ["cat", "/run/vllm/cmdline"].'
            )
    flags = t.get("flags_file")
    ready = t.get("ready_url")
    return {
        "base_url": check_url(t["base_url"], where + "base_url", path),
        "api_key_env": check_env_name(t["api_key_env"], where + "api_key_env", path)
        if "api_key_env" in t
        else None,
        "flags_file": (path.parent / flags).resolve() if flags else None,
        "flags_command": command,
        "ready_url": _ready_url(ready, where + "ready_url", path) if ready is not None else None,
        "metrics": t.get("metrics"),
    }


def _ready_url(value: str, where: str, path: Path) -> str:
    """A path on the server (`/health`) or a whole http(s) URL, kept as written."""
    if value.startswith("/"):
        return value
    try:
        check_url(value, where, path)
    except LadderError:
        raise LadderError(
            f"{path}: field {where} {redact_url(value)!r} is neither a path like /health nor a valid http(s) "
            "URL; write one of those."
        ) from None
    return value


def with_base_url(raw: dict[str, Any], url: str, path: Path) -> dict[str, Any]:
    """The ladder document with every treatment attached at `url` (`--base-url`), as if the
    ladder said so.

    One URL is one server, so a run with `--base-url` measures one treatment's sessions only
    (the seed's way: one invocation per session, the server swapped between them); the
    protocol refuses a selection that spans more (`Run.check_selection`).
    """
    try:
        base = check_url(url, "", "--base-url")
    except LadderError:
        raise OptionError(
            f"--base-url {redact_url(url)!r} is not an http(s) URL; write it like http://127.0.0.1:8000/v1."
        ) from None
    table = "subjects" if "subjects" in raw else "treatments"
    items = raw.get(table)
    if not isinstance(items, list):
        return raw  # the ladder's own checks say what is wrong with it
    own = [t.get("key") for t in items if isinstance(t, dict) and "base_url" in t]
    if own:
        raise OptionError(
            f"--base-url conflicts with ladder {path}, whose {table} {own} have their own "
            "base_url; drop --base-url or those base_url fields."
        )
    return {**raw, table: [{**t, "base_url": base} if isinstance(t, dict) else t for t in items]}


def one_server(url: str, treatments: list[str]) -> None:
    """`--base-url` stands for one server: the selected measurements must be one treatment's."""
    if len(treatments) > 1:
        first = treatments[0]
        raise OptionError(
            f"--base-url {redact_url(url)} is one server, but the selected measurements span treatments "
            f"{', '.join(treatments)}; select one treatment's sessions (e.g. -k c1-{first}) and "
            "run the others against their own servers, or give each [[treatments]] its own "
            "base_url in the ladder."
        )
