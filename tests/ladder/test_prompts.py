"""Prompt sets: names, subsets, digests, and one-line refusals of files that are not prompts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import PromptError
from pytest_mtpsweep.ladder.prompts import PromptSet, load_prompt_set, select

REPO = Path(__file__).resolve().parents[2]
CANONICAL = REPO / "experiments" / "prompts" / "canonical"


def prompt_set(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    d = tmp_path / "set"
    d.mkdir(parents=True)
    for name, body in files.items():
        path = d / name
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body)
    return d


def test_the_canonical_set_is_sixteen_prompts_in_two_subsets() -> None:
    prompts = load_prompt_set(CANONICAL)
    assert len(prompts) == 16
    assert [p.id for p in select(prompts, "prose")] == [f"prose_{i:02d}" for i in range(1, 9)]
    assert len(select(prompts, "structured")) == 8 and select(prompts, "both") == prompts
    assert all(p.text == p.text.strip() and p.text for p in prompts)


def test_digest_follows_ids_and_texts_not_order(tmp_path: Path) -> None:
    d = prompt_set(tmp_path, {"prose_01.txt": "A", "prose_02.txt": "B"})
    a = PromptSet(d, load_prompt_set(d))
    assert a.digest == PromptSet(d, tuple(reversed(a.prompts))).digest
    e = prompt_set(tmp_path / "x", {"prose_01.txt": "A", "prose_02.txt": "B."})
    assert a.digest != PromptSet(e, load_prompt_set(e)).digest


@pytest.mark.parametrize(
    ("files", "needle"),
    [
        ({"prose.txt": "x"}, "prose_<nn>.txt"),
        ({"prose_1_a.txt": "x"}, "prose_<nn>.txt"),
        ({"poetry_01.txt": "x"}, "prose_<nn>.txt"),
        ({"prose_01.txt": "  \n"}, "the prompt is empty"),
        ({"prose_01.txt": b"\xff\xfe caf\xe9"}, "not UTF-8"),
        ({"prose_01.txt": b"\x00\x01\x02binary"}, "binary"),
        ({}, "holds no *.txt prompts"),
    ],
)
def test_refusals_are_one_line_and_name_the_file(
    tmp_path: Path, files: dict[str, bytes | str], needle: str
) -> None:
    d = prompt_set(tmp_path, files)
    with pytest.raises(PromptError) as info:
        load_prompt_set(d)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_a_directory_named_like_a_prompt_is_refused(tmp_path: Path) -> None:
    d = prompt_set(tmp_path, {"prose_01.txt": "ok"})
    (d / "prose_02.txt").mkdir()
    with pytest.raises(PromptError, match="is a directory"):
        load_prompt_set(d)


def test_a_symlink_loop_is_refused(tmp_path: Path) -> None:
    d = prompt_set(tmp_path, {"prose_01.txt": "ok"})
    os.symlink(d / "prose_02.txt", d / "prose_02.txt")
    with pytest.raises(PromptError, match="cannot be read"):
        load_prompt_set(d)


def test_a_fifo_or_a_huge_prompt_is_one_line_never_a_hang(tmp_path: Path) -> None:
    d = prompt_set(tmp_path, {"prose_01.txt": "ok"})
    os.mkfifo(d / "prose_02.txt")  # read_bytes() waited here for a writer for ever
    with pytest.raises(PromptError, match="is a FIFO, not a regular file"):
        load_prompt_set(d)
    (d / "prose_02.txt").unlink()
    with (d / "prose_02.txt").open("wb") as f:
        f.truncate(17 * 1024 * 1024)
    with pytest.raises(PromptError, match="a read takes; replace it") as info:
        load_prompt_set(d)
    assert "prose_02.txt" in str(info.value)


def test_a_missing_set_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="--prompts-dir"):
        load_prompt_set(tmp_path / "nope")
