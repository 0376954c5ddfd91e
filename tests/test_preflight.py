"""Preflight: each item's pass and fail paths, exercised for real where the machine allows."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep import preflight
from pytest_mtpsweep.preflight import (
    FAIL,
    PASS,
    SKIP,
    WAIVED,
    PreflightError,
    PreflightInputs,
    PreflightItem,
    ServerVersion,
    build_matches,
    check_disk,
    check_gpu,
    check_harness,
    check_inactive_processes,
    check_inactive_units,
    check_ladder_file,
    check_launchers,
    check_models,
    check_ports,
    check_ram,
    check_run_dir,
    check_server_processes,
    check_server_version,
    compare_items,
    default_digest_cache,
    failures,
    file_digest,
    item_names,
    load_preflight_json,
    parse_server_version,
    render_fixes,
    render_table,
    run_preflight,
    write_preflight_json,
)

try:
    from tests.fake_pynvml import FakeGpu, FakeNvml
except ImportError:  # tests/ run as a plain directory of modules
    from fake_pynvml import FakeGpu, FakeNvml  # type: ignore[no-redef,import-not-found,unused-ignore]

NEW_BANNER = "version: 0.6.0-dev (build 11434, commit 515e85511)\nbuilt with cc for x86_64"
OLD_BANNER = "version: 1 (c8e03ce)\nbuilt with cc for x86_64"


# --------------------------------------------------------------------------- helpers


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def version_printer(tmp_path: Path, banner: str = NEW_BANNER) -> Path:
    """A stand-in for llama-server that only prints a version banner to stderr, as it does."""
    lines = "".join(f"echo '{line}' >&2\n" for line in banner.splitlines())
    return write_script(tmp_path / "llama-server-version-standin", lines)


def sleep_copy(tmp_path: Path, name: str) -> Path:
    """A copy of the sleep binary under another name: a process whose executable we own."""
    sleep = shutil.which("sleep")
    assert sleep is not None
    copy = tmp_path / name
    shutil.copy(os.path.realpath(sleep), copy)
    copy.chmod(0o755)
    return copy


@contextmanager
def running(argv: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    # Popen returns only after exec, so the process already shows its final executable.
    proc = subprocess.Popen(argv, start_new_session=True)
    try:
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def by_name(items: list[PreflightItem]) -> dict[str, PreflightItem]:
    return {item.name: item for item in items}


@pytest.fixture
def inputs(tmp_path: Path) -> PreflightInputs:
    """Inputs for a run in which every item passes."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "main.gguf").write_bytes(b"main model weights")
    (models / "draft.gguf").write_bytes(b"draft model weights")
    launchers = tmp_path / "launchers"
    launchers.mkdir()
    serve = write_script(launchers / "serve.sh", "exec true\n")
    ladder = tmp_path / "ladder.toml"
    ladder.write_text('question = "does it help"\n')
    experiments = tmp_path / "experiments"
    experiments.mkdir()
    return PreflightInputs(
        run_dir=tmp_path / "runs" / "ladder" / "run-1",
        server_bin=version_printer(tmp_path),
        expected_build="515e85511",
        ports=(free_port(), free_port()),
        host="127.0.0.1",
        model_files=(models / "main.gguf", models / "draft.gguf"),
        ram_floor_gb=0.0,
        disk_floor_gb=0.0,
        must_be_inactive_processes=("mtp-not-running",),
        must_be_inactive_units=(),
        launchers={"serve": (serve, sha256_of(serve))},
        experiments_dir=experiments,
        ladder_file=ladder,
        prompt_set_digest="abc123",
        package_version="0.1.0",
    )


@pytest.fixture(autouse=True)
def idle_gpu(monkeypatch: pytest.MonkeyPatch) -> FakeNvml:
    """run_preflight sees one idle fake GPU, so results do not depend on this machine's GPU."""
    fake = FakeNvml([FakeGpu()])
    monkeypatch.setattr(preflight, "_load_nvml", lambda: fake)
    return fake


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "digests.json"


# --------------------------------------------------------------------------- server version


