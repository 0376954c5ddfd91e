"""Through pytest: an attached server that never ends a reply cannot hang a run at a session's
warm-up, a measurement or its close; each such request fails with the bound that cut it in its
record or session file. The attached server is the STUB llama-server (tests/stub_llama_server.py,
a stand-in started by hand) with its hostile modes; pytest-timeout is the outer guard."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_mtpsweep.rig.net import free_port
from tests.protocol.test_session import STUB, run_stub, stub_project
from tests.sandbox import only_run, read_records, started_by_hand

pytestmark = pytest.mark.timeout(240)


@contextlib.contextmanager
def attached_stub(tmp_path: Path, *faults: str) -> Iterator[str]:
    """The stub as treatment b's attached server (alias and context as the stub ladder's), run
    from a copy: preflight would take the launched treatment's binary running as a leftover."""
    copy = tmp_path / "attached_stub.py"
    shutil.copy(STUB, copy)
    port = free_port("127.0.0.1")
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, str(copy), "--host", "127.0.0.1", "--port", str(port),
            "--alias", "stub-b", "-m", "attached.gguf", "--ctx-size", "4096",
            "--stub-token-ms", "1", *(x for f in faults for x in ("--fault", f))]  # fmt: skip
    with started_by_hand(argv, url, "/health", tmp_path / "attached.log"):
        yield url


def attach_b(pytester: pytest.Pytester, url: str, head: str = "") -> Path:
    few = stub_project(pytester, [])
    ladder = pytester.path / "experiments" / "ladders" / "stub.toml"
    text = ladder.read_text().replace('key = "b"', f'key = "b"\nbase_url = "{url}"', 1)
    ladder.write_text(head + text)
    return few


def test_a_warm_up_that_never_ends_fails_twice_and_stops_the_run(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    with attached_stub(tmp_path, "endless") as url:
        few = attach_b(pytester, url)
        result = run_stub(pytester, few, "-k", "c1-b")
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    cut = "the stream sent 41 events for max_tokens=8 (at most 40); cut there"
    assert any("WARMUP-FAILED-TWICE" in line and cut in line for line in out.splitlines()), out
    run = only_run(pytester.path)
    warm = [json.loads(p.read_text())["warmup"] for p in run.glob("quarantine/*/session.json")]
    assert warm and all(w["reason"].startswith(cut) for w in warm), warm


def test_measurements_and_the_close_that_never_end_are_failed_and_the_run_goes_on(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # requests to b: 1 warm-up, 2 calibration, 3 and 4 the measurements, 5 the end calibration;
    # the session's re-run (6 to 10) gets whole answers
    faults = ("endless@3", "pings=0.05@4", "huge-body@5")
    with attached_stub(tmp_path, *faults) as url:
        few = attach_b(pytester, url, head="measurement_timeout_s = 3\n")
        result = run_stub(pytester, few, "-k", "c1-b")
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    run = only_run(pytester.path)
    (q,) = run.glob("quarantine/*_b_c1")
    first, second = read_records(q / "records.jsonl")[0]
    assert not first["valid"] and not second["valid"]
    assert str(first["reason"]).startswith("the stream sent 41 events for max_tokens=8")
    # one comment each 50 ms never lets a read wait: the request's total bound (3 s less 1 s)
    assert str(second["reason"]).startswith("the reply did not end within its bound of 2 s")
    cal = json.loads((q / "session.json").read_text())["calibration"]
    assert cal["end_tps"] is None
    assert cal["end_reason"].startswith("the reply passed its bound of")
    again = read_records(run / "records" / f"{q.name}.jsonl")[0]
    assert [r["valid"] for r in again] == [True, True]
