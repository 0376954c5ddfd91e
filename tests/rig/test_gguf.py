"""Reading a GGUF header: the metadata we witness (chat template, name), and refusals."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from pytest_mtpsweep.rig import models
from pytest_mtpsweep.rig.gguf import CHAT_TEMPLATE, GGUFError, read_metadata, template_identity


def s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def gguf(tmp_path: Path, kvs: list[bytes], version: int = 3) -> Path:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", version, 0, len(kvs)) + b"".join(kvs))
    return path


def kv_str(key: str, value: str) -> bytes:
    return s(key) + struct.pack("<I", 8) + s(value)


def test_reads_strings_past_arrays_and_scalars(tmp_path: Path) -> None:
    tokens = s("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 3) + s("a") + s("bb") + s("c")
    scores = s("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 3) + struct.pack("<3f", 1, 2, 3)
    ctx = s("llama.context_length") + struct.pack("<II", 4, 4096)
    path = gguf(
        tmp_path,
        [kv_str("general.name", "Tiny"), tokens, scores, ctx, kv_str(CHAT_TEMPLATE, "{{ x }}")],
    )
    meta = read_metadata(path, ["general.name", CHAT_TEMPLATE, "llama.context_length", "absent"])
    assert meta == {"general.name": "Tiny", CHAT_TEMPLATE: "{{ x }}", "llama.context_length": 4096}


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"", "magic"),
        (b"NOTAGGUF" * 4, "magic"),
        (b"GGUF" + struct.pack("<IQQ", 9, 0, 0), "version 9"),
    ],
)
def test_not_a_gguf_is_refused(tmp_path: Path, body: bytes, needle: str) -> None:
    path = tmp_path / "x.gguf"
    path.write_bytes(body)
    with pytest.raises(GGUFError, match=needle):
        read_metadata(path, [CHAT_TEMPLATE])


def test_truncated_metadata_is_refused(tmp_path: Path) -> None:
    path = gguf(tmp_path, [kv_str("general.name", "Tiny")])
    path.write_bytes(path.read_bytes()[:-2])
    with pytest.raises(GGUFError, match="ends inside"):
        read_metadata(path, ["general.name"])


def test_template_identity() -> None:
    sha, first = template_identity("\n  {%- if tools %}\nrest")
    assert first == "{%- if tools %}" and sha is not None and len(sha) == 64
    assert template_identity(None) == (None, None) and template_identity("") == (None, None)


@pytest.mark.server
def test_the_embedded_models_say_what_they_are() -> None:
    qwen = read_metadata(models.cached_path(models.QWEN), ["general.name", CHAT_TEMPLATE])
    assert qwen["general.name"] == "Qwen2.5 Coder 0.5B Instruct AWQ"
    assert "<|im_start|>" in qwen[CHAT_TEMPLATE]
    gemma = read_metadata(models.cached_path(models.GEMMA), ["general.name", CHAT_TEMPLATE])
    assert gemma == {"general.name": "Gemma 3 270m"}  # no chat template: the cause of the echo
