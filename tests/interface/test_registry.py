"""Kinds are found by entry point and looked up by name; a ladder naming no installed kind, or
a kind that does not load, is one line that names what is installed and the fix."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import EntryPoint

import pytest

from pytest_mtpsweep.base.errors import KindError, LadderError
from pytest_mtpsweep.interface import registry
from pytest_mtpsweep.interface.kind import GROUP
from pytest_mtpsweep.kindapi import Kind
from pytest_mtpsweep.wishes.options import Opt

FAKE = Kind(name="fake", fixture="fake", ladder="x:y", run="x:z")


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EntryPoint]]:
    """Entry points as a test sets them (the real ones come back afterwards)."""
    points: list[EntryPoint] = []
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: list(points))
    registry.reset()
    yield points
    registry.reset()


def test_the_shipped_kinds_are_found_through_the_entry_point_group() -> None:
    assert {"decode", "authoring"} <= set(registry.names())
    assert registry.default_name() == "decode"
    assert registry.kind("authoring").fixture == "cell"
    assert registry.ladder_spec("decode").name == "decode"
    assert {o.flag for o in registry.options()} >= {"--subset", "--token-budget"}


def test_an_unknown_kind_names_the_installed_ones() -> None:
    with pytest.raises(LadderError) as info:
        registry.kind("poetry", "ladders/x.toml")
    text = str(info.value)
    assert text.startswith("ladders/x.toml: field 'kind' is 'poetry', which no installed")
    assert "installed kinds: authoring, decode" in text and GROUP in text and "\n" not in text


def test_a_kind_that_does_not_load_is_named_not_fatal(installed: list[EntryPoint]) -> None:
    installed += [
        EntryPoint("broken", "no_such_module_anywhere:KIND", GROUP),
        EntryPoint("fake", f"{__name__}:FAKE", GROUP),
    ]
    assert registry.names() == ("fake",)
    with pytest.raises(KindError, match=r"kind 'broken' of .* does not load: importing no_such"):
        registry.kind("broken")


def test_an_entry_point_must_name_a_kind_of_its_own_name(installed: list[EntryPoint]) -> None:
    installed.append(EntryPoint("other", f"{__name__}:FAKE", GROUP))
    with pytest.raises(KindError, match=r"its Kind is named 'fake', not 'other'"):
        registry.kind("other")


def test_exactly_one_kind_is_the_default(installed: list[EntryPoint]) -> None:
    installed.append(EntryPoint("fake", f"{__name__}:FAKE", GROUP))
    with pytest.raises(LadderError, match="but none say so"):
        registry.default()


SAME_A = Kind(name="a", fixture="fa", ladder="x:y", run="x:z", options=(Opt("--same", "same"),))
SAME_B = Kind(name="b", fixture="fb", ladder="x:y", run="x:z", options=(Opt("--same", "other"),))
SAME_C = Kind(name="c", fixture="fa", ladder="x:y", run="x:z")
SHARED = Kind(name="d", fixture="fd", ladder="x:y", run="x:z", options=(Opt("--seed", "s2"),))


def test_a_kind_taking_what_another_has_is_set_aside_and_the_first_kept(
    installed: list[EntryPoint],
) -> None:
    installed += [EntryPoint(k.name, f"{__name__}:{v}", GROUP) for k, v in
                  ((SAME_A, "SAME_A"), (SAME_B, "SAME_B"), (SAME_C, "SAME_C"), (SHARED, "SHARED"))]  # fmt: skip
    assert registry.names() == ("a",)
    with pytest.raises(KindError, match="its option --same is taken already by kind 'a'"):
        registry.kind("b", "x.toml")
    with pytest.raises(KindError, match="its fixture 'fa' is taken already by kind 'a'"):
        registry.kind("c")
    with pytest.raises(KindError, match="its option --seed is taken already by the shared"):
        registry.kind("d")


def test_a_part_that_does_not_load_is_one_line_naming_the_part(
    installed: list[EntryPoint],
) -> None:
    installed.append(EntryPoint("fake", f"{__name__}:FAKE", GROUP))
    with pytest.raises(KindError) as info:
        registry.ladder_spec("fake", "x.toml")
    text = str(info.value)
    assert text.startswith("x.toml: kind 'fake' of an entry point of no distribution does not ")
    assert "its ladder part: x:y raised ModuleNotFoundError" in text and "\n" not in text


def test_set_aside_kinds_are_refused_and_forgotten_afresh(installed: list[EntryPoint]) -> None:
    installed.append(EntryPoint("fake", f"{__name__}:FAKE", GROUP))
    registry.set_aside({"fake": "kind 'fake' is set aside in pytest."}, fresh=True)
    assert registry.names() == ()
    with pytest.raises(KindError, match="set aside in pytest"):
        registry.kind("fake")
    registry.set_aside({}, fresh=True)
    assert registry.names() == ("fake",)
