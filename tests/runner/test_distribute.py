"""A ladder over pytest-xdist workers (`-n 2`: popen gateways are real separate processes).

The mechanics (blocks on workers, the run directory shared, a worker killed mid-session) run
the STUB server `tests/stub_llama_server.py`, which makes a session cheap enough to run eight
of them twice; the real llama-server runs the same with the CPU model in
`test_cpu_demo_on_two_workers` (marked `server`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.ladder.runplan import run_plan
from pytest_mtpsweep.runner.distribute import case_id
from tests.protocol.test_session import all_records, run_stub, stub_project, stubs_running
from tests.sandbox import MACHINERY_MODEL, copy_experiments, only_run, prompt_dir, servers_of

# A conftest for the sandbox: the worker running session 06 (cycle 3) kills itself with
# SIGKILL in the middle of it, once (a file marks that it happened).
KILLER = """
import os, signal
from pathlib import Path

def pytest_runtest_call(item):
    if "c3-a" in item.nodeid and "prose_02" in item.nodeid:
        mark = Path(__file__).parent / "killed"
        if not mark.exists():
            mark.write_text(os.environ.get("PYTEST_XDIST_WORKER", ""))
            os.kill(os.getpid(), signal.SIGKILL)
"""


def _sessions(run: Path) -> dict[str, dict[str, object]]:
    return {p.stem: json.loads(p.read_text()) for p in (run / "sessions").glob("*.json")}


def _stubs_of(root: Path) -> list[object]:
    """STUB servers of this sandbox still running (other tests may run stubs meanwhile)."""
    return [p for p in stubs_running() if any(str(root) in c for c in p.cmdline())]


def _key(r: dict[str, object]) -> tuple[object, ...]:
    return (r["session"], r["prompt_id"], r["repeat"])


def test_blocks_of_a_plan() -> None:
    blocks = [s.block for s in run_plan(["a", "b", "c"], 5)]
    assert blocks == [1] * 6 + [2] * 6 + [3] * 3  # pairs ABC CBA, then the odd cycle alone


def test_case_id_without_the_group_suffix() -> None:
    assert case_id("e/test_decode.py::test_rate[c1-a-p_01-r1]@mtpsweep-block-1") == "c1-a-p_01-r1"
    assert case_id("e/test_decode.py::test_rate[c1-a-p_01-r1]") == "c1-a-p_01-r1"


class TestTwoWorkers:
    def test_blocks_stay_on_one_worker_and_match_a_serial_run(
        self, pytester: pytest.Pytester
    ) -> None:
        few = stub_project(pytester, [])
        serial = run_stub(pytester, few, "--cycles", "4", "-p", "no:randomly")
        serial.assert_outcomes(passed=16)
        serial_run = only_run(pytester.path)
        serial_keys = sorted(_key(r) for r in all_records(serial_run))
        os.rename(pytester.path / "runs", pytester.path / "runs-serial")

        result = run_stub(pytester, few, "--cycles", "4", "-n", "2")
        result.assert_outcomes(passed=16)
        run = only_run(pytester.path)
        records = all_records(run)
        assert sorted(_key(r) for r in records) == serial_keys  # the same cases, no more
        sessions = _sessions(run)
        assert len(sessions) == 8
        # each block (a cycle pair) ran on one worker; the two blocks on different workers
        worker_of_block: dict[int, set[object]] = {}
        for s in sessions.values():
            worker_of_block.setdefault((int(str(s["cycle"])) - 1) // 2, set()).add(s["worker"])
        assert all(len(w) == 1 for w in worker_of_block.values()), worker_of_block
        assert {w for ws in worker_of_block.values() for w in ws} == {"gw0", "gw1"}
        # every record names its worker and device, as its session file does
        for r in records:
            assert r["worker"] == sessions[str(r["session"])]["worker"]
            assert r["device"] == "" == sessions[str(r["session"])]["device"]
        # one run id, one plan, one analysis (on the controller)
        assert {r["run_id"] for r in records} == {json.loads((run / "plan.json").read_text())[
            "run_id"
        ]}  # fmt: skip
        headers = [ln for ln in result.stdout.lines if re.fullmatch(r"=+ mtpsweep analysis =+", ln)]
        assert len(headers) == 1
        assert (run / "analysis" / "report.md").exists()
        # within a worker the sessions of a block ran in plan order
        for block in (0, 1):
            mine = sorted(
                (s for s in sessions.values() if (int(str(s["cycle"])) - 1) // 2 == block),
                key=lambda s: str(s["started_at"]),
            )
            assert [s["ordinal"] for s in mine] == sorted(int(str(s["ordinal"])) for s in mine)
        assert not _stubs_of(pytester.path)

    def test_a_killed_worker_quarantines_its_session_and_the_run_goes_on(
        self, pytester: pytest.Pytester
    ) -> None:
        few = stub_project(pytester, [])
        (pytester.path / "conftest.py").write_text(KILLER)
        result = run_stub(pytester, few, "--cycles", "4", "-n", "2", "--no-calibration")
        assert (pytester.path / "killed").exists()
        out = result.stdout.str()
        assert "crashed" in out or "worker" in out
        run = only_run(pytester.path)
        sessions = _sessions(run)
        victim = next(s.name for s in run_plan(["a", "b"], 4) if s.label == "a:c3")
        assert victim not in sessions
        reason = (run / "quarantine" / victim / "reason.txt").read_text()
        assert "worker died mid-session" in reason
        # every other session ran to its end, on one of the workers
        assert len(sessions) == 7 and all(s["quarantined"] is None for s in sessions.values())
        killed = (pytester.path / "killed").read_text()
        quarantined = (
            [json.loads(ln) for ln in (run / "quarantine" / victim / "records.jsonl").open()]
            if (run / "quarantine" / victim / "records.jsonl").exists()
            else []
        )
        assert all(r["worker"] == killed for r in quarantined)
        # the rest of the dead worker's block ran on another worker (xdist's replacement)
        after = [s for s in sessions.values() if int(str(s["ordinal"])) > 5]
        assert after and all(s["worker"] != killed for s in after)
        # the crashed item: failed by xdist's crash report, then handed on and skipped
        result.assert_outcomes(passed=15, failed=1, skipped=1)
        assert not _stubs_of(pytester.path)  # the dead worker's server died with it (PDEATHSIG)

        # --resume of the distributed run runs the quarantined session, and only it (other
        # tests' STUB servers may be running meanwhile: none of this sandbox's is, above)
        again = run_stub(
            pytester, few, "--cycles", "4", "-n", "2", "--no-calibration", "--resume", str(run),
            "--waive", "server_processes",
        )  # fmt: skip
        again.assert_outcomes(passed=2, skipped=14)
        sessions = _sessions(run)
        assert len(sessions) == 8 and sessions[victim]["quarantined"] is None
        assert len([r for r in all_records(run / "records") if r["session"] == victim]) == 2
        assert not _stubs_of(pytester.path)


class TestRefusals:
    @pytest.mark.parametrize(
        ("args", "said"),
        [
            (["--dist", "loadscope"], "use --dist loadgroup"),
            (["--time-budget", "1h"], "drop them with -n"),
        ],
    )
    def test_refused(self, pytester: pytest.Pytester, args: list[str], said: str) -> None:
        few = stub_project(pytester, [])
        result = run_stub(pytester, few, "-n", "2", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert said in result.stderr.str() + result.stdout.str()


# The CPU demo cut small: two treatments, one thread per server, a free port per session.
CPU_SLICE = f"""
question = "Does ngram-simple decode faster than none, with the ladder over two workers?"
baseline = "none"
cycles = 4
max_tokens = 24
placement = "cpu"
[model]
path = "{MACHINERY_MODEL}"
id = "m"
[server]
args = ["--parallel", "1", "--threads", "1"]
port = 0
ctx_size = 2048
ready_timeout_s = 120
[[treatments]]
key = "none"
[[treatments]]
key = "ngram-simple"
args = ["--spec-type", "ngram-simple"]
"""


@pytest.mark.server
def test_cpu_slice_on_two_workers(
    pytester: pytest.Pytester, server_bin: Path, machinery_model: Path
) -> None:
    """The real llama-server and the real model, -n 2: two workers, one cycle pair each."""
    copy_experiments(pytester, {"slice": CPU_SLICE})
    few = prompt_dir(pytester, ["prose_01", "structured_01"])
    result = pytester.runpytest(
        "experiments/", "--ladder=slice", f"--prompts-dir={few}", "--boot=1000", "-n", "2"
    )
    result.assert_outcomes(passed=16)
    run = only_run(pytester.path)
    sessions = _sessions(run)
    assert len(sessions) == 8 and all(s["quarantined"] is None for s in sessions.values())
    workers = {(int(str(s["cycle"])) - 1) // 2: s["worker"] for s in sessions.values()}
    assert sorted(str(w) for w in workers.values()) == ["gw0", "gw1"]
    for r in all_records(run):
        assert r["worker"] == workers[(int(str(r["cycle"])) - 1) // 2] and r["valid"]
    report = (run / "analysis" / "report.md").read_text()
    assert "Per device" in report and "gw0" in report and "gw1" in report
    # no devices: each worker's servers ran on their own CPUs, as the kernel says (/proc)
    from pytest_mtpsweep.ladder.fields import parse_cpus

    held: dict[str, set[int]] = {}
    for s in sessions.values():
        held.setdefault(str(s["worker"]), set()).update(parse_cpus(str(s["cpus_allowed"])))
    assert held["gw0"] and held["gw1"] and not held["gw0"] & held["gw1"], held
    assert not servers_of(server_bin)


class _Node:
    """What configure_node reads of xdist's WorkerController."""

    def __init__(self, gid: str) -> None:
        self.gateway = type("Gateway", (), {"id": gid})()
        self.workerinput: dict[str, object] = {}


