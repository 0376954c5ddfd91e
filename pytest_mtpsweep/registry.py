"""Where kinds are found: the entry-point group `pytest_mtpsweep.kinds`, one entry per kind.

The shipped kinds register there exactly as a third party's would (pyproject.toml,
`[project.entry-points."pytest_mtpsweep.kinds"]`), so one code path finds them all. An entry
point names a `kindapi.Kind` in a module that imports next to nothing; the parts the Kind names
as `"module:attribute"` are imported when first asked for (inspect_ai's providers: by name,
lazily), so an installed kind that no ladder uses costs its declaration and nothing more.

A kind whose declaration cannot be loaded does not break pytest for everyone: its options are
missing, and a ladder naming it gets the reason in one line.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Any

from .errors import LadderError
from .kindapi import GROUP, Kind

if TYPE_CHECKING:
    from .kindapi import KindRun, KindSpec
    from .ladder.model import Ladder
    from .options import Opt
    from .request import RunRequest


@cache
def _declared() -> tuple[tuple[Kind, ...], tuple[tuple[str, str], ...]]:
    """Every installed kind, and (entry name, why) for each entry point that failed to load."""
    from importlib.metadata import entry_points

    found: dict[str, Kind] = {}
    broken: list[tuple[str, str]] = []
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        if ep.name in found:
            continue  # the same distribution seen twice on sys.path
        try:
            kind = ep.load()
        except Exception as exc:  # a broken third-party kind must not break every pytest run
            broken.append((ep.name, f"{ep.value} cannot be imported ({type(exc).__name__}: {exc})"))
            continue
        if not isinstance(kind, Kind) or kind.name != ep.name:
            broken.append((ep.name, f"{ep.value} is not a kindapi.Kind named {ep.name!r}"))
            continue
        found[ep.name] = kind
    return tuple(found.values()), tuple(broken)


def kinds() -> tuple[Kind, ...]:
    """Every installed kind that loaded, by name."""
    return _declared()[0]


def names() -> tuple[str, ...]:
    return tuple(k.name for k in kinds())


def kind(name: str, where: str = "") -> Kind:
    """The kind called `name`, or a one-line LadderError naming the installed ones and the fix."""
    for k in kinds():
        if k.name == name:
            return k
    prefix = f"{where}: " if where else ""
    why = dict(_declared()[1]).get(name)
    if why is not None:
        raise LadderError(
            f"{prefix}kind {name!r} is installed but does not load: {why}; reinstall the package "
            "that provides it."
        )
    raise LadderError(
        f"{prefix}field 'kind' is {name!r}, which no installed package provides (installed "
        f"kinds: {', '.join(names()) or 'none'}); use one of them, or install the kind's package "
        f"(it registers an entry point in the group {GROUP})."
    )


def default() -> Kind:
    """The kind a ladder without a `kind` field is: the one installed kind that says so."""
    chosen = [k for k in kinds() if k.default]
    if len(chosen) != 1:
        said = ", ".join(k.name for k in chosen) or "none"
        raise LadderError(
            f"exactly one installed kind must be the default for ladders without a 'kind' field, "
            f'but {said} say so; write kind = "..." in the ladder, or reinstall the kinds.'
        )
    return chosen[0]


def default_name() -> str:
    return default().name


def load(ref: str) -> Any:
    """The object a kind names as `"module:attribute"`, imported now."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def ladder_spec(name: str, where: str = "") -> KindSpec:
    """The ladder side of kind `name` (no heavy imports)."""
    spec: KindSpec = load(kind(name, where).ladder)
    return spec


def prepare(ladder: Ladder, request: RunRequest) -> KindRun:
    """The run side of the ladder's kind, its inputs (prompts, tasks) loaded."""
    run: KindRun = load(kind(ladder.kind, str(ladder.path)).run)(ladder, request)
    return run


def options() -> tuple[Opt, ...]:
    """Every installed kind's own options, in the order of the kinds (each flag once)."""
    out: dict[str, Opt] = {}
    for k in kinds():
        for opt in k.options:
            out.setdefault(opt.flag, opt)
    return tuple(out.values())


def owner_of(option: str) -> Kind | None:
    """The kind that declares the option named `option` (its domain name), if one does."""
    return next((k for k in kinds() if any(o.name == option for o in k.options)), None)


def command_registrars() -> list[Any]:
    """Each kind's own `mtpsweep` subcommands: `register(subparsers)` per kind that has some."""
    return [load(k.commands) for k in kinds() if k.commands]
