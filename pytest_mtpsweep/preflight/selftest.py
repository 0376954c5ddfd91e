"""The harness checks itself (`[preflight] self_test = true`): a fast self-test, no server.

Each check computes something the measurement and the analysis depend on, from fixed inputs,
and compares it with the value known to be right; the preflight item records "N tests / OK"
as the users' preflight did for their suite, or names what failed.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ..analysis import stats
from ..base import schema
from ..ladder import runplan
from ..ladder.prompts import Prompt, PromptSet
from ..rig.stream import RawStream, reduce_stream
from ..state.rundir import RecordWriter
from ..state.runread import RunReader
from .items import FAIL, PASS, PreflightItem, make_item

Check = Callable[[], None]


def _stream_rates() -> None:

    ms = 1_000_000
    head = 'data: {"model": "m", "choices": [{"index": 0, "delta": {"content": "t"}}]}'
    tail = [
        'data: {"model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}',
        'data: {"model": "m", "choices": [], "usage": {"completion_tokens": 5}, '
        '"timings": {"predicted_n": 5, "predicted_ms": 40.0}}',
        "data: [DONE]",
    ]
    stamps = [20 * ms, 30 * ms, 40 * ms, 50 * ms, 60 * ms, 61 * ms, 62 * ms, 63 * ms]
    raw = RawStream([head] * 5 + tail, stamps, t_send=0, t_end=64 * ms, status=200, error=None)
    m = reduce_stream(raw, expected_alias="m", stall_s=1.0)
    assert m.valid, m.reason
    assert math.isclose(m.decode_rate_tps_primary or 0, 100.0), m.decode_rate_tps_primary
    assert math.isclose(m.decode_rate_tps_interval or 0, 100.0), m.decode_rate_tps_interval
    assert math.isclose(m.ttft_s or 0, 0.020) and math.isclose(m.max_gap_s or 0, 0.010)


def _plan_order() -> None:

    got = [(s.treatment, s.cycle) for s in runplan.run_plan(["a", "b", "c"], 2)]
    assert got == [("a", 1), ("b", 1), ("c", 1), ("c", 2), ("b", 2), ("a", 2)], got


def _prompt_positions() -> None:

    ps = PromptSet(Path(), tuple(Prompt(f"prose_{i:02d}", "prose", str(i)) for i in range(7)))
    for pair in (1, 3):
        odd, even = ps.in_order(pair, 42), ps.in_order(pair + 1, 42)
        assert all(odd.index(p) + even.index(p) == 6 for p in ps.prompts)


def _torn_record_cut_back() -> None:

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / schema.records_file("r")
        w = RecordWriter(path)
        w.append({"i": 1, "rate": float("nan")})
        w.close()
        path.write_text(path.read_text() + '{"i": 2, "to')  # a write cut short
        read = RunReader(tmp).session_records("r")
        assert (read.records, len(read.unreadable)) == ([{"i": 1, "rate": None}], 1)


def _paired_bootstrap() -> None:
    import numpy as np

    # Eight prompts' log ratios spread evenly around a known +10 %: the published interval (the
    # estimator every kind shares) centres on it and excludes no change. Kind-neutral: preflight
    # runs before any kind's analysis and imports none.
    ratios = math.log(1.10) + np.array([-0.04, -0.03, -0.02, -0.01, 0.01, 0.02, 0.03, 0.04])
    est = float(ratios.mean())
    drawn = stats.Resamples.of(
        ratios[None, :], stats.Resamples.indices(len(ratios), 1000, 42, "prose")
    )
    q95 = float(drawn.summary(np.array([est])).q95[0])
    low, high = stats.Spread.of_prompts([ratios]).interval(est, q95, 0.95)
    assert math.isclose(stats.to_pct(est), 10.0, abs_tol=1e-6), est
    assert 0.0 < stats.to_pct(low) < 10.0 < stats.to_pct(high), (low, high)


CHECKS: dict[str, Check] = {
    "stream rates, TTFT and the longest gap": _stream_rates,
    "ABC CBA session order": _plan_order,
    "prompt positions mirror over a cycle pair": _prompt_positions,
    "a torn record line is counted, never parsed": _torn_record_cut_back,
    "paired bootstrap recovers a known +10 %": _paired_bootstrap,
}


def check_self_test(checks: dict[str, Check] | None = None) -> PreflightItem:
    """Run every check; one item: "N tests / OK (s)" or the ones that failed."""
    checks = CHECKS if checks is None else checks
    t0 = time.monotonic()
    failed = []
    for name, check in checks.items():
        try:
            check()
        except Exception as exc:  # a failed check is a finding, never a crash of preflight
            failed.append(f"{name}: {type(exc).__name__} {exc}".strip())
    took = time.monotonic() - t0
    expected = "the harness's self-test passes"
    if not failed:
        return make_item(
            "self_test",
            expected,
            f"{len(checks)} tests / OK ({took:.1f} s)",
            PASS,
            stable=f"{len(checks)} tests / OK",
        )
    return make_item(
        "self_test",
        expected,
        f"{len(failed)} of {len(checks)} FAILED: " + "; ".join(failed),
        FAIL,
        fix="Reinstall pytest-mtpsweep (or fix the change that broke it); its numbers are not "
        "to be trusted until the self-test passes.",
    )
