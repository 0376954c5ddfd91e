"""The installed kinds as one pytest process sees them: whose options it registers, whose
fixtures it provides.

A pytest run without `--ladder` (or `--help`) imports the shipped kinds' declarations only, no
third party's kind. A kind is set aside for the process, never registered over another, when
its option is one pytest, another plugin or an initial conftest already has, or its fixture
name is one pytest or another plugin already provides; the registry then refuses it in one line
when a ladder names it, and every other test runs as it would without it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..base.errors import LadderError
from ..interface import registry
from ..interface.kindcheck import exception_text

if TYPE_CHECKING:
    from ..interface.kind import Kind

OPTIONED = pytest.StashKey[tuple["Kind", ...]]()  # kinds whose options this process registered
FIXTURED = pytest.StashKey[tuple["Kind", ...]]()  # ... and whose fixtures it provides
OURS = "_mtpsweep_kind"  # set on each kind fixture's function: the fixture is the plugin's


# What lists the kinds' options or fixtures: these load every kind, as --ladder does.
_LISTING = ("help", "showfixtures", "show_fixtures_per_test")


def every_kind_wanted(config: pytest.Config) -> bool:
    """Whether this invocation uses kinds (`--ladder`) or lists what they add (`--help`,
    `--fixtures`)."""
    ns = getattr(config, "known_args_namespace", None)
    return any(getattr(ns, dest, None) for dest in ("mtpsweep_ladder", *_LISTING))


def _wanted(config: pytest.Config) -> tuple[Kind, ...]:
    """The kinds this invocation reads: every one to list them (`--help`, `--fixtures`); for a
    `--ladder`, the shipped ones and the third party's kind the ladder names (no other third
    party's is imported, so none can slow or end a run of another kind)."""
    ns = getattr(config, "known_args_namespace", None)
    if any(getattr(ns, dest, None) for dest in _LISTING):
        return registry.kinds()
    ladder = getattr(ns, "mtpsweep_ladder", None)
    if not isinstance(ladder, str) or not ladder:
        return registry.shipped()
    from ..ladder.find import find_ladder, named_kind, search_dirs

    paths = [Path(str(a).split("::")[0]) for a in getattr(ns, "file_or_dir", None) or ()]
    here = config.invocation_params.dir
    try:
        path = find_ladder(ladder, search_dirs(paths, config.rootpath, here))
    except LadderError:
        return registry.shipped()  # the run refuses the ladder itself, in one line
    name = named_kind(path)
    return registry.shipped() if name is None else registry.with_kind(name)


def _taken(parser: pytest.Parser) -> set[str]:
    """Every option string pytest's parser has so far, of pytest, plugins and conftests."""
    known = getattr(parser, "_opt2dest", None)
    if isinstance(known, dict):
        return set(known)
    groups = getattr(parser, "_groups", [])
    return {name for group in groups for opt in group.options for name in opt.names()}


def _set_aside(kind: Kind, why: str) -> str:
    return registry.refusal(kind.name, f"set aside in pytest: {why}")


def register_options(config: pytest.Config, parser: pytest.Parser) -> None:
    """Each usable kind's options on pytest's `mtpsweep` group; who they clash with is set
    aside whole (the shared options are registered already)."""
    candidates = _wanted(config)
    group = parser.getgroup("mtpsweep")
    taken = _taken(parser)
    accepted: list[Kind] = []
    problems: dict[str, str] = {}
    for kind in candidates:
        clash = next((o.flag for o in kind.options if o.flag in taken), None)
        if clash is not None:
            why = f"its option {clash} is one pytest or another plugin already has"
            problems[kind.name] = _set_aside(kind, why + ", so the kind must name it differently")
            continue
        try:
            for opt in kind.options:
                group.addoption(opt.flag, **opt.kwargs())
        except (ValueError, TypeError, argparse.ArgumentError) as exc:
            problems[kind.name] = _set_aside(
                kind, f"pytest refuses its options ({exception_text(exc)})"
            )
            continue
        taken.update(o.flag for o in kind.options)
        accepted.append(kind)
    config.stash[OPTIONED] = tuple(accepted)
    registry.set_aside(problems, fresh=True)


def fixture_kinds(session: pytest.Session) -> tuple[Kind, ...]:
    """The kinds whose fixture this process may provide: a name pytest or another plugin has
    already is set aside (providing it would change every test that asks for theirs)."""
    config = session.config
    manager: Any = getattr(session, "_fixturemanager", None)
    usable: list[Kind] = []
    problems: dict[str, str] = {}
    for kind in config.stash.get(OPTIONED, ()):
        if manager is not None and manager.getfixturedefs(kind.fixture, session):
            why = (
                f"its fixture {kind.fixture!r} is one pytest or another plugin already provides, "
                "so the kind must name it differently"
            )
            problems[kind.name] = _set_aside(kind, why)
            continue
        usable.append(kind)
    config.stash[FIXTURED] = tuple(usable)
    registry.set_aside(problems)
    return tuple(usable)


def owns(node: pytest.Item | pytest.Collector, name: str) -> bool:
    """Whether the fixture `name` a test under `node` gets is the plugin's (a conftest's or
    another plugin's of the same name is theirs: the test is left alone)."""
    manager: Any = getattr(node.session, "_fixturemanager", None)
    defs = manager.getfixturedefs(name, node) if manager is not None else None
    if not defs:
        return False
    return getattr(defs[-1].func, OURS, None) is not None


def as_pytest_sees_them() -> dict[str, str]:
    """Every set-aside kind's reason, pytest's included (an option or a fixture pytest or a
    plugin of the environment has already): `pytest --fixtures` of an empty directory, in this
    process and silenced, is what registers them as a run would."""
    import contextlib
    import io
    import tempfile

    with (
        tempfile.TemporaryDirectory() as empty,
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        argv = ["--fixtures", "-q", "-p", "no:cacheprovider", "--noconftest", "--rootdir", empty]
        pytest.main([*argv, empty])
    return registry.problems()
