"""Where kinds are found: the entry-point group `pytest_mtpsweep.kinds`, one entry per kind.

The shipped kinds register there exactly as a third party's would (pyproject.toml,
`[project.entry-points."pytest_mtpsweep.kinds"]`), so one code path finds them all. An entry
point names a `kindapi.Kind` in a module that imports next to nothing; the parts the Kind names
as `"module:attribute"` are imported when first asked for (inspect_ai's providers: by name,
lazily), so an installed kind that no ladder uses costs its declaration and nothing more.

Each kind is imported on its own when first asked for, and only then: a ladder of a shipped
kind imports no third party's (`shipped()`, `kind(name)`), one of a third party's kind imports
that kind alone beside the shipped ones. A third party's declaration is first imported in a
probe process (`kindcheck.probe_problem`, bounded): one that ends the process, hangs or leaves
threads is set aside before it can touch this one. One that does not load, is malformed,
shares its name with another distribution's kind, or takes an option another already has, is
set aside: the others keep working, and a ladder naming it gets the reason in one line
(`mtpsweep kinds` lists them all).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from ..base.errors import KindError, LadderError
from ..wishes.options import OPTIONS
from . import kindcheck as kindcheck
from .kind import GROUP, Kind, KindSpec

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from ..ladder.values import Ladder
    from ..wishes.options import Opt
    from ..wishes.request import RunRequest
    from .kind import KindRun

OWN_DISTRIBUTION = "pytest-mtpsweep"  # the shipped kinds' distribution


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Entry:
    """One entry point of the group, as the metadata says it (nothing imported)."""

    name: str
    value: str
    distribution: str  # '' when the metadata does not say
    version: str = ""

    @property
    def shipped(self) -> bool:
        return _normal(self.distribution) == OWN_DISTRIBUTION

    @property
    def label(self) -> str:
        """`evil-kind 0.1`."""
        return " ".join(filter(None, (self.distribution, self.version))) or "no distribution"

    @property
    def provider(self) -> str:
        """`distribution evil-kind 0.1`, as a message names it."""
        return (
            f"distribution {self.label}"
            if self.distribution
            else "an entry point of no distribution"
        )

    @property
    def fix(self) -> str:
        if self.shipped:
            return f"reinstall {OWN_DISTRIBUTION}"
        if not self.distribution:
            return f"remove the entry point {self.name} = {self.value} from the group {GROUP}"
        return f"fix that distribution or uninstall it (pip uninstall {self.distribution})"


def _entry(ep: EntryPoint) -> Entry:
    dist = getattr(ep, "dist", None)
    name = str(getattr(dist, "name", None) or "") if dist is not None else ""
    version = str(getattr(dist, "version", None) or "") if name else ""
    return Entry(ep.name, ep.value, name, version)


def _same(a: Entry, b: Entry) -> bool:
    """One distribution seen twice on sys.path (an entry point without one: the same value)."""
    return _normal(a.distribution) == _normal(b.distribution) and (
        bool(a.distribution) or a.value == b.value
    )


@cache
def entries() -> Mapping[str, tuple[Entry, ...]]:
    """Every entry point of the group by kind name, in name order; a distribution seen twice
    on sys.path counts once (the first, the one Python would import)."""
    from importlib.metadata import entry_points

    out: dict[str, list[Entry]] = {}
    for ep in entry_points(group=GROUP):
        entry = _entry(ep)
        same = out.setdefault(entry.name, [])
        if not any(_same(e, entry) for e in same):
            same.append(entry)
    return {name: tuple(out[name]) for name in sorted(out)}


def _import(entry: Entry) -> Kind | str:
    """The entry's Kind, or why it cannot be one."""
    from importlib.metadata import EntryPoint

    if not entry.shipped:
        problem = kindcheck.probe_problem(entry.name, entry.value, GROUP)
        if problem is not None:
            return f"{problem}, so it is set aside"
    ep = EntryPoint(entry.name, entry.value, GROUP)
    loaded, failed = kindcheck.guarded(ep.load)
    if failed is not None:
        return f"importing {entry.value} raised {kindcheck.exception_text(failed)}"
    problem = kindcheck.declaration_problem(loaded, entry.name)
    if problem is not None:
        return f"{entry.value} is malformed: {problem}"
    assert isinstance(loaded, Kind)
    return loaded


@cache
def _declared(name: str) -> Kind | str:
    """Kind `name`, imported now, or the one-line reason it is set aside."""
    found = entries().get(name, ())
    if len(found) > 1:
        return clash(name)
    entry = found[0]
    got = _import(entry)
    if isinstance(got, str):
        return f"kind {name!r} of {entry.provider} does not load: {got}; {entry.fix}."
    return got