def test_a_replacement_worker_takes_the_dead_ones_place_and_device(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from pytest_mtpsweep.runner.distribute import Controller, configure_node, node_down

    ladder = SimpleNamespace(devices=("0", "1"))
    resolved = SimpleNamespace(run_path=tmp_path / "run")
    run = SimpleNamespace(ladder=ladder, resolved=resolved, resolve=lambda: resolved)
    state = Controller(workers=2)
    nodes = [_Node("gw0"), _Node("gw1")]
    for n in nodes:
        configure_node(state, run, n)  # type: ignore[arg-type]
    assert [n.workerinput["mtpsweep"]["index"] for n in nodes] == [0, 1]  # type: ignore[index]
    node_down(state, nodes[0])
    spare = _Node("gw2")
    configure_node(state, run, spare)  # type: ignore[arg-type]
    assert spare.workerinput["mtpsweep"] == {  # the place, device and run of gw0
        "run_path": str(tmp_path / "run"),
        "index": 0,
        "device": "0",
        "cpus": [],  # devices pinned: the host's CPUs are not split
        "controller_pid": os.getpid(),  # a local worker: its siblings are this tree
    }


@given(st.integers(1, 64), st.integers(1, 8))
def test_cpu_shares_cover_the_host_once(ncpus: int, workers: int) -> None:
    from pytest_mtpsweep.runner.distribute import cpu_share

    if workers > ncpus:
        return  # refused before any worker starts (test_more_workers_than_cpus_is_refused)
    cpus = list(range(100, 100 + ncpus))
    shares = [cpu_share(cpus, workers, i) for i in range(workers)]
    assert sorted(c for s in shares for c in s) == cpus and all(shares)
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_more_workers_than_cpus_is_refused(pytester: pytest.Pytester) -> None:
    few = stub_project(pytester, [])
    n = len(os.sched_getaffinity(0)) + 1
    result = run_stub(pytester, few, "-n", str(n))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{n} workers cannot split" in result.stderr.str() + result.stdout.str()


def test_a_workers_servers_get_threads_to_match_its_share() -> None:
    from types import SimpleNamespace

    from pytest_mtpsweep.state.context import RunContext

    lad = SimpleNamespace(server_args=("--parallel", "1"), cpus=None,
                          treatment=lambda key: SimpleNamespace(args=()))  # fmt: skip
    ctx = SimpleNamespace(ladder=lad, worker_cpus=frozenset({2, 3}))
    slot = SimpleNamespace(treatment="none")
    assert RunContext.thread_args(ctx, slot) == ("--threads", "2", "--threads-batch", "2")  # type: ignore[arg-type]
    lad.server_args = ("--threads", "1")
    assert RunContext.thread_args(ctx, slot) == ()  # type: ignore[arg-type]
    ctx.worker_cpus = frozenset()
    assert RunContext.thread_args(ctx, slot) == ()  # type: ignore[arg-type]


@pytest.mark.timeout(30)  # the old read waited on the FIFO for ever: a hang fails the test
def test_a_stop_marker_that_is_a_fifo_stops_a_worker_never_hangs_it(tmp_path: Path) -> None:
    # issue 50: STOPPED was read unbounded on every worker before each session
    import os
    from types import SimpleNamespace

    from pytest_mtpsweep.base.errors import StopRun
    from pytest_mtpsweep.runner.distribute import before_session

    os.mkfifo(tmp_path / "STOPPED")
    run = SimpleNamespace(run_dir=SimpleNamespace(path=tmp_path))
    with pytest.raises(StopRun, match="STOPPED marker, which is no regular file"):
        before_session(run, SimpleNamespace(name="01_a_c1"))  # type: ignore[arg-type]
