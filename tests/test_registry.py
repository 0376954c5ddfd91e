"""Kinds are found by entry point and looked up by name; a ladder naming no installed kind, or
a kind that does not load, is one line that names what is installed and the fix."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import EntryPoint

import pytest

from pytest_mtpsweep import registry
from pytest_mtpsweep.errors import LadderError
from pytest_mtpsweep.kindapi import GROUP, Kind

FAKE = Kind(name="fake", fixture="fake", ladder="x:y", run="x:z")


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EntryPoint]]:
    """Entry points as a test sets them (the real ones come back afterwards)."""
    points: list[EntryPoint] = []
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: list(points))
    registry._declared.cache_clear()
    yield points
    registry._declared.cache_clear()


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
    with pytest.raises(LadderError, match="kind 'broken' is installed but does not load"):
        registry.kind("broken")


def test_an_entry_point_must_name_a_kind_of_its_own_name(installed: list[EntryPoint]) -> None:
    installed.append(EntryPoint("other", f"{__name__}:FAKE", GROUP))
    with pytest.raises(LadderError, match=r"is not a kindapi\.Kind named 'other'"):
        registry.kind("other")


def test_exactly_one_kind_is_the_default(installed: list[EntryPoint]) -> None:
    installed.append(EntryPoint("fake", f"{__name__}:FAKE", GROUP))
    with pytest.raises(LadderError, match="but none say so"):
        registry.default()
