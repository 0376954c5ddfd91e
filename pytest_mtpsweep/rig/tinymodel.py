"""The tiny model: a GGUF the project writes from code, byte for byte the same on every machine.

A llama-architecture model of ~2 M parameters besides its embedding, with the embedded Qwen2.5
model's tokenizer and chat template (read from its sha256-checked GGUF) and weights drawn from a
seeded generator. It decodes in a fraction of the 0.5B model's time, so the tests that check the
server, the protocol, timing, records, crashes and load run on it; its text is not language, so
no test of what a model says can (docs/models.md).

Why these choices:
- weights come from PCG64's raw 64-bit stream, scaled with integer arithmetic: NumPy keeps a
  bit generator's stream stable across versions, not its distributions (NEP 19), and the file's
  sha256 is pinned;
- the output layer is tied to the embedding (no `output.weight`; llama.cpp's llama arch falls back
  to `token_embd.weight`), which halves the file: the 151,936-token embedding is most of it;
- every token that is not an ordinary one (control, user-defined, unused: end of turn among them)
  has a zero embedding row, so its logit is 0 while the largest of ~150 k random logits is far
  above it: greedy decoding never stops early and answers run to `max_tokens`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import ProvisionError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SEED = 20261207
NORMAL_TOKEN = 1  # llama.cpp's token type of an ordinary (not special) token
# What a record of this model says in place of judging its text (decode's `degenerate` field).
NOT_LANGUAGE = (
    "not language: the tiny model has seeded random weights; it measures the machinery "
    "(server, protocol, timing), not a model"
)
GGUF_PIN = "gguf==0.19.0"  # the writer whose bytes the pinned sha256 is of


@dataclass(frozen=True)
class Dims:
    """The tiny model's shape: small everywhere, the tokenizer's vocabulary aside."""

    n_embd: int = 64
    n_head: int = 4
    n_head_kv: int = 2  # grouped-query attention, as the real models have
    n_layer: int = 2
    n_ff: int = 192
    n_ctx_train: int = 32768  # any ladder's ctx_size fits


DIMS = Dims()


def _uniform(bits: Any, count: int, scale: float) -> npt.NDArray[np.float32]:
    """`count` values in [-scale, scale) from the raw stream: exact in float64 on any machine."""
    import numpy as np

    raw = bits.random_raw(count)  # uint64, stable across NumPy versions
    unit = (raw >> np.uint64(40)).astype(np.float64) / float(1 << 24)  # 24 bits: exact
    out: npt.NDArray[np.float32] = ((unit * 2.0 - 1.0) * scale).astype(np.float32)
    return out


def _tensors(n_vocab: int, normal: npt.NDArray[np.bool_], d: Dims) -> dict[str, Any]:
    """Every tensor, in the order written (numpy shapes: rows are a GGUF tensor's last dim)."""
    import numpy as np

    bits = np.random.PCG64(SEED)
    head = d.n_embd // d.n_head
    kv = head * d.n_head_kv

    def matrix(rows: int, cols: int) -> npt.NDArray[np.float16]:
        scale = 1.0 / float(np.sqrt(cols))
        return _uniform(bits, rows * cols, scale).reshape(rows, cols).astype(np.float16)

    embd = _uniform(bits, n_vocab * d.n_embd, 1.0).reshape(n_vocab, d.n_embd)
    embd[~normal] = 0.0  # special tokens never win greedy decoding (module docstring)
    out: dict[str, Any] = {"token_embd.weight": embd.astype(np.float16)}
    ones = np.ones(d.n_embd, dtype=np.float32)
    for i in range(d.n_layer):
        b = f"blk.{i}."
        out[b + "attn_norm.weight"] = ones
        out[b + "attn_q.weight"] = matrix(d.n_embd, d.n_embd)
        out[b + "attn_k.weight"] = matrix(kv, d.n_embd)
        out[b + "attn_v.weight"] = matrix(kv, d.n_embd)
        out[b + "attn_output.weight"] = matrix(d.n_embd, d.n_embd)
        out[b + "ffn_norm.weight"] = ones
        out[b + "ffn_gate.weight"] = matrix(d.n_ff, d.n_embd)
        out[b + "ffn_up.weight"] = matrix(d.n_ff, d.n_embd)
        out[b + "ffn_down.weight"] = matrix(d.n_embd, d.n_ff)
    out["output_norm.weight"] = ones
    return out


def _tokenizer(source: Path) -> tuple[list[tuple[str, Any, Any, Any]], Any]:
    """The source GGUF's `tokenizer.*` fields, in file order, as (key, value, type, subtype),
    and which of its tokens are ordinary ones."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(source)
    fields: list[tuple[str, Any, Any, Any]] = []
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        types = field.types
        sub = types[-1] if types[0] == gguf.GGUFValueType.ARRAY else None
        fields.append((key, field.contents(), types[0], sub))
    kinds = np.asarray(reader.fields["tokenizer.ggml.token_type"].contents())
    return fields, kinds == NORMAL_TOKEN


def write(source: Path, target: Path, dims: Dims = DIMS) -> None:
    """Write the tiny model to `target` (atomically), its tokenizer read from `source`."""
    try:
        import gguf
    except ImportError:
        raise ProvisionError(
            "the tiny model is written with the gguf package, which is not installed; install "
            f"it with: pip install 'pytest-mtpsweep[tiny]' (or {GGUF_PIN})"
        ) from None
    fields, normal = _tokenizer(source)
    tmp = target.with_name(target.name + ".partial")
    target.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_name("mtpsweep tiny (seeded random weights, not a language model)")
    w.add_type("model")
    w.add_context_length(dims.n_ctx_train)
    w.add_embedding_length(dims.n_embd)
    w.add_block_count(dims.n_layer)
    w.add_feed_forward_length(dims.n_ff)
    w.add_head_count(dims.n_head)
    w.add_head_count_kv(dims.n_head_kv)
    w.add_rope_dimension_count(dims.n_embd // dims.n_head)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_uint32("general.seed", SEED)  # not read by llama.cpp: says where the weights came from
    for key, value, vtype, sub in fields:
        w.add_key_value(key, value, vtype, sub)
    for name, tensor in _tensors(len(normal), normal, dims).items():
        w.add_tensor(name, tensor)
    try:
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
    finally:
        w.close()
    with tmp.open("rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp, target)