def clash(name: str) -> str:
    """The one sentence for a kind name two distributions declare (nothing imported)."""
    found = entries().get(name, ())
    said = " and ".join(f"{e.label} ({e.value})" for e in found)
    others = [e for e in found if not e.shipped and e.distribution]
    fixes = " or ".join(f"pip uninstall {e.distribution}" for e in others) or "reinstall one"
    own = (
        " (one is a shipped kind: a third party may not take its name)"
        if any(e.shipped for e in found)
        else ""
    )
    return (
        f"kind {name!r} is declared by {len(found)} installed distributions, {said}{own}, and "
        f"none is chosen silently; keep one of them ({fixes})."
    )


def is_shipped(name: str) -> bool:
    """Kind `name` is declared by the shipped distribution alone (nothing imported)."""
    found = entries().get(name, ())
    return bool(found) and all(e.shipped for e in found)


@cache
def _catalogue(extra: tuple[str, ...] | None) -> tuple[tuple[Kind, ...], Mapping[str, str]]:
    """The usable kinds (the shipped ones and the third parties' named in `extra`, or every
    installed one when it is None) and each set-aside kind's reason. Options are claimed in
    this order: the shared ones, the shipped kinds', the rest by name; a kind that takes a flag
    or a name already taken is set aside whole."""
    _EXTRAS.append(extra)
    order = sorted(entries(), key=lambda n: (not is_shipped(n), n))
    taken = {key: "the shared options" for o in OPTIONS for key in (o.flag, o.name)}
    usable: list[Kind] = []
    problems: dict[str, str] = {}
    for name in order:
        if extra is not None and not is_shipped(name) and name not in extra:
            continue
        got = _declared(name)
        if isinstance(got, str):
            problems[name] = got
            continue
        owners = [k for k in usable if k.fixture == got.fixture]
        clash = next(
            (
                f"its option {key} is taken already by {taken[key]}"
                for o in got.options
                for key in (o.flag, o.name)
                if key in taken
            ),
            None,
        )
        if clash is None and owners:
            clash = f"its fixture {got.fixture!r} is taken already by kind {owners[0].name!r}"
        if clash is not None:
            problems[name] = refusal(name, f"set aside: {clash}, so it must name it differently")
            continue
        usable.append(got)
        taken.update({key: f"kind {name!r}" for o in got.options for key in (o.flag, o.name)})
    return tuple(usable), problems


_SET_ASIDE: dict[str, str] = {}  # by the edge that found it (pytest: an option pytest has)
_EXTRAS: list[tuple[str, ...] | None] = []  # the catalogues made so far (what was imported)


def set_aside(problems: Mapping[str, str], *, fresh: bool = False) -> None:
    """Kinds the caller's host refuses, with why (`fresh`: forget what it said before)."""
    if fresh:
        _SET_ASIDE.clear()
    _SET_ASIDE.update(problems)


def reset() -> None:
    """Forget every kind found (the entry points changed: tests)."""
    for cached in (entries, _declared, _catalogue):
        cached.cache_clear()
    _SET_ASIDE.clear()
    _EXTRAS.clear()


def kinds() -> tuple[Kind, ...]:
    """Every installed kind that is usable, by name (shipped first): every one is imported."""
    return tuple(k for k in _catalogue(None)[0] if k.name not in _SET_ASIDE)


def shipped() -> tuple[Kind, ...]:
    """The shipped kinds that are usable; no third party's kind is imported."""
    return _catalogue(())[0]


def with_kind(name: str) -> tuple[Kind, ...]:
    """The usable shipped kinds and kind `name` (a third party's: it alone is imported)."""
    return tuple(k for k in _catalogue(_extra(name))[0] if k.name not in _SET_ASIDE)


def problems() -> dict[str, str]:
    """Each set-aside installed kind's one-line reason, by name (every kind is imported)."""
    return {**_catalogue(None)[1], **_SET_ASIDE}


def _problem(name: str) -> str | None:
    """Kind `name`'s reason to be set aside, importing no third party's kind but its own."""
    if name in entries() and not is_shipped(name) and len(entries()[name]) > 1:
        return clash(name)
    if name in _SET_ASIDE:
        return _SET_ASIDE[name]
    return _catalogue(_extra(name))[1].get(name)


def _extra(name: str) -> tuple[str, ...] | None:
    """The catalogue that speaks for kind `name`: every kind's once every kind was read (a
    kind it sets aside stays aside), else the shipped ones and `name` alone."""
    if None in _EXTRAS:
        return None
    return () if is_shipped(name) else (name,)


def refusal(name: str, why: str) -> str:
    """`kind 'x' of distribution d 0.1: <why>; <the fix>.`: one line about an installed kind."""
    found = entries().get(name, ())
    entry = found[0] if found else Entry(name, "", "")
    return f"kind {name!r} of {entry.provider}: {why}; {entry.fix}."