class TestVersionParsing:
    def test_new_form_gives_version_build_and_commit(self) -> None:
        got = parse_server_version(NEW_BANNER)
        assert got == ServerVersion(
            "version: 0.6.0-dev (build 11434, commit 515e85511)", "0.6.0-dev", "11434", "515e85511"
        )
        assert got.identity == "b11434-515e85511"

    def test_old_form_takes_the_number_as_build(self) -> None:
        got = parse_server_version(OLD_BANNER)
        assert got == ServerVersion("version: 1 (c8e03ce)", "1", "1", "c8e03ce")

    def test_banner_after_log_lines_is_found(self) -> None:
        text = "ggml_cuda_init: found 1 CUDA devices\n  Device 0: x\n" + OLD_BANNER
        got = parse_server_version(text)
        assert got is not None and got.commit == "c8e03ce"

    @pytest.mark.parametrize("text", ["", "usage: llama-server [options]", "version 1 c8e03ce"])
    def test_unrecognised_text_gives_none(self, text: str) -> None:
        assert parse_server_version(text) is None

    @given(
        version=st.from_regex(r"\A[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,3}(-dev)?\Z"),
        build=st.integers(1, 10**6),
        commit=st.from_regex(r"\A[0-9a-f]{7,40}\Z"),
    )
    def test_any_new_form_banner_round_trips(self, version: str, build: int, commit: str) -> None:
        got = parse_server_version(f"version: {version} (build {build}, commit {commit})\nbuilt")
        assert got == ServerVersion(
            f"version: {version} (build {build}, commit {commit})", version, str(build), commit
        )
        assert build_matches(got, commit)
        assert build_matches(got, f"b{build}-{commit}")
        assert not build_matches(got, f"b{build + 1}-{commit}")

    @pytest.mark.parametrize(
        ("expected", "matches"),
        [
            ("515e85511", True),
            ("b11434-515e85511", True),
            ("11434", True),
            ("b11434", True),
            ("515E855", True),  # short hash, any case
            ("515e85511" + "0" * 31, True),  # full hash of the printed short one
            ("1", False),  # a digit inside the build number is not the build
            ("515e8", False),  # too short to name a commit
            ("b11435-515e85511", False),
            ("b11434-c8e03ce", False),
            ("c8e03ce", False),
        ],
    )
    def test_expected_build_matches_whole_tokens(self, expected: str, matches: bool) -> None:
        got = parse_server_version(NEW_BANNER)
        assert got is not None
        assert build_matches(got, expected) is matches

    def test_old_form_matches_its_commit(self) -> None:
        got = parse_server_version(OLD_BANNER)
        assert got is not None
        assert build_matches(got, "c8e03ce")
        assert not build_matches(got, "515e85511")


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


# --------------------------------------------------------------------------- ports


