"""The kind interface's shared parts: gate verdicts and JUnit properties for any kind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_mtpsweep.kindapi import EndAnalysis, GateVerdict, case_properties, session_note


@dataclass(frozen=True)
class Cell:
    valid: bool
    reason: str | None


class BareKind:
    """A kind that offers neither properties() nor session_note()."""


class OwnKind:
    def properties(self, case: Any, result: Any) -> dict[str, Any]:
        return {"task": case, "turns": 3}

    def session_note(self, live: Any) -> str:
        return "4 of 5 green"


def test_a_kinds_own_gates_are_used_as_they_are() -> None:
    gates = (GateVerdict("x:prose:faster", True, "x:prose:faster met: +5 %"),)
    assert EndAnalysis(gates=gates).verdicts(["x:prose:faster"]) == list(gates)


def test_gates_read_off_failures_when_a_kind_gives_only_those() -> None:
    end = EndAnalysis(gate_failures=("b:prose:slower not met: decision is faster",))
    assert end.verdicts(["b:prose:faster", "b:prose:slower"]) == [
        GateVerdict("b:prose:faster", True, "b:prose:faster met"),
        GateVerdict("b:prose:slower", False, "b:prose:slower not met: decision is faster"),
    ]


def test_no_analysis_fails_every_gate_with_the_reason() -> None:
    (verdict,) = EndAnalysis(error="no records were written").verdicts(["b:prose:faster"])
    assert verdict.met is False
    assert verdict.detail == (
        "b:prose:faster not judged: the analysis did not run (no records were written)"
    )


def test_properties_and_notes_fall_back_for_a_kind_without_them() -> None:
    assert case_properties(BareKind(), "t1", Cell(True, None)) == {"valid": True}  # type: ignore[arg-type]
    assert case_properties(BareKind(), "t1", Cell(False, "HTTP 500")) == {  # type: ignore[arg-type]
        "valid": False,
        "reason": "HTTP 500",
    }
    assert session_note(BareKind(), None) == ""  # type: ignore[arg-type]
    assert case_properties(OwnKind(), "t1", Cell(True, None)) == {"task": "t1", "turns": 3}  # type: ignore[arg-type]
    assert session_note(OwnKind(), None) == "4 of 5 green"  # type: ignore[arg-type]
