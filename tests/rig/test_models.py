"""The embedded models: pinned chunks and whole, assembled and checked, refusals in one line."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import ProvisionError
from pytest_mtpsweep.cli.main import main
from pytest_mtpsweep.rig import models, provision


def test_the_pins_are_consistent() -> None:
    for m in models.MODELS.values():
        if m.chunks:
            assert sum(c.size for c in m.chunks) == m.size
            assert len(m.requirements) == len(m.chunks)
        assert len(m.sha256) == 64
    assert models.DEFAULT is models.QWEN and models.GEMMA.role == "control"


def test_an_unknown_embedded_name_lists_the_known_ones() -> None:
    with pytest.raises(
        ProvisionError, match=r"embedded:qwen2\.5-coder-0\.5b, embedded:gemma3-270m"
    ):
        models.lookup("embedded:nope")
    assert models.lookup("/some/file.gguf") is None


def fake_model(
    tmp_path: Path, parts: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> models.EmbeddedModel:
    """A model whose chunks are files in tmp_path (the packages' lookup replaced)."""
    chunks = []
    for i, data in enumerate(parts):
        (tmp_path / f"c{i}").write_bytes(data)
        chunks.append(
            models.Chunk(f"d{i}", "1", f"c{i}", len(data), hashlib.sha256(data).hexdigest())
        )
    whole = b"".join(parts)
    monkeypatch.setattr(models, "_chunk_file", lambda c, install: tmp_path / c.path)
    return models.EmbeddedModel(
        "fake",
        "fake.gguf",
        len(whole),
        hashlib.sha256(whole).hexdigest(),
        tuple(chunks),
        "",
        "",
        "x",
    )


def test_assembly_checks_every_chunk_and_the_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = fake_model(tmp_path, [b"GGUF first", b" second"], monkeypatch)
    target = tmp_path / "out" / "fake.gguf"
    models.assemble(model, target)
    assert target.read_bytes() == b"GGUF first second"
    (tmp_path / "c1").write_bytes(b" SECOND")  # same size, other bytes: a swapped package
    target.unlink()
    with pytest.raises(ProvisionError) as info:
        models.assemble(model, target)
    assert "not the pinned" in str(info.value) and "\n" not in str(info.value)
    assert not target.exists() and not target.with_name("fake.gguf.partial").exists()


def test_a_whole_that_differs_is_deleted_and_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = fake_model(tmp_path, [b"GGUF a"], monkeypatch)
    model = dataclasses.replace(model, sha256="0" * 64)
    with pytest.raises(ProvisionError, match="not the pinned"):
        models.assemble(model, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()


@pytest.mark.server
def test_provision_refuses_an_assembly_whose_sha256_differs_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The real packages, a wrong pin: what a changed package upstream would look like.
    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path))
    wrong = dataclasses.replace(models.QWEN, sha256="0" * 64)
    monkeypatch.setitem(models.MODELS, models.QWEN.name, wrong)
    # the server named, so provision builds nothing under this empty cache (rig/build.py)
    bin_args = ["--server-bin", str(provision.resolve_server_bin().path)]
    assert main(["provision", *bin_args, "--model", "embedded:qwen2.5-coder-0.5b"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not the pinned" in err and "sha256" in err
    assert not list((tmp_path / "models").glob("*.gguf"))


@pytest.mark.server
def test_the_assembled_default_is_the_pinned_file() -> None:
    path = models.cached_path(models.QWEN)
    assert models.verified(path) and path.stat().st_size == models.QWEN.size
    with path.open("rb") as f:
        assert hashlib.file_digest(f, "sha256").hexdigest() == models.QWEN.sha256
