"""A server binary that cannot run here: one sentence, exit 2, no run of identical crashes.

STUB wrappers (tests/crashing.py) die by SIGILL or SIGKILL while loading, as a build for CPU
features this machine lacks does (a real one cannot be made to do it on a CPU that runs it).
"""

from __future__ import annotations

import json

import pytest

from tests.crashing import crashing
from tests.protocol.test_session import run_stub, stub_project
from tests.sandbox import only_run

ARGS = ("--no-calibration", "--max-tokens=8")


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("sigill", "was killed by SIGILL (illegal instruction: the binary uses a CPU instruction"),
        ("sigkill", "was killed by SIGKILL (often the kernel's out-of-memory killer"),
    ],
)
def test_preflight_proves_a_named_server_before_any_session(
    pytester: pytest.Pytester, how: str, said: str
) -> None:
    few = stub_project(pytester, [])
    binary = crashing(pytester.path, how)
    result = run_stub(pytester, few, *ARGS, server_bin=binary)
    out = result.stdout.str()
    assert result.ret == 2, out[-3000:]
    assert said in out and "preflight[server_runs]" in out
    assert out.count(said) <= 3, out  # the table, the fixes list and the failed item: no more
    assert "error" not in out.splitlines()[-1] or "192" not in out
    assert not list(pytester.path.glob("runs/*/*/records/*.jsonl"))  # no session ever started
    assert not list(pytester.path.glob("runs/*/*/sessions/*.json"))


def test_a_crash_at_load_twice_stops_the_run_and_resume_finishes_it_once_fixed(
    pytester: pytest.Pytester,
) -> None:
    few = stub_project(pytester, [])
    fixed = pytester.path / "fixed"
    # b's servers die by SIGILL at load; preflight's smoke test (no " b " in its argv) passes,
    # as it would on a binary whose other code paths run (or with --waive=server_runs).
    binary = crashing(pytester.path, "sigill", only=" b ", fixed=fixed)
    result = run_stub(pytester, few, *ARGS, server_bin=binary)
    out = result.stdout.str()
    assert result.ret == 2, out[-3000:]
    assert "SERVER-CRASHED-AT-LOAD=02_b_c1: the server was killed by SIGILL" in out
    assert "twice from a fresh start" in out and "continue with --resume" in out
    run = only_run(pytester.path)
    assert not (run / "STOPPED").exists()  # so --resume takes the run once it is fixed
    logs = sorted(p.name for p in (run / "servers").glob("*.log"))
    assert logs == ["01_a_c1.log", "02_b_c1.log"], logs  # nothing after the crashing session
    b_log = (run / "servers" / "02_b_c1.log").read_text()
    assert b_log.count("llama threadpool init") == 2  # the first start and its one re-run
    kept = [
        json.loads(line) for line in (run / "records" / "01_a_c1.jsonl").read_text().splitlines()
    ]
    assert kept and all(r["valid"] for r in kept)  # what was measured is kept

    fixed.touch()
    again = run_stub(pytester, few, *ARGS, f"--resume={run}", server_bin=binary)
    assert again.ret == 0, again.stdout.str()[-3000:]
    assert only_run(pytester.path) == run
    done = sorted(p.stem for p in (run / "records").glob("*.jsonl"))
    assert done == ["01_a_c1", "02_b_c1", "03_b_c2", "04_a_c2"], done
