"""A busy host said before it costs a session, end to end with the STUB server (issue 48).

Stand-ins, since a busy host cannot be made reliably on a CI host that is itself busy:
- `busyhost.measure` (what preflight and the re-run's check read) is replaced by a list of
  `HostLoad` readings, a busy one naming a made-up hog (pid 4242, hog.py);
- the session witness at close (`rig.host.noise`) reads a quiet CPU, as on a host where only
  the run runs, so the real load of the CI host cannot spoil a session here;
- the witness the in-session watch reads (`busywatch.host`) reports other processes at 66.3 %;
- the slow decode is the stub's `slow-from=MS@N` fault on b's first server.
tests/rig/test_busyhost.py reads a real spinning child instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_mtpsweep.base.schema import HostNoise
from pytest_mtpsweep.protocol import busywatch
from pytest_mtpsweep.rig import busyhost
from pytest_mtpsweep.rig import hostnoise as host
from tests.protocol.test_session import run_stub, staged_stub, stub_project, stubs_running
from tests.sandbox import only_run, read_records

# The host rule's defaults for the CPU (what a new user gets); the rest out of reach.
RULE = """
[host_rule]
cpu_noise_pct = 10
cpu_stall_pct = 50
memory_stall_pct = 100
major_faults = 1000000000
calibration_drift_pct = 100
"""
BUSY = busyhost.HostLoad(2.0, 66.3, 12.0, "PSI", (busyhost.Hog(4242, "hog.py", 99.0),))
QUIET = busyhost.HostLoad(2.0, 0.4, 0.0, "PSI", ())
SLOW = "--fault slow-from=40@5"  # warm-up, then 3 fast measurements, then 40 ms a token
ARGS = ("--no-calibration",)


def project(pytester: pytest.Pytester, prompts: int = 2) -> Path:
    few = stub_project(pytester, [], prompts=prompts)
    ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
    ladder.write_text(ladder.read_text() + RULE)
    return few


def host_reads(monkeypatch: pytest.MonkeyPatch, *loads: busyhost.HostLoad) -> list[str]:
    """The rule on; busyhost.measure returns `loads` in turn (the last one again and again),
    and the session witness at close reads a quiet CPU. Returns the windows asked for."""
    asked: list[str] = []
    queue = list(loads)

    def measure(*_: object, **__: object) -> busyhost.HostLoad:
        asked.append("read")
        return queue.pop(0) if len(queue) > 1 else queue[0]

    real: Callable[..., HostNoise] = host.noise

    def quiet_noise(start: host.CpuSample, end: host.CpuSample) -> HostNoise:
        out = real(start, end)
        out["other_cpu_pct"], out["cpu_stall_pct"] = 0.0, 0.0
        return out

    monkeypatch.setenv("MTPSWEEP_HOST_RULE", "on")
    monkeypatch.setattr(busyhost, "measure", measure)
    monkeypatch.setattr(host, "noise", quiet_noise)
    return asked


def busy_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the in-session watch reads: other processes at 66.3 % of the CPU."""
    real = host.noise

    def noise(start: host.CpuSample, end: host.CpuSample) -> HostNoise:
        out = real(start, end)
        out["other_cpu_pct"] = 66.3
        return out

    monkeypatch.setattr(busywatch, "host", SimpleNamespace(sample=host.sample, noise=noise))


def test_a_busy_host_is_refused_before_the_first_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    host_reads(monkeypatch, BUSY)
    few = project(pytester)
    result = run_stub(pytester, few, *ARGS)
    out = result.stdout.str()
    assert result.ret == 2, out[-3000:]
    said = (
        "host_quiet: The host is busy before the run: other processes used 66.3% of the CPU "
        "(over cpu_noise_pct 10) over 2.0 s; top processes: pid 4242 hog.py (99% of a core); "
        "stop them, or pass --wait-for-quiet=SECONDS to wait for a quiet host, or raise "
        "[host_rule] cpu_noise_pct and cpu_stall_pct in the ladder. (Or waive it: --waive "
        "host_quiet.)"
    )
    assert said in out, out[-3000:]
    assert not list(pytester.path.glob("runs/*/*/sessions/*.json"))  # no session started
    assert stubs_running() == []


def test_with_wait_for_quiet_the_run_waits_then_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = host_reads(monkeypatch, BUSY, BUSY, QUIET)
    few = project(pytester)
    result = run_stub(pytester, few, *ARGS, "--wait-for-quiet=600", "-k", "c1")
    out = result.stdout.str()
    result.assert_outcomes(passed=4)
    assert out.count("mtpsweep preflight: waiting for a quiet host (") == 2, out[-3000:]
    assert "of 600 s): other processes used 66.3% of the CPU" in out
    assert len(asked) == 3
    table = json.loads((only_run(pytester.path) / "preflight.json").read_text())
    item = next(i for i in table if i["name"] == "host_quiet")
    assert item["verdict"] == "pass" and "for quiet" in item["observed"]


