"""Preflight items about what the run uses: server build, models, launchers, harness, files."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_mtpsweep.preflight.artefacts import (
    check_harness,
    check_ladder_file,
    check_launchers,
    check_models,
    check_run_dir,
    check_server_version,
)
from pytest_mtpsweep.preflight.items import (
    FAIL,
    PASS,
    SKIP,
)
from tests.preflight.helpers import sha256_of, version_printer, write_script

NEW_BANNER = "version: 0.6.0-dev (build 11434, commit 515e85511)\nbuilt with cc for x86_64"
OLD_BANNER = "version: 1 (c8e03ce)\nbuilt with cc for x86_64"


class TestServerVersionItem:
    def test_matching_build_passes_with_the_banner_line(self, tmp_path: Path) -> None:
        item = check_server_version(version_printer(tmp_path), "b11434-515e85511")
        assert item.verdict == PASS
        assert item.observed == "version: 0.6.0-dev (build 11434, commit 515e85511)"

    def test_wrong_build_fails_naming_both(self, tmp_path: Path) -> None:
        item = check_server_version(version_printer(tmp_path, OLD_BANNER), "515e85511")
        assert item.verdict == FAIL
        assert "515e85511" in item.expected
        assert "c8e03ce" in item.observed
        assert "515e85511" in item.fix and "c8e03ce" in item.fix

    def test_no_expected_build_passes_any(self, tmp_path: Path) -> None:
        item = check_server_version(version_printer(tmp_path, OLD_BANNER), None)
        assert (item.verdict, item.observed) == (PASS, "version: 1 (c8e03ce)")

    def test_missing_binary_fails_with_a_fix(self, tmp_path: Path) -> None:
        item = check_server_version(tmp_path / "llama-server", "515e85511")
        assert item.verdict == FAIL
        assert str(tmp_path / "llama-server") in item.observed
        assert item.fix

    def test_unexecutable_binary_fails(self, tmp_path: Path) -> None:
        printer = version_printer(tmp_path)
        printer.chmod(0o644)
        item = check_server_version(printer, None)
        assert item.verdict == FAIL
        assert item.observed.startswith("not executable")

    def test_unrecognised_output_fails(self, tmp_path: Path) -> None:
        other = write_script(tmp_path / "not-a-server", "echo 'usage: something else' >&2\n")
        item = check_server_version(other, None)
        assert item.verdict == FAIL
        assert "usage: something else" in item.observed

    def test_external_launcher_skips(self) -> None:
        assert check_server_version(None, "515e85511").verdict == SKIP


class TestModelFiles:
    def test_observed_has_size_mtime_and_sha256(self, tmp_path: Path, cache: Path) -> None:
        model = tmp_path / "m.gguf"
        model.write_bytes(b"GGUF" + b"x" * 1230)
        os.utime(model, ns=(0, 1_700_000_000_250_000_000))
        (item,) = check_models((model,), cache=cache)
        assert item.name == "model:m.gguf"
        assert item.verdict == PASS
        assert item.observed == (
            f"1,234 bytes, mtime 2023-11-14T22:13:20.250000Z, sha256 {sha256_of(model)}"
        )

    def test_missing_file_fails_naming_it(self, tmp_path: Path, cache: Path) -> None:
        (item,) = check_models((tmp_path / "gone.gguf",), cache=cache)
        assert item.verdict == FAIL
        assert str(tmp_path / "gone.gguf") in item.observed
        assert str(tmp_path / "gone.gguf") in item.fix

    def test_changed_content_changes_digest(self, tmp_path: Path, cache: Path) -> None:
        model = tmp_path / "m.gguf"
        model.write_bytes(b"GGUFbefore")
        (first,) = check_models((model,), cache=cache)
        model.write_bytes(b"GGUFafter!")  # same size
        os.utime(model, ns=(0, model.stat().st_mtime_ns + 1_000_000))
        (second,) = check_models((model,), cache=cache)
        assert sha256_of(model) in second.observed
        assert sha256_of(model) not in first.observed

    @pytest.mark.parametrize(
        ("data", "problem"), [(b"", "empty file (0 bytes)"), (b"\x00" * 64, "not a GGUF file")]
    )
    def test_an_empty_or_foreign_file_fails_before_any_server(
        self, tmp_path: Path, cache: Path, data: bytes, problem: str
    ) -> None:
        model = tmp_path / "m.gguf"
        model.write_bytes(data)
        (item,) = check_models((model,), cache=cache)
        assert item.verdict == FAIL
        assert item.observed.startswith(problem) and str(model) in item.observed
        assert "GGUF" in item.fix and "\n" not in item.fix

    def test_same_basename_twice_gets_distinct_names(self, tmp_path: Path, cache: Path) -> None:
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        paths = (tmp_path / "a" / "m.gguf", tmp_path / "b" / "m.gguf")
        for path in paths:
            path.write_bytes(b"GGUFw")
        names = [item.name for item in check_models(paths, cache=cache)]
        assert names == [f"model:{paths[0]}", f"model:{paths[1]}"]


class TestLaunchers:
    def test_pinned_digest_matches(self, tmp_path: Path) -> None:
        serve = write_script(tmp_path / "serve.sh", "exec true\n")
        (item,) = check_launchers({"serve": (serve, sha256_of(serve).upper())})
        assert (item.name, item.verdict) == ("launcher:serve", PASS)

    def test_changed_launcher_fails_naming_both_digests(self, tmp_path: Path) -> None:
        serve = write_script(tmp_path / "serve.sh", "exec true\n")
        pinned = sha256_of(serve)
        serve.write_text(serve.read_text() + "# edited\n")
        (item,) = check_launchers({"serve": (serve, pinned)})
        assert item.verdict == FAIL
        assert pinned in item.expected
        assert sha256_of(serve) in item.observed
        assert sha256_of(serve) in item.fix

    def test_unpinned_launcher_records_its_digest(self, tmp_path: Path) -> None:
        stop = write_script(tmp_path / "stop.sh", "exit 0\n")
        (item,) = check_launchers({"stop": (stop, None)})
        assert (item.verdict, item.observed) == (PASS, f"sha256 {sha256_of(stop)}")

    def test_missing_launcher_fails(self, tmp_path: Path) -> None:
        (item,) = check_launchers({"serve": (tmp_path / "serve.sh", None)})
        assert item.verdict == FAIL
        assert item.fix


class TestHarness:
    @pytest.fixture
    def repo(self, tmp_path: Path) -> Path:
        if shutil.which("git") is None:
            pytest.skip("git is not installed")
        repo = tmp_path / "repo"
        repo.mkdir()
        (repo / "test_x.py").write_text("def test_x(): pass\n")
        git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
        return repo

    def test_clean_repository_reports_commit(self, repo: Path) -> None:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        item = check_harness("0.1.0", repo)
        assert item.verdict == PASS
        assert item.observed == f"pytest-mtpsweep 0.1.0; experiments commit {head} (clean)"

    def test_edited_repository_is_dirty(self, repo: Path) -> None:
        (repo / "test_x.py").write_text("def test_x(): assert 0\n")
        assert check_harness("0.1.0", repo).observed.endswith("(dirty)")

    def test_not_a_repository_is_stated_and_passes(self, tmp_path: Path) -> None:
        item = check_harness("0.1.0", tmp_path)
        assert item.verdict == PASS
        assert item.observed == "pytest-mtpsweep 0.1.0; experiments not a git repository"


class TestLadderAndRunDir:
    def test_ladder_digest_recorded(self, tmp_path: Path) -> None:
        ladder = tmp_path / "l.toml"
        ladder.write_text("x = 1\n")
        item = check_ladder_file(ladder)
        assert item.verdict == PASS
        assert item.observed == f"{ladder}: sha256 {sha256_of(ladder)}"

    def test_missing_ladder_fails(self, tmp_path: Path) -> None:
        assert check_ladder_file(tmp_path / "l.toml").verdict == FAIL

    def test_new_run_dir_passes(self, tmp_path: Path) -> None:
        assert check_run_dir(tmp_path / "runs" / "r1").verdict == PASS

    def test_existing_run_dir_fails(self, tmp_path: Path) -> None:
        item = check_run_dir(tmp_path)
        assert item.verdict == FAIL
        assert str(tmp_path) in item.observed and str(tmp_path) in item.fix
