"""Where --ladder NAME is looked for: one rule for the plugin and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.ladder import find_ladder, search_dirs

REPO = Path(__file__).resolve().parents[2]
LADDERS = REPO / "experiments" / "ladders"


def test_by_name() -> None:
    assert find_ladder("drafters-cpu", [LADDERS]) == (LADDERS / "drafters-cpu.toml").resolve()


def test_by_path(tmp_path: Path) -> None:
    p = tmp_path / "l.toml"
    p.write_text("x = 1")
    assert find_ladder(str(p), []) == p.resolve()


def test_unknown_lists_available() -> None:
    with pytest.raises(LadderError, match=r"available: .*drafters-cpu.*lowerarm"):
        find_ladder("nope", [LADDERS])


def test_a_directory_is_not_a_ladder(tmp_path: Path) -> None:
    with pytest.raises(LadderError, match="is a directory"):
        find_ladder(str(tmp_path), [])


def test_search_order_puts_the_test_path_first(tmp_path: Path) -> None:
    mine = tmp_path / "exp"
    (mine / "ladders").mkdir(parents=True)
    dirs = search_dirs([mine, tmp_path / "missing"], REPO, tmp_path)
    assert dirs[0] == (mine / "ladders").resolve()
    assert (REPO / "experiments" / "ladders").resolve() in dirs
    assert (tmp_path / "missing" / "ladders").resolve() not in dirs


def test_a_symlink_loop_is_named_as_such(tmp_path: Path) -> None:
    loop = tmp_path / "loop.toml"
    loop.symlink_to(loop)
    with pytest.raises(LadderError, match="a symlink that leads nowhere"):
        find_ladder(str(loop), [])
