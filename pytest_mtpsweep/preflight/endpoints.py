"""Preflight items for attached servers: one row per attached treatment saying whether its
endpoint answers and what it says it is (`/v1/models`, `/props`, `/version`, whatever it
offers). A failing row stops the run before anything is measured."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.errors import ServerError
from ..rig import serverargv
from ..rig.endpoint import Endpoint, served_models
from .items import FAIL, PASS, PreflightItem, make_item


@dataclass(frozen=True)
class AttachedTarget:
    """An attached treatment as preflight sees it."""

    treatment: str
    endpoint: Endpoint
    alias: str  # the `model` its responses must carry
    flags_file: Path | None = None  # where the server's argv is read, if the ladder says
    flags_command: tuple[str, ...] | None = None
    cwd: Path = Path()  # a relative flags_command starts here (the ladder's directory)


def item_name(treatment: str) -> str:
    return f"endpoint:{treatment}"


def check_endpoint(target: AttachedTarget) -> PreflightItem:
    """Reachable now (no waiting: the server must run before the run starts) and serving the
    model the treatment's responses must name."""
    ep, name = target.endpoint, item_name(target.treatment)
    expected = f"{ep.shown} answers and serves {target.alias}"
    try:
        ep.headers()
    except ServerError as exc:
        return make_item(name, expected, "no API key", FAIL, fix=_sentence(str(exc)))
    ready = ep.probe()
    if ready is not None:
        fix = ep.refused_key(ready) or (
            f"Start the server at {ep.shown} before the run, or fix base_url (or ready_url) "
            f"of treatment {target.treatment} in the ladder."
        )
        return make_item(name, expected, ready, FAIL, fix=fix)
    ident = ep.identity()
    observed = describe_identity(ident)
    models = served_models(ident)
    if models and target.alias not in models:
        fix = (
            f"Set served_model of treatment {target.treatment} to the model the server serves "
            f"({', '.join(models)}), or attach the server that serves {target.alias}."
        )
        return make_item(name, expected, observed, FAIL, fix=fix)
    flags = _flags_problem(target)
    if flags is not None:  # the session would fail reading them: refuse before the run starts
        return make_item(name, expected, f"{observed}; argv not readable", FAIL, fix=flags)
    stable = "; ".join(p for p in observed.split("; ") if not p.startswith("ready"))
    return make_item(name, expected, observed, PASS, stable=stable)


def _flags_problem(target: AttachedTarget) -> str | None:
    """Why the server's argv cannot be read from the ladder's flags_file or flags_command."""
    try:
        if target.flags_file is not None:
            serverargv.read_flags_file(target.flags_file)
        elif target.flags_command is not None:
            serverargv.run_flags_command(target.flags_command, target.cwd)
    except ServerError as exc:
        return _sentence(f"treatment {target.treatment}: {exc}")
    return None


def describe_identity(ident: dict[str, Any]) -> str:
    """One line: which identity paths answered and what they said."""
    parts = [f"ready; identity from {', '.join(ident) or 'no identity path'}"]
    models = served_models(ident)
    if models:
        parts.append(f"models {', '.join(models)}")
    props = ident.get("/props")
    if isinstance(props, dict) and props.get("build_info"):
        parts.append(f"build {props['build_info']}")
    version = ident.get("/version")
    if isinstance(version, dict):
        parts.append("version " + " ".join(f"{k}={v}" for k, v in sorted(version.items())))
    elif version is not None:
        parts.append(f"version {version}")
    return "; ".join(parts)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]