def names() -> tuple[str, ...]:
    """The usable kinds' names (every kind is imported)."""
    return tuple(k.name for k in kinds())


def kind(name: str, where: str = "") -> Kind:
    """The kind called `name`, or a one-line error naming the installed ones and the fix; no
    third party's kind but `name` itself is imported."""
    prefix = f"{where}: " if where else ""
    why = _problem(name)
    if why is not None:
        raise KindError(f"{prefix}{why}")
    for k in with_kind(name):
        if k.name == name:
            return k
    raise LadderError(
        f"{prefix}field 'kind' is {name!r}, which no installed package provides (installed "
        f"kinds: {', '.join(sorted(names())) or 'none'}); use one of them, or install the "
        f"kind's package (it registers an entry point in the group {GROUP})."
    )


def default() -> Kind:
    """The kind a ladder without a `kind` field is: the one installed kind that says so (a
    shipped kind that says so wins over a third party's)."""
    own = [k for k in shipped() if k.default]
    if len(own) == 1:
        return own[0]  # no third party's kind imported to find it
    for name, found in entries().items():
        if len(found) > 1 and any(e.shipped for e in found):
            declared = _import(next(e for e in found if e.shipped))
            if isinstance(declared, Kind) and declared.default:
                raise KindError(f"{clash(name)[:-1]}; a ladder without a 'kind' field is {name}.")
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


def part(k: Kind, which: str, where: str = "") -> Any:
    """Kind `k`'s part `which` (one of `kindbase.PARTS`), imported now, or a one-line KindError
    naming its distribution when it does not load."""
    ref = getattr(k, which)
    got, failed = kindcheck.guarded(lambda: load(ref))
    wanted: type | None = KindSpec if which == "ladder" else None
    why = None
    if failed is not None:
        why = f"raised {kindcheck.exception_text(failed)}"
    elif wanted is not None and not isinstance(got, wanted):
        why = f"is {type(got).__name__}, not a kindapi.{wanted.__name__}"
    elif wanted is None and not callable(got):
        why = f"is {type(got).__name__}, not a function"
    if why is None:
        return got
    raise _refused(k, f"does not load its {which} part: {ref} {why}", where)


def _refused(k: Kind, what: str, where: str) -> KindError:
    entry = entries().get(k.name, (Entry(k.name, k.run, ""),))[0]
    prefix = f"{where}: " if where else ""
    return KindError(f"{prefix}kind {k.name!r} of {entry.provider} {what}; {entry.fix}.")


def ladder_spec(name: str, where: str = "") -> KindSpec:
    """The ladder side of kind `name` (no heavy imports)."""
    spec: KindSpec = part(kind(name, where), "ladder", where)
    return spec


def prepare(ladder: Ladder, request: RunRequest) -> KindRun:
    """The run side of the ladder's kind, its inputs (prompts, tasks) loaded, handed the
    settings its ladder side parsed when the ladder was loaded."""
    where = str(ladder.path)
    k = kind(ladder.kind, where)
    run = part(k, "run", where)(ladder, ladder.kind_settings, request)
    problem = kindcheck.run_problem(run)
    if problem is not None:
        raise _refused(k, f"prepares no run: {k.run} {problem}", where)
    checked: KindRun = run
    return checked


def _known() -> tuple[Kind, ...]:
    """The usable kinds imported so far (the shipped ones at least): a kind's option can only
    have been given if its kind was imported to register it."""
    seen: dict[str, Kind] = {k.name: k for k in shipped()}
    for extra in _EXTRAS:
        seen.update({k.name: k for k in _catalogue(extra)[0]})
    return tuple(k for k in seen.values() if k.name not in _SET_ASIDE)


def options() -> tuple[Opt, ...]:
    """Every usable kind's own options, in the order of the kinds (of those imported)."""
    return tuple(opt for k in _known() for opt in k.options)


def owner_of(option: str) -> Kind | None:
    """The kind that declares the option named `option` (its domain name), if one does."""
    return next((k for k in _known() if any(o.name == option for o in k.options)), None)


def command_registrars(
    scope: str = "all",
) -> tuple[list[tuple[Kind, Callable[[Any], None]]], dict[str, str]]:
    """Each kind's own `mtpsweep` subcommands (`scope`: every installed kind's, the shipped
    kinds' alone, or the third parties' alone), `register(subparsers)` per kind that has some,
    and the one-line reason for each kind whose commands do not load."""
    out: list[tuple[Kind, Callable[[Any], None]]] = []
    broken: dict[str, str] = {}
    pool = shipped() if scope == "shipped" else kinds()
    for k in (k for k in pool if scope != "third" or not is_shipped(k.name)):
        if k.commands:
            try:
                out.append((k, part(k, "commands")))
            except KindError as exc:
                broken[k.name] = str(exc)
    return out, broken