def test_a_session_gone_slow_on_a_busy_host_stops_early_and_its_re_run_stops_the_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The host turns busy in 02_b_c1: it stops after 6 of its 8 measurements (3 to set the
    reference, 3 slow), is set aside; its re-run meets the host busy and the run stops, exit 2,
    in one sentence. The records stay; --resume on a quiet host finishes the run."""
    asked = host_reads(monkeypatch, QUIET, BUSY)  # preflight, then before the re-run
    busy_watch(monkeypatch)
    few = project(pytester, prompts=8)
    wrapper = staged_stub(tmp_path, SLOW)
    result = run_stub(pytester, few, *ARGS, server_bin=wrapper)
    out = result.stdout.str()
    assert result.ret == 2, out[-3000:]
    assert len(asked) == 2
    assert (
        "** HOST-BUSY=02_b_c1: the host is busy before the re-run: other processes used 66.3% "
        "of the CPU (over cpu_noise_pct 10) over 2.0 s; top processes: pid 4242 hog.py"
    ) in out
    assert "continue with --resume once the host is quiet" in out
    run = only_run(pytester.path)
    assert not (run / "STOPPED").exists()  # --resume takes it
    held = run / "quarantine" / "02_b_c1"
    reason = (held / "reason.txt").read_text()
    assert reason.startswith("host spoiled: other processes used 66.3% of the CPU"), reason
    assert "(stopped after 6 of 8 measurements: the last 3 rates" in reason
    first = json.loads((held / "session.json").read_text())
    assert first["host_stopped_early"] == reason.strip()
    records, bad = read_records(held / "records.jsonl")
    assert bad == 0 and len(records) == 8  # 6 measured, 2 recorded as not measured
    assert sum(bool(r["valid"]) for r in records) == 6
    kept, _ = read_records(run / "records" / "01_a_c1.jsonl")
    assert len(kept) == 8 and all(r["valid"] for r in kept)  # what was measured is kept
    assert stubs_running() == []

    monkeypatch.setattr(busywatch, "host", host)
    host_reads(monkeypatch, QUIET)
    again = run_stub(pytester, few, *ARGS, f"--resume={run}", server_bin=wrapper)
    assert again.ret == 0, again.stdout.str()[-3000:]
    assert only_run(pytester.path) == run
    done = sorted(p.stem for p in (run / "records").glob("*.jsonl"))
    assert done == ["01_a_c1", "02_b_c1", "03_b_c2", "04_a_c2"], done
    fresh, _ = read_records(run / "records" / "02_b_c1.jsonl")
    assert len(fresh) == 8 and all(r["valid"] for r in fresh)
    assert (held / "reason.txt").is_file()  # the spoiled attempt is still there
    assert stubs_running() == []


def test_a_re_run_that_goes_slow_on_the_busy_host_again_stops_the_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    host_reads(monkeypatch, QUIET)  # quiet at the re-run's start; busy once it measures
    busy_watch(monkeypatch)
    few = project(pytester, prompts=8)
    wrapper = staged_stub(tmp_path, SLOW, SLOW)
    result = run_stub(pytester, few, *ARGS, server_bin=wrapper)
    out = result.stdout.str()
    assert result.ret == 2, out[-3000:]
    assert "** HOST-BUSY=02_b_c1: host spoiled: other processes used 66.3% of the CPU" in out
    run = only_run(pytester.path)
    held = sorted(p.name for p in (run / "quarantine").iterdir())
    assert len(held) == 2 and held[0] == "02_b_c1", held  # both attempts kept, set aside
    assert not (run / "sessions" / "02_b_c1.json").exists()  # neither counts as measured
    assert stubs_running() == []


def test_a_slow_setting_on_a_quiet_host_runs_to_its_end(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The rate only asks the host rule: slow with quiet witnesses is the setting, not the
    host, and the session measures everything."""
    host_reads(monkeypatch, QUIET)
    few = project(pytester, prompts=8)
    wrapper = staged_stub(tmp_path, SLOW)
    result = run_stub(pytester, few, *ARGS, "-k", "c1", server_bin=wrapper)
    result.assert_outcomes(passed=16)
    run = only_run(pytester.path)
    info = json.loads((run / "sessions" / "02_b_c1.json").read_text())
    assert "host_stopped_early" not in info and info["quarantined"] is None
    assert info["measured"] == info["valid"] == 8
