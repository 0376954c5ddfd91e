"""The tiny model: written from code, the same bytes every time, tied output, special tokens that
never win, and refused when its bytes are not the pinned ones."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import ProvisionError
from pytest_mtpsweep.rig import models, provision, tinymodel

gguf = pytest.importorskip("gguf")
SMALL = tinymodel.Dims(n_embd=32, n_head=2, n_head_kv=1, n_layer=1, n_ff=64, n_ctx_train=256)


def tokenizer_gguf(path: Path, n: int = 300) -> Path:
    """A stand-in for the embedded model's GGUF: a tokenizer and no weights worth reading."""
    w = gguf.GGUFWriter(path, "qwen2")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list([f"t{i}" for i in range(n)])
    w.add_token_types([3 if i >= n - 3 else 1 for i in range(n)])  # the last three: control
    w.add_token_merges(["t 1", "t 2"])
    w.add_eos_token_id(n - 1)
    w.add_chat_template("{{ messages }}")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def written(tmp_path: Path, name: str) -> Path:
    out = tmp_path / name
    tinymodel.write(tokenizer_gguf(tmp_path / "src.gguf"), out, SMALL)
    return out


def test_the_same_code_writes_the_same_bytes_in_another_process(tmp_path: Path) -> None:
    first = written(tmp_path, "a.gguf")
    code = (
        "import sys; from pathlib import Path; from pytest_mtpsweep.rig import tinymodel; "
        "from tests.rig.test_tinymodel import SMALL; "
        "tinymodel.write(Path(sys.argv[1]), Path(sys.argv[2]), SMALL)"
    )
    second = tmp_path / "b.gguf"
    subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "src.gguf"), str(second)], check=True,
        timeout=120, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert first.read_bytes() == second.read_bytes()
    assert not list(tmp_path.glob("*.partial"))


def test_a_llama_model_with_a_tied_output_and_the_source_tokenizer(tmp_path: Path) -> None:
    reader = gguf.GGUFReader(written(tmp_path, "t.gguf"))
    fields = reader.fields
    assert fields["general.architecture"].contents() == "llama"
    assert fields["tokenizer.ggml.pre"].contents() == "qwen2"
    assert fields["tokenizer.chat_template"].contents() == "{{ messages }}"
    assert fields["tokenizer.ggml.eos_token_id"].contents() == 299
    names = {t.name for t in reader.tensors}
    assert "token_embd.weight" in names and "output.weight" not in names
    embd = next(t for t in reader.tensors if t.name == "token_embd.weight").data
    assert embd.shape == (300, 32)
    assert not embd[-3:].any() and embd[:-3].any(axis=1).all()  # control rows only are zero


def test_a_written_file_with_other_bytes_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path / "cache"))
    source = tokenizer_gguf(tmp_path / "src.gguf")
    monkeypatch.setattr(provision, "model_path", _only_source(source))
    with pytest.raises(ProvisionError, match=r"tiny has .* not the pinned .* it was deleted"):
        provision._write_tiny(models.TINY, models.cached_path(models.TINY))
    assert not models.cached_path(models.TINY).exists()


def _only_source(source: Path) -> object:
    def model_path(model: models.EmbeddedModel = models.DEFAULT, **kw: object) -> Path:
        assert model is models.DEFAULT  # the tokenizer's source
        return source

    return model_path


def test_the_pins_say_what_the_tiny_model_is() -> None:
    assert models.TINY.role == "synthetic" and models.TINY.size <= 32 * 1024 * 1024
    assert models.synthetic(models.TINY.sha256) is models.TINY
    assert models.synthetic(f"a={'0' * 64},b={models.TINY.sha256}") is models.TINY
    assert models.synthetic(models.QWEN.sha256) is None
    line = models.machinery_line(["embedded:qwen2.5-coder-0.5b", "embedded:tiny"])
    assert line is not None and "measures the machinery" in line
    assert models.machinery_line(["embedded:qwen2.5-coder-0.5b", "/a.gguf"]) is None
    assert models.machinery_line(["/kit/models/" + models.TINY.file]) is not None


@pytest.mark.server
def test_the_written_tiny_model_is_the_pinned_file() -> None:
    path = provision.model_path(models.TINY)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert (path.stat().st_size, digest) == (models.TINY.size, models.TINY.sha256)
