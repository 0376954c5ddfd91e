"""File digests and their cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_mtpsweep.rig import digests
from pytest_mtpsweep.rig.digests import default_digest_cache, file_digest
from tests.preflight.helpers import sha256_of

NEW_BANNER = "version: 0.6.0-dev (build 11434, commit 515e85511)\nbuilt with cc for x86_64"
OLD_BANNER = "version: 1 (c8e03ce)\nbuilt with cc for x86_64"


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "digests.json"


# --------------------------------------------------------------------------- server version


class TestDigestCache:
    @pytest.fixture
    def hashes(self, monkeypatch: pytest.MonkeyPatch) -> list[str]:
        """Records every full read-and-hash of a file."""
        seen: list[str] = []
        real = digests._sha256_file

        def counting(path: str) -> str:
            seen.append(path)
            return real(path)

        monkeypatch.setattr(digests, "_sha256_file", counting)
        return seen

    def test_second_digest_comes_from_the_cache(
        self, tmp_path: Path, cache: Path, hashes: list[str]
    ) -> None:
        model = tmp_path / "m.gguf"
        model.write_bytes(b"weights")
        assert file_digest(model, cache=cache) == sha256_of(model)
        assert file_digest(model, cache=cache) == sha256_of(model)
        assert len(hashes) == 1
        entry = json.loads(cache.read_text())["files"][str(model.resolve())]
        assert entry["sha256"] == sha256_of(model)

    def test_verify_rehashes_and_refreshes_the_entry(
        self, tmp_path: Path, cache: Path, hashes: list[str]
    ) -> None:
        model = tmp_path / "m.gguf"
        model.write_bytes(b"weights")
        file_digest(model, cache=cache)
        # Corrupt the cached digest: only a real re-hash can bring the right one back.
        data = json.loads(cache.read_text())
        data["files"][str(model.resolve())]["sha256"] = "0" * 64
        cache.write_text(json.dumps(data))
        assert file_digest(model, cache=cache) == "0" * 64
        assert file_digest(model, cache=cache, verify=True) == sha256_of(model)
        assert len(hashes) == 2
        assert file_digest(model, cache=cache) == sha256_of(model)
        assert len(hashes) == 2

    def test_touched_file_is_rehashed(self, tmp_path: Path, cache: Path, hashes: list[str]) -> None:
        model = tmp_path / "m.gguf"
        model.write_bytes(b"weights")
        file_digest(model, cache=cache)
        os.utime(model, ns=(0, model.stat().st_mtime_ns + 1))
        file_digest(model, cache=cache)
        assert len(hashes) == 2

    def test_no_cache_hashes_every_time(self, tmp_path: Path, hashes: list[str]) -> None:
        model = tmp_path / "m.gguf"
        model.write_bytes(b"weights")
        file_digest(model, cache=None)
        file_digest(model, cache=None)
        assert len(hashes) == 2

    def test_corrupt_cache_is_ignored_and_rewritten(self, tmp_path: Path, cache: Path) -> None:
        model = tmp_path / "m.gguf"
        model.write_bytes(b"weights")
        cache.parent.mkdir(parents=True)
        cache.write_text("{not json")
        assert file_digest(model, cache=cache) == sha256_of(model)
        assert json.loads(cache.read_text())["format"] == 1

    def test_default_location_follows_xdg(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("MTPSWEEP_CACHE", raising=False)
        monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
        assert default_digest_cache() == Path("/somewhere/cache/pytest-mtpsweep/digests.json")
        monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
        assert default_digest_cache() == Path.home() / ".cache/pytest-mtpsweep/digests.json"
        monkeypatch.delenv("XDG_CACHE_HOME")
        assert default_digest_cache() == Path.home() / ".cache/pytest-mtpsweep/digests.json"