class TestPorts:
    def test_free_ports_pass(self) -> None:
        item = check_ports("127.0.0.1", (free_port(), free_port()))
        assert (item.verdict, item.observed) == (PASS, "all free")

    def test_listening_socket_fails_naming_port_and_owner(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            sock.listen()
            port = sock.getsockname()[1]
            other = free_port()
            item = check_ports("127.0.0.1", (other, port))
        assert item.verdict == FAIL
        assert item.observed.startswith(f"{port}: ")
        assert str(other) not in item.observed
        assert f"pid {os.getpid()}" in item.observed
        assert str(port) in item.fix

    def test_bound_but_not_listening_socket_also_fails(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
            item = check_ports("127.0.0.1", (port,))
        assert item.verdict == FAIL
        assert str(port) in item.observed

    def test_port_is_free_again_once_released(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        assert check_ports("127.0.0.1", (port,)).verdict == PASS


# --------------------------------------------------------------------------- processes


class TestServerProcesses:
    def test_nothing_running_passes(self, tmp_path: Path) -> None:
        item = check_server_processes(sleep_copy(tmp_path, "llama-server-standin"))
        assert (item.verdict, item.observed) == (PASS, "none running")

    def test_process_of_the_exact_executable_fails(self, tmp_path: Path) -> None:
        server = sleep_copy(tmp_path, "llama-server-standin")
        with running([str(server), "30"]) as proc:
            item = check_server_processes(server)
        assert item.verdict == FAIL
        assert f"pid {proc.pid}" in item.observed
        assert f"kill {proc.pid}" in item.fix

    def test_symlinked_binary_matches_its_target(self, tmp_path: Path) -> None:
        server = sleep_copy(tmp_path, "llama-server-standin")
        link = tmp_path / "llama-server"
        link.symlink_to(server)
        with running([str(server), "30"]) as proc:
            item = check_server_processes(link)
        assert f"pid {proc.pid}" in item.observed

    def test_command_line_that_mentions_the_binary_does_not_match(self, tmp_path: Path) -> None:
        server = sleep_copy(tmp_path, "llama-server-standin")
        with running(["sh", "-c", f"sleep 30; : {server}"]) as proc:
            assert str(server) in " ".join(psutil.Process(proc.pid).cmdline())
            item = check_server_processes(server)
        assert (item.verdict, item.observed) == (PASS, "none running")

    def test_script_server_run_directly_matches(self, tmp_path: Path) -> None:
        script = write_script(tmp_path / "llama-server-script-standin", "sleep 30\n")
        with running([str(script)]) as proc:
            item = check_server_processes(script)
        assert item.verdict == FAIL
        assert f"pid {proc.pid}" in item.observed

    def test_shell_mentioning_a_script_server_does_not_match(self, tmp_path: Path) -> None:
        script = write_script(tmp_path / "llama-server-script-standin", "sleep 30\n")
        with running(["sh", "-c", f"sleep 30; : {script}"]):
            item = check_server_processes(script)
        assert item.verdict == PASS

    def test_external_launcher_skips(self) -> None:
        assert check_server_processes(None).verdict == SKIP


class TestInactiveProcesses:
    def test_listed_process_running_fails(self, tmp_path: Path) -> None:
        blocker = sleep_copy(tmp_path, "mtp-blocker")
        with running([str(blocker), "30"]) as proc:
            item = check_inactive_processes(("mtp-blocker", "mtp-other"))
        assert item.verdict == FAIL
        assert item.observed == f"running: mtp-blocker (pid {proc.pid})"
        assert "mtp-blocker" in item.fix

    def test_names_match_exactly_not_as_prefix_or_command_text(self, tmp_path: Path) -> None:
        blocker = sleep_copy(tmp_path, "mtp-blocker")
        with (
            running([str(blocker), "30"]),
            running(["sh", "-c", "sleep 30; : mtp-blocker2"]),
        ):
            item = check_inactive_processes(("mtp-block", "mtp-blocker2"))
        assert (item.verdict, item.observed) == (PASS, "none running")

    def test_none_listed_passes(self) -> None:
        assert check_inactive_processes(()).verdict == PASS


class TestInactiveUnits:
    @pytest.fixture
    def fake_systemctl(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        """A stand-in systemctl on PATH: `is-active -- UNIT` says active for busy.service."""
        bin_dir = tmp_path / "fakebin"
        bin_dir.mkdir()
        write_script(
            bin_dir / "systemctl",
            'echo "$@" >> "$0.calls"\n'
            'case "$3" in busy.service) echo active; exit 0;; esac\n'
            "echo inactive; exit 3\n",
        )
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        return bin_dir / "systemctl"

    def test_active_unit_fails(self, fake_systemctl: Path) -> None:
        item = check_inactive_units(("idle.service", "busy.service"))
        assert item.verdict == FAIL
        assert item.observed == "idle.service inactive; busy.service active"
        assert "busy.service" in item.fix and "idle.service" not in item.fix
        calls = Path(f"{fake_systemctl}.calls").read_text().splitlines()
        assert calls == ["is-active -- idle.service", "is-active -- busy.service"]

    def test_inactive_units_pass(self, fake_systemctl: Path) -> None:
        assert check_inactive_units(("idle.service",)).verdict == PASS

    def test_unanswerable_systemctl_skips_with_its_reason(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        bin_dir = tmp_path / "downbin"
        bin_dir.mkdir()
        write_script(bin_dir / "systemctl", "echo 'Failed to connect to bus' >&2; exit 1\n")
        monkeypatch.setenv("PATH", str(bin_dir))
        item = check_inactive_units(("idle.service",))
        assert item.verdict == SKIP
        assert "Failed to connect to bus" in item.observed

    def test_no_systemctl_skips(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("PATH", str(tmp_path))
        item = check_inactive_units(("idle.service",))
        assert (item.verdict, item.observed) == (SKIP, "skipped: systemctl not found")


# --------------------------------------------------------------------------- model files


class TestModelFiles:
    def test_observed_has_size_mtime_and_sha256(self, tmp_path: Path, cache: Path) -> None:
        model = tmp_path / "m.gguf"
        model.write_bytes(b"x" * 1234)
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
        model.write_bytes(b"before")
        (first,) = check_models((model,), cache=cache)
        model.write_bytes(b"after!")  # same size
        os.utime(model, ns=(0, model.stat().st_mtime_ns + 1_000_000))
        (second,) = check_models((model,), cache=cache)
        assert sha256_of(model) in second.observed
        assert sha256_of(model) not in first.observed

    def test_same_basename_twice_gets_distinct_names(self, tmp_path: Path, cache: Path) -> None:
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        paths = (tmp_path / "a" / "m.gguf", tmp_path / "b" / "m.gguf")
        for path in paths:
            path.write_bytes(b"w")
        names = [item.name for item in check_models(paths, cache=cache)]
        assert names == [f"model:{paths[0]}", f"model:{paths[1]}"]


class TestDigestCache:
    @pytest.fixture
    def hashes(self, monkeypatch: pytest.MonkeyPatch) -> list[str]:
        """Records every full read-and-hash of a file."""
        seen: list[str] = []
        real = preflight._sha256_file

        def counting(path: str) -> str:
            seen.append(path)
            return real(path)

        monkeypatch.setattr(preflight, "_sha256_file", counting)
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
        monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
        assert default_digest_cache() == Path("/somewhere/cache/pytest-mtpsweep/digests.json")
        monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
        assert default_digest_cache() == Path.home() / ".cache/pytest-mtpsweep/digests.json"
        monkeypatch.delenv("XDG_CACHE_HOME")
        assert default_digest_cache() == Path.home() / ".cache/pytest-mtpsweep/digests.json"


# --------------------------------------------------------------------------- other files


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


class TestFloors:
    def test_ram_under_floor_fails_and_over_passes(self) -> None:
        assert check_ram(0.0).verdict == PASS
        item = check_ram(10**9)
        assert item.verdict == FAIL
        assert "GB available" in item.observed and item.fix

    def test_no_floor_still_reports_the_value(self, tmp_path: Path) -> None:
        ram, disk = check_ram(None), check_disk(tmp_path / "new" / "run", None)
        assert (ram.verdict, ram.expected) == (PASS, "no floor")
        assert (disk.verdict, disk.expected) == (PASS, "no floor")
        assert "GB available" in ram.observed
        assert f"GB free at {tmp_path} " in disk.observed

    def test_disk_under_floor_fails(self, tmp_path: Path) -> None:
        assert check_disk(tmp_path / "run", 0.0).verdict == PASS
        assert check_disk(tmp_path / "run", 10**9).verdict == FAIL


# --------------------------------------------------------------------------- GPU


class TestGpu:
    def test_machine_without_driver_skips(self) -> None:
        import pynvml

        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError:
            pass
        else:
            pynvml.nvmlShutdown()
            pytest.skip("this machine has an NVIDIA driver")
        item = check_gpu(pynvml)
        assert (item.verdict, item.observed) == (SKIP, "skipped: no NVIDIA driver")

    def test_idle_gpu_passes_with_its_details(self) -> None:
        nvml = FakeNvml([FakeGpu(name=b"NVIDIA H200", used=935 * 2**20, total=2**37, util=2)])
        item = check_gpu(nvml)
        assert item.verdict == PASS
        assert item.observed == (
            "driver 550.54.15; GPU0 NVIDIA H200: 935/131072 MiB used, util 2%, "
            "compute processes: none"
        )
        assert nvml.shutdowns == 1

    def test_other_compute_process_fails(self) -> None:
        nvml = FakeNvml([FakeGpu(), FakeGpu(util=None, pids=[4242424])])
        item = check_gpu(nvml)
        assert item.verdict == FAIL
        assert "GPU1" in item.observed and "util n/a" in item.observed
        assert "pid 4242424" in item.observed and "pid 4242424" in item.fix
        assert nvml.shutdowns == 1

    def test_own_process_is_not_another(self) -> None:
        assert check_gpu(FakeNvml([FakeGpu(pids=[os.getpid()])])).verdict == PASS

    def test_query_error_fails_and_still_shuts_down(self) -> None:
        nvml = FakeNvml([FakeGpu()], lost=True)
        item = check_gpu(nvml)
        assert item.verdict == FAIL
        assert "GPU is lost" in item.observed
        assert nvml.shutdowns == 1 and not nvml.initialised

    def test_init_failure_skips(self) -> None:
        item = check_gpu(FakeNvml([], init_error=True))
        assert (item.verdict, item.observed) == (SKIP, "skipped: no NVIDIA driver")


# --------------------------------------------------------------------------- whole run


class TestRunPreflight:
    def test_everything_passes_in_table_order(self, inputs: PreflightInputs, cache: Path) -> None:
        items = run_preflight(inputs, digest_cache=cache)
        assert [item.name for item in items] == item_names(inputs)
        assert [item.name for item in items][7:9] == ["model:main.gguf", "model:draft.gguf"]
        assert {item.name: item.verdict for item in items if item.verdict != PASS} == {}
        assert failures(items) == []

    def test_failure_is_reported(self, inputs: PreflightInputs, cache: Path) -> None:
        inputs.run_dir.mkdir(parents=True)
        items = run_preflight(inputs, digest_cache=cache)
        assert [item.name for item in failures(items)] == ["run_dir"]

    def test_waive_turns_fail_into_waived(self, inputs: PreflightInputs, cache: Path) -> None:
        inputs.run_dir.mkdir(parents=True)
        items = run_preflight(inputs, waive=frozenset({"run_dir", "ram"}), digest_cache=cache)
        assert by_name(items)["run_dir"].verdict == WAIVED
        assert by_name(items)["ram"].verdict == PASS  # a waiver does not touch a pass
        assert failures(items) == []

    def test_unknown_waiver_is_refused(self, inputs: PreflightInputs, cache: Path) -> None:
        with pytest.raises(PreflightError, match="run_dri"):
            run_preflight(inputs, waive=frozenset({"run_dri"}), digest_cache=cache)


class TestAgainst:
    @pytest.fixture
    def earlier(self, inputs: PreflightInputs, cache: Path, tmp_path: Path) -> Path:
        run = tmp_path / "earlier-run"
        run.mkdir()
        write_preflight_json(run_preflight(inputs, digest_cache=cache), run / "preflight.json")
        return run

    def test_unchanged_rig_is_same_everywhere(
        self, inputs: PreflightInputs, cache: Path, earlier: Path
    ) -> None:
        items = run_preflight(inputs, against=earlier, digest_cache=cache)
        same = {item.name: item.same_as_against for item in items}
        assert same.pop("run_dir") is None
        assert set(same.values()) == {True}

    def test_touched_model_and_changed_launcher_are_not_same(
        self, inputs: PreflightInputs, cache: Path, earlier: Path
    ) -> None:
        main = inputs.model_files[0]
        os.utime(main, ns=(0, main.stat().st_mtime_ns + 1000))
        serve, _ = inputs.launchers["serve"]
        serve.write_text(serve.read_text() + "# edited\n")
        items = by_name(run_preflight(inputs, against=earlier, digest_cache=cache))
        assert items["model:main.gguf"].same_as_against is False
        assert items["model:draft.gguf"].same_as_against is True
        assert items["launcher:serve"].same_as_against is False
        assert items["ladder_file"].same_as_against is True

    def test_item_missing_from_earlier_run_is_not_same(
        self, inputs: PreflightInputs, cache: Path, earlier: Path
    ) -> None:
        extra = inputs.model_files[0].with_name("extra.gguf")
        extra.write_bytes(b"new")
        more = replace(inputs, model_files=(*inputs.model_files, extra))
        items = by_name(run_preflight(more, against=earlier, digest_cache=cache))
        assert items["model:extra.gguf"].same_as_against is False

    def test_volatile_items_compare_only_their_stable_part(self) -> None:
        old = PreflightItem("ram", ">= 1 GB", "160.0 GB available of 270.0 GB", PASS,
                            stable="270.0 GB total; floor met")  # fmt: skip
        now = replace(old, observed="155.2 GB available of 270.0 GB")
        below = replace(now, verdict=FAIL, stable="270.0 GB total; below floor")
        assert compare_items([now], [old])[0].same_as_against is True
        assert compare_items([below], [old])[0].same_as_against is False

    def test_ram_and_disk_ignore_what_is_free_but_not_the_floor(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def host(free_gb: float) -> list[PreflightItem]:
            free, total = int(free_gb * 1e9), 256 * 10**9
            monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(
                available=free, total=total))  # fmt: skip
            monkeypatch.setattr(psutil, "disk_usage", lambda _: SimpleNamespace(
                free=free, total=total))  # fmt: skip
            return [check_ram(100.0), check_disk(tmp_path / "run", 100.0)]

        earlier = host(160.0)
        assert [i.same_as_against for i in compare_items(host(155.0), earlier)] == [True, True]
        assert [i.same_as_against for i in compare_items(host(90.0), earlier)] == [False, False]

    def test_gpu_ignores_memory_in_use_but_not_other_processes(self) -> None:
        earlier = [check_gpu(FakeNvml([FakeGpu(used=900 * 2**20, util=2)]))]
        busier = check_gpu(FakeNvml([FakeGpu(used=1200 * 2**20, util=40)]))
        taken = check_gpu(FakeNvml([FakeGpu(pids=[4242424])]))
        assert busier.observed != earlier[0].observed
        assert compare_items([busier], earlier)[0].same_as_against is True
        assert compare_items([taken], earlier)[0].same_as_against is False

    def test_run_without_preflight_json_is_refused(
        self, inputs: PreflightInputs, tmp_path: Path
    ) -> None:
        with pytest.raises(PreflightError, match=r"preflight\.json"):
            run_preflight(inputs, against=tmp_path / "nowhere")


# --------------------------------------------------------------------------- output


class TestOutput:
    ITEMS = (
        PreflightItem("gpu", "no other compute processes", "skipped: no NVIDIA driver", SKIP),
        PreflightItem("run_dir", "does not exist yet", "exists: /r", FAIL, fix="Move /r away."),
    )

    def test_table_columns_line_up(self) -> None:
        lines = render_table(list(self.ITEMS)).splitlines()
        assert len(lines) == 4
        start = lines[0].index("observed")
        assert lines[2][start:].startswith("skipped: no NVIDIA driver")
        assert lines[3][start:].startswith("exists: /r")
        assert lines[3].split()[-1] == FAIL
        assert "same as" not in lines[0]

    def test_table_has_same_as_column_after_comparison(self) -> None:
        items = [replace(self.ITEMS[0], same_as_against=True), self.ITEMS[1]]
        lines = render_table(items, against_label="run-0810").splitlines()
        assert lines[0].endswith("same as run-0810")
        assert lines[2].endswith("yes") and lines[3].endswith("-")

    def test_fixes_name_the_waiver(self) -> None:
        assert render_fixes(list(self.ITEMS)) == (
            "run_dir: Move /r away. (Or waive it: --waive run_dir.)"
        )

    def test_json_round_trips(self, tmp_path: Path) -> None:
        items = [replace(self.ITEMS[0], same_as_against=False, stable="s"), self.ITEMS[1]]
        path = tmp_path / "preflight.json"
        write_preflight_json(items, path)
        raw = json.loads(path.read_text())
        assert {"name", "expected", "observed", "verdict", "fix", "same_as_against"} <= set(raw[0])
        assert load_preflight_json(path) == items

    def test_json_is_never_overwritten(self, tmp_path: Path) -> None:
        path = tmp_path / "preflight.json"
        write_preflight_json(list(self.ITEMS), path)
        with pytest.raises(PreflightError, match="never overwritten"):
            write_preflight_json(list(self.ITEMS), path)

    @pytest.mark.parametrize("text", ["{}", "[{}]", '[{"name": "x", "expected": "", '
                                      '"observed": "", "verdict": "maybe"}]', "nope"])  # fmt: skip
    def test_malformed_json_is_refused(self, tmp_path: Path, text: str) -> None:
        path = tmp_path / "preflight.json"
        path.write_text(text)
        with pytest.raises(PreflightError, match=re.escape(str(path))):
            load_preflight_json(path)
