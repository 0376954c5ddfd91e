"""The decode kind: its cases, the order prompts run in each session, its stop markers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.base.errors import LadderError
from pytest_mtpsweep.base.schema import Measurement
from pytest_mtpsweep.cli.analyse import run_cli
from pytest_mtpsweep.kinds.decode.run.cases import DecodeCase
from pytest_mtpsweep.kinds.decode.run.decoderun import prepare
from pytest_mtpsweep.kinds.decode.run.markers import stop_marker
from pytest_mtpsweep.ladder import run_plan
from pytest_mtpsweep.ladder.prompts import Prompt, PromptSet
from pytest_mtpsweep.protocol.loader import load_ladder
from pytest_mtpsweep.wishes.request import RunRequest
from tests.sandbox import FAKE_GGUF, STUB_SERVER, copy_experiments, only_run

REPO = Path(__file__).resolve().parents[2]
LADDER = REPO / "experiments" / "ladders" / "drafters-cpu.toml"
STUB = STUB_SERVER  # one copy per xdist worker


def prompts(n: int) -> PromptSet:
    return PromptSet(
        Path(), tuple(Prompt(f"prose_{i:02d}", "prose", f"text {i}") for i in range(n))
    )


@given(st.integers(1, 20), st.integers(1, 8), st.integers(0, 2**16))
def test_each_cycle_pair_mirrors_positions(n: int, pairs: int, seed: int) -> None:
    ps = prompts(n)
    for pair in range(pairs):
        odd, even = ps.in_order(2 * pair + 1, seed), ps.in_order(2 * pair + 2, seed)
        assert sorted(p.id for p in odd) == sorted(p.id for p in ps.prompts)
        for p in ps.prompts:
            # over a cycle pair every prompt's positions sum to n-1, as ABC CBA does for sessions
            assert odd.index(p) + even.index(p) == n - 1


def test_later_pairs_rotate_by_a_seeded_offset() -> None:
    ps = prompts(16)
    first = [p.id for p in ps.in_order(1, 42)]
    assert first == [p.id for p in ps.prompts]  # the first cycle keeps the set's order
    later = {tuple(p.id for p in ps.in_order(c, 42)) for c in (3, 5, 7)}
    assert len(later | {tuple(first)}) > 1
    assert ps.in_order(3, 42) == ps.in_order(3, 42)


def test_cases_cover_the_plan_with_one_order_per_cycle() -> None:
    lad = load_ladder(LADDER)
    run = prepare(
        lad,
        lad.kind_settings,
        RunRequest(ladder="drafters-cpu", search_dirs=(), cwd=REPO, invocation=()),
    )
    plan = run_plan(lad.treatment_keys, lad.cycles)
    cases = run.cases(plan)
    assert len(cases) == len(plan) * 16 and cases[0].id == "c1-none-prose_01"
    by_cycle: dict[int, set[tuple[str, ...]]] = {}
    for slot in plan:
        order = tuple(c.prompt.id for c in cases if c.slot == slot)
        by_cycle.setdefault(slot.cycle, set()).add(order)
        assert [c.position for c in cases if c.slot == slot] == list(range(16))
    # every session of a cycle runs the same order, so a pair meets a prompt at one position
    assert all(len(orders) == 1 for orders in by_cycle.values())
    assert run.plan_fields()["prompt_order"]["c2"][0] == "structured_08"


def test_stop_markers() -> None:
    lad = load_ladder(LADDER)
    case = DecodeCase(run_plan(["none"], 1)[0], prompts(1).prompts[0], 0)
    assert stop_marker(case, Measurement(True, None), lad, False) is None
    hidden = stop_marker(case, Measurement(True, None, reasoning_chars=12), lad, False)
    assert hidden == "** HIDDEN-REASONING=12 chars at 01_none_c1/prose_00"
    garbled = Measurement(True, None, degenerate="echo")
    assert stop_marker(case, garbled, lad, False) is None  # degenerate = "flag": recorded only
    assert (
        stop_marker(case, garbled, lad, True) == "** DEGENERATE-TEXT at 01_none_c1/prose_00: echo"
    )
    odd = Measurement(False, "x", unrecognised_delta_fields=("audio",))
    assert (
        stop_marker(case, odd, lad, False)
        == "** UNRECOGNISED-DELTA-FIELDS=audio at 01_none_c1/prose_00"
    )


THREE = """
question = "Where does the gain start?"
baseline = "none"
cycles = 2
max_tokens = 8
[model]
path = "{model}"
id = "stub"
[server]
port = 0
ready_timeout_s = 30
[[treatments]]
key = "none"
[[treatments]]
key = "gate_0.10"
args = ["--stub-token-ms", "1.5"]
[[treatments]]
key = "gate_0.25"
args = ["--stub-token-ms", "1"]
[preregistration]
secondary_contrasts = ["gate_0.25 vs gate_0.10"]
"""


def test_registered_secondaries_and_the_interval_basis_are_analysed_at_session_end(
    pytester: pytest.Pytester,
) -> None:
    copy_experiments(pytester)
    model = pytester.path / "model.gguf"
    model.write_bytes(FAKE_GGUF)
    (pytester.path / "experiments" / "ladders" / "gates.toml").write_text(THREE.format(model=model))
    few = pytester.path / "few"
    few.mkdir()
    (few / "prose_01.txt").write_text("Write one sentence.")
    result = pytester.runpytest(
        "experiments/", "--ladder=gates", f"--server-bin={STUB}", f"--prompts-dir={few}",
        "--no-calibration", "--boot=1000",
    )  # fmt: skip
    result.assert_outcomes(passed=6)
    run = only_run(pytester.path)
    vs = json.loads((run / "analysis_vs_gate_0.10" / "contrasts.json").read_text())
    assert vs["settings"]["baseline"] == "gate_0.10" and "gate_0.25" in vs["treatments"]
    interval = json.loads((run / "analysis_interval_basis" / "contrasts.json").read_text())
    assert interval["settings"]["primary_endpoint"] == "interval"
    assert interval["settings"]["baseline"] == "none"
    result.stdout.fnmatch_lines(
        [
            f"secondary (gate_0.25 vs gate_0.10): {run / 'analysis_vs_gate_0.10'}",
            f"interval basis: {run / 'analysis_interval_basis'}",
        ]
    )
    # the CLI reproduces the interval-basis analysis byte for byte
    out = pytester.path / "cli"
    assert run_cli(["analyse", str(run), "--boot", "1000", "--endpoint", "interval",
                    "--out", str(out)]) == 0  # fmt: skip
    assert (out / "contrasts.csv").read_bytes() == (
        run / "analysis_interval_basis" / "contrasts.csv"
    ).read_bytes()


def test_repeats_run_whole_passes_with_their_own_ids() -> None:
    lad = load_ladder(LADDER, {"repeats": 2, "cache_prompt": True})
    run = prepare(
        lad,
        lad.kind_settings,
        RunRequest(ladder="drafters-cpu", search_dirs=(), cwd=REPO, invocation=()),
    )
    slot = run_plan(lad.treatment_keys, lad.cycles)[0]
    cases = run.cases([slot])
    assert len(cases) == 32 and [c.position for c in cases] == list(range(32))
    assert [c.repeat for c in cases] == [1] * 16 + [2] * 16
    assert cases[0].id == "c1-none-prose_01-r1" and cases[16].id == "c1-none-prose_01-r2"
    assert run.plan_fields()["repeats"] == 2
    assert run.keyed()["cache_prompt"] is True
    with pytest.raises(LadderError, match="field 'repeats' is 0"):
        load_ladder(LADDER, {"repeats": 0})


def test_a_run_prints_its_first_sessions_shakedown_once_and_the_row_table(
    pytester: pytest.Pytester,
) -> None:
    copy_experiments(pytester)
    model = pytester.path / "model.gguf"
    model.write_bytes(FAKE_GGUF)
    ladder = THREE.format(model=model).replace("[preregistration]", "[x]").split("[x]")[0]
    (pytester.path / "experiments" / "ladders" / "gates.toml").write_text(ladder)
    few = pytester.path / "few"
    few.mkdir()
    for i in (1, 2):
        (few / f"prose_0{i}.txt").write_text(f"Write sentence {i}.")
    result = pytester.runpytest(
        "experiments/", "--ladder=gates", f"--server-bin={STUB}", f"--prompts-dir={few}",
        "--no-calibration", "--no-analysis", "--repeats=2", "--cache-prompt", "-k", "c1",
    )  # fmt: skip
    result.assert_outcomes(passed=12)
    out = result.stdout.str()
    line = (
        "row-1 shakedown (01_none_c1, 4 responses): 0 non-chunked, usage 4/4, "
        "token-basis agreement 4/4, 0 hidden events"
    )
    assert out.count(line) == 1
    result.stdout.fnmatch_lines(["*meas/ok/usable/fail*", "1 *none*4/4/4/0*length 4*"])
    run = only_run(pytester.path)
    recs = [json.loads(x) for x in (run / "records" / "01_none_c1.jsonl").read_text().splitlines()]
    assert [r["repeat"] for r in recs] == [1, 1, 2, 2]
    assert {r["cache_prompt"] for r in recs} == {True}
    info = json.loads((run / "sessions" / "01_none_c1.json").read_text())
    assert info["usable"] == 4 and info["finish_reasons"] == {"length": 4}
    csv = (run / "sessions.csv").read_text()
    assert "finish_reasons" in csv.splitlines()[0] and "length 4" in csv
