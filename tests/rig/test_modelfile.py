"""A model's files and identity: split shards, the GGUF magic, one sha256 for all shards."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import ProvisionError
from pytest_mtpsweep.rig.modelfile import gguf_problem, model_sha256, shards


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_plain_file_is_its_own_only_shard(tmp_path: Path) -> None:
    assert shards(tmp_path / "m.gguf") == (tmp_path / "m.gguf",)
    assert shards(tmp_path / "m-1-of-3.gguf") == (tmp_path / "m-1-of-3.gguf",)


def test_a_split_gguf_is_every_shard_from_its_first(tmp_path: Path) -> None:
    first = tmp_path / "Qwen-Q4-00001-of-00003.gguf"
    assert [p.name for p in shards(first)] == [
        "Qwen-Q4-00001-of-00003.gguf",
        "Qwen-Q4-00002-of-00003.gguf",
        "Qwen-Q4-00003-of-00003.gguf",
    ]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "empty file (0 bytes)"),
        (b"<html>404</html>", "not a GGUF file (it starts with b'<htm', not b'GGUF')"),
        (b"GGUF\x03\x00", None),
    ],
)
def test_the_gguf_magic(tmp_path: Path, data: bytes, problem: str | None) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(data)
    assert gguf_problem(model) == problem


def test_the_identity_of_one_file_is_its_sha256(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF one")
    assert model_sha256(model, cache=None) == sha(b"GGUF one")


def test_the_identity_of_a_split_model_covers_every_shard(tmp_path: Path) -> None:
    parts = [tmp_path / f"m-{i:05d}-of-00002.gguf" for i in (1, 2)]
    for i, p in enumerate(parts):
        p.write_bytes(b"GGUF part %d" % i)
    first = model_sha256(parts[0], cache=None)
    assert first == sha(f"{sha(b'GGUF part 0')}\n{sha(b'GGUF part 1')}\n".encode())
    parts[1].write_bytes(b"GGUF part X")  # only the second shard changes
    assert model_sha256(parts[0], cache=None) != first
    parts[1].unlink()
    with pytest.raises(
        ProvisionError, match=r"split into 2 shards but .*00002-of-00002.gguf is missing"
    ):
        model_sha256(parts[0], cache=None)
