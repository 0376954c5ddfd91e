"""The kind interface's shared parts: gate verdicts, and the defaults a kind takes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_mtpsweep.base.errors import ExpectationError
from pytest_mtpsweep.base.schema import WarmupFacts
from pytest_mtpsweep.interface import kindcheck as kindcheck
from pytest_mtpsweep.kindapi import Case, EndAnalysis, GateVerdict, KindRun, Outcome
from pytest_mtpsweep.ladder.runplan import SessionSlot
from pytest_mtpsweep.ladder.values import Preregistration
from pytest_mtpsweep.state.live import LiveSession
from pytest_mtpsweep.wishes.gate import parse_gates
from pytest_mtpsweep.wishes.request import AnalysisRequest
from tests.gatetexts import gate


@dataclass(frozen=True)
class Cell:
    valid: bool
    reason: str | None


class BareKind(KindRun):
    """A kind that writes the six methods every kind must and takes every default."""

    def cases(self, plan: list[SessionSlot]) -> Sequence[Case]:
        return ()

    def prereg_lines(self, reg: Preregistration) -> list[str]:
        return ["- Endpoint: none."]

    def warm_up(self, live: LiveSession) -> WarmupFacts:
        return {"valid": True, "reason": None, "http_status": 200, "ttft_s": None}

    def measure(self, live: LiveSession, case: Any) -> Outcome:
        return Outcome(Cell(True, None))

    def unmeasured(self, live: LiveSession, case: Any, reason: str) -> Outcome:
        return Outcome(Cell(False, reason))

    def analyse(self, run_dir: Path, request: AnalysisRequest) -> EndAnalysis:
        return EndAnalysis()


class OwnKind(BareKind):
    def properties(self, case: Any, result: Any) -> dict[str, Any]:
        return {"task": case, "turns": 3}

    def session_note(self, live: LiveSession) -> str:
        return "4 of 5 green"


def test_a_kinds_own_gates_are_used_as_they_are() -> None:
    x = gate("x:prose:faster")
    gates = (GateVerdict.of(x, True, "x:prose:faster met: +5 %"),)
    assert EndAnalysis(gates=gates).verdicts([x]) == list(gates)


def test_a_gate_the_kind_gave_no_verdict_fails_unjudged() -> None:
    # The kind's verdicts are read by their gate, never parsed back from sentences: one the
    # kind left out is not judged, and fails.
    met, left = gate("b:prose:faster"), gate("b:prose:slower")
    end = EndAnalysis(gates=(GateVerdict.of(met, True, "b:prose:faster met"),))
    got = end.verdicts([met, left])
    assert [v.decided for v in got] == ["pass", "undecided"]
    assert got[1].sentence == "b:prose:slower not judged: the analysis gave it no verdict"
    assert not got[1].passed


def test_no_analysis_fails_every_gate_with_the_reason() -> None:
    (verdict,) = EndAnalysis(error="no records were written").verdicts([gate("b:prose:faster")])
    assert verdict.passed is False and verdict.decided == "undecided"
    assert verdict.sentence == (
        "b:prose:faster not judged: the analysis did not run (no records were written)"
    )


def test_a_kind_without_its_own_takes_the_defaults() -> None:
    bare, live = BareKind(), cast(LiveSession, None)
    assert bare.properties("t1", Cell(True, None)) == {"valid": True}
    assert bare.properties("t1", Cell(False, "HTTP 500")) == {"valid": False, "reason": "HTTP 500"}
    assert bare.session_note(live) == "" and bare.session_facts(live) == {}
    assert (bare.keyed(), bare.plan_fields(), bare.preflight_items()) == ({}, {}, ())
    assert bare.finish(Path("run"), ()) == [] and bare.lint_warnings() == []
    assert bare.calibrates is False
    reg = Preregistration()
    assert bare.registration(reg) is reg
    bare.validate_analysis(AnalysisRequest())  # nothing to refuse


def test_a_kind_without_a_gate_grammar_refuses_gates() -> None:
    """Without its own gates every --expect would read as met: a kind that declares no
    grammar is refused --expect as the gates are parsed."""
    with pytest.raises(
        ExpectationError, match=r"^--expect b:prose:faster: the bare kind judges no"
    ):
        parse_gates(("b:prose:faster",), None, "bare")


def test_a_kind_overrides_only_what_it_has() -> None:
    own = OwnKind()
    assert own.properties("t1", Cell(True, None)) == {"task": "t1", "turns": 3}
    assert own.session_note(cast(LiveSession, None)) == "4 of 5 green"


def test_a_kind_missing_a_method_it_must_write_is_not_a_kind() -> None:
    class Half(KindRun):
        def cases(self, plan: list[SessionSlot]) -> Sequence[Case]:
            return ()

    with pytest.raises(TypeError, match="abstract"):
        Half()  # type: ignore[abstract]
    assert kindcheck.run_problem(object()) == "returned object, not a kindapi.KindRun (subclass it)"
    assert kindcheck.run_problem(BareKind()) is None
