"""Preflight items about the machine, exercised for real where the machine allows."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import psutil
import pytest

from pytest_mtpsweep.preflight.items import (
    FAIL,
    PASS,
    SKIP,
)
from pytest_mtpsweep.preflight.machine import (
    check_disk,
    check_gpu,
    check_host_idle,
    check_inactive_processes,
    check_inactive_units,
    check_ports,
    check_ram,
    check_server_processes,
    idle_window_s,
)
from tests.fake_pynvml import FakeGpu, FakeNvml
from tests.preflight.helpers import free_port, running, sleep_copy, write_script

NEW_BANNER = "version: 0.6.0-dev (build 11434, commit 515e85511)\nbuilt with cc for x86_64"
OLD_BANNER = "version: 1 (c8e03ce)\nbuilt with cc for x86_64"


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

    def test_with_no_fixed_port_the_host_must_still_take_a_listener(self) -> None:
        assert check_ports("127.0.0.1", ()).verdict == PASS
        item = check_ports("no-such-host.invalid", ())
        assert item.verdict == FAIL and "cannot resolve no-such-host.invalid" in item.observed
        assert "server.host" in item.fix

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
            # right after exec the kernel may not show the argv yet: wait until it does
            deadline = time.monotonic() + 10
            while not psutil.Process(proc.pid).cmdline() and time.monotonic() < deadline:
                time.sleep(0.01)
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

    def test_external_launcher_checks_what_earlier_runs_left(self, tmp_path: Path) -> None:
        item = check_server_processes(None)
        assert (item.verdict, item.observed) == (PASS, "none left running")
        run = tmp_path / "runs" / "l" / "run-1"
        item = check_server_processes(None, [(run, "pid 42 (01_a_c1, launched, port 8080)")])
        assert item.verdict == FAIL
        assert item.observed == "left running: pid 42 (01_a_c1, launched, port 8080) of run-1"
        assert item.fix.startswith(f"mtpsweep cleanup {run} ")


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

    def test_disk_without_room_for_the_run_fails(self, tmp_path: Path) -> None:
        free = psutil.disk_usage(str(tmp_path)).free
        fits = check_disk(tmp_path / "run", None, need_bytes=1_000_000)
        assert fits.verdict == PASS and fits.expected == "no floor; room for the run (~1.0 MB)"
        item = check_disk(tmp_path / "run", 0.0, need_bytes=free * 2)
        assert item.verdict == FAIL
        assert item.expected.startswith(">= 0 GB; room for the run (~")
        assert "--run-dir" in item.fix and str(tmp_path) in item.fix


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


class TestHostIdle:
    def test_recorded_without_a_floor(self) -> None:
        item = check_host_idle(None, interval_s=0.2)
        assert item.verdict == PASS and "% busy over 0.2 s; load average" in item.observed

    def test_a_floor_below_what_is_seen_fails_with_the_fix(self) -> None:
        item = check_host_idle(-1.0, interval_s=0.2)
        assert item.verdict == FAIL and "host_idle_pct" in item.fix
        assert check_host_idle(100.0, interval_s=0.2).verdict == PASS

    def test_the_window_comes_from_the_environment_bounded(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("MTPSWEEP_HOST_IDLE_S", raising=False)
        assert idle_window_s() == 1.0
        monkeypatch.setenv("MTPSWEEP_HOST_IDLE_S", "0.3")
        assert "% busy over 0.3 s" in check_host_idle(None).observed
        for bad in ("nan", "0", "-1", "61", "1e308", "fast"):
            monkeypatch.setenv("MTPSWEEP_HOST_IDLE_S", bad)
            item = check_host_idle(None)
            assert item.verdict == FAIL and "from 0.05 to 60" in item.observed, bad
            assert "MTPSWEEP_HOST_IDLE_S" in item.fix
