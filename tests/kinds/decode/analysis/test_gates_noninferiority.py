"""`--expect TREATMENT:SUBSET:not-slower:M`: the grammar, its judgement on a stand-in run's
published intervals, and how it decides its cell for a `[stop]` rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.analysis.decision import Decision
from pytest_mtpsweep.analysis.noninferiority import INFERIOR, NONINFERIOR, UNDECIDED
from pytest_mtpsweep.analysis.sequential import CellState, Design, rule_met
from pytest_mtpsweep.base.errors import ExpectationError
from pytest_mtpsweep.kinds.decode.analysis.gates import stop_cells
from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions, analyse_run
from pytest_mtpsweep.kinds.decode.analysis.pipeline import headline_cells
from pytest_mtpsweep.kinds.decode.analysis.verdicts import judge
from pytest_mtpsweep.wishes.gate import Gate
from tests.gatetexts import failures, gate, request
from tests.strategies import Design as RunDesign
from tests.strategies import make_records, noisy, write_run

RUN = RunDesign(
    treatments=("none", "same", "slow", "noisy"),
    prompts={"prose": tuple(f"prose_{i:02d}" for i in range(1, 7)),
             "structured": tuple(f"structured_{i:02d}" for i in range(1, 7))},
    cycles=4,
)  # fmt: skip

keys = st.text(alphabet="abcdefgh0123456789_.:-", min_size=1, max_size=12).filter(
    lambda k: k.strip(":") == k and "::" not in k
)


@pytest.fixture(autouse=True)
def _no_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("gate")
    rate = noisy(RUN, {"same": 1.0, "slow": 0.85, "noisy": 1.0}, sd=0.004)
    wild = noisy(RUN, {"noisy": 1.0}, sd=0.25, seed=3)

    def mixed(t: str, c: int, o: int, p: str, r: int) -> float:
        return wild(t, c, o, p, r) if t == "noisy" else rate(t, c, o, p, r)

    run = write_run(root, RUN, make_records(RUN, mixed))
    return analyse_run([run], AnalyseOptions(boot=1000))


class TestGrammar:
    @given(keys, st.sampled_from(["prose", "structured", "pooled"]),
           st.floats(min_value=0.1, max_value=50.0).map(lambda m: round(m, 2)))  # fmt: skip
    def test_round_trips_with_colons_in_the_key(self, key: str, subset: str, m: float) -> None:
        text = f"{key}:{subset}:not-slower:{m:g}"
        got = gate(text)
        assert got == Gate(text, key, subset, "not-slower", m)
        assert gate(str(got)) == got

    @given(keys, st.sampled_from(["faster", "slower", "equivalent"]))
    def test_the_three_words_still_parse(self, key: str, word: str) -> None:
        text = f"{key}:prose:{word}"
        assert gate(text) == Gate(text, key, "prose", word)

    @pytest.mark.parametrize(
        ("text", "fragment"),
        [
            ("b:prose:not-slower", "gives not-slower no margin"),
            ("b:prose:not-slower:0", r"not a percent in \(0, 50\]"),
            ("b:prose:not-slower:75", r"not a percent in \(0, 50\]"),
            ("b:prose:not-slower:three", r"not a percent in \(0, 50\]"),
            ("b:code:not-slower:3", "unknown subset 'code'"),
        ],
    )
    def test_bad_margins_raise_one_sentence(self, text: str, fragment: str) -> None:
        with pytest.raises(ExpectationError, match=fragment) as info:
            gate(text)
        assert "\n" not in str(info.value)


class TestJudge:
    def test_the_same_build_passes(self, result: Any) -> None:
        assert failures([judge(result, gate("same:prose:not-slower:3"))]) == []
        verdict = judge(result, gate("same:structured:not-slower:3"))
        assert verdict.passed and "non-inferior" in verdict.sentence and "-3 %" in verdict.sentence

    def test_a_15_percent_loss_fails_at_a_3_percent_margin(self, result: Any) -> None:
        verdict = judge(result, gate("slow:prose:not-slower:3"))
        assert verdict.passed is False and "inferior:" in verdict.sentence

    def test_a_loss_inside_a_wide_margin_passes(self, result: Any) -> None:
        assert judge(result, gate("slow:prose:not-slower:25")).passed

    def test_an_unresolved_margin_fails_at_the_end_saying_what_to_do(self, result: Any) -> None:
        verdict = judge(result, gate("noisy:prose:not-slower:1"))
        assert verdict.passed is False
        assert "undecided at the last look" in verdict.sentence
        assert "mtpsweep calibrate" in verdict.sentence


class TestStop:
    def cells(self, result: Any, gates: list[str]) -> dict[str, str]:
        parsed = [gate(g) for g in gates]
        got = stop_cells(headline_cells(result), result.published, parsed)
        return {c.cell: c.decision for c in got}

    def test_a_gate_decides_its_cell(self, result: Any) -> None:
        got = self.cells(result, ["same:prose:not-slower:3", "slow:prose:not-slower:3",
                                  "noisy:prose:not-slower:1"])  # fmt: skip
        assert got["same:prose"] == NONINFERIOR
        assert got["slow:prose"] == INFERIOR
        assert got["noisy:prose"] == UNDECIDED
        gated = {c.cell for c in stop_cells(headline_cells(result), result.published,
                                            [gate("same:prose:not-slower:3")]) if c.gated}  # fmt: skip
        assert gated == {"same:prose"}
        # The cells no gate names keep their own decision.
        ungated = {c.cell: c.decision for c in headline_cells(result)}
        assert got["same:structured"] == ungated["same:structured"]

    def test_the_rule_waits_for_an_undecided_gate_and_stops_on_a_decided_one(
        self, result: Any
    ) -> None:
        design = Design.plan("decided", 2, 8, "pocock", None, cells=("same:prose", "slow:prose"))
        cells = [CellState(c, Decision.of(d), 1.0) for c, d in self.cells(
            result, ["same:prose:not-slower:3", "slow:prose:not-slower:3"]).items()]  # fmt: skip
        met, why = rule_met(design, tuple(cells))
        assert met and "same:prose pass" in why and "slow:prose fail" in why
        waiting = Design.plan("decided", 2, 8, "pocock", None, cells=("noisy:prose",))
        cells = [CellState(c, Decision.of(d), 1.0) for c, d in self.cells(
            result, ["noisy:prose:not-slower:1"]).items()]  # fmt: skip
        met, why = rule_met(waiting, tuple(cells))
        assert not met and "noisy:prose" in why

    def test_registered_cells_wait_for_a_gated_cell_too(self) -> None:
        # stop.cells names the question; an --expect gate elsewhere is waited for as well,
        # since stopping before it is decided would fail it.
        design = Design.plan("decided", 4, 8, "pocock", None, cells=("b:structured",))
        cells = (
            CellState("b:structured", Decision.FASTER, 5.0),
            CellState("b:prose", Decision.UNDECIDED, 3.0, gated=True),
            CellState(
                "b:other", Decision.UNDECIDED, 3.0
            ),  # no gate: the registered cells leave it be
        )
        met, why = rule_met(design, cells)
        assert not met and why == "not decided yet: b:prose"
        done = (cells[0], CellState("b:prose", Decision.PASS, 1.0, gated=True), cells[2])
        assert rule_met(design, done)[0]

    def test_the_interim_reads_the_gates_from_the_request(self, tmp_path: Path) -> None:
        from pytest_mtpsweep.kinds.decode.analysis.atend import interim

        run = write_run(tmp_path, RUN, make_records(RUN, noisy(RUN, {"slow": 0.85}, sd=0.004)))
        asked = request("slow:prose:not-slower:3", boot=1000)
        got = {c.cell: c.decision for c in interim(run, asked)}
        assert got["slow:prose"] == INFERIOR


class TestFigures:
    """Each judged gate carries its estimate and interval for the gate history."""

    def test_a_not_slower_gate_carries_its_90_percent_interval_and_margin(
        self, result: Any
    ) -> None:
        got = judge(result, gate("slow:prose:not-slower:3"))
        f = got.figures
        assert not got.passed and f is not None
        assert f.margin_pct == 3.0 and f.confidence == pytest.approx(0.90)
        assert f.lower_pct <= f.estimate_pct <= f.upper_pct
        assert f.upper_pct < 0  # 15 % slower: a loss reads negative
        assert f.metric in ("primary", "interval")

    def test_a_directional_gate_carries_its_95_percent_interval(self, result: Any) -> None:
        narrow = judge(result, gate("slow:prose:not-slower:3")).figures
        wide = judge(result, gate("slow:prose:slower")).figures
        assert narrow is not None and wide is not None
        assert wide.margin_pct is None and wide.confidence == pytest.approx(0.95)
        assert wide.estimate_pct == narrow.estimate_pct
        assert wide.upper_pct - wide.lower_pct > narrow.upper_pct - narrow.lower_pct
