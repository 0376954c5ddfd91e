"""Gates from their text, as the run parses them (`gate.parse_gates` by the kind's grammar),
for tests that hand a kind's analysis its gates directly."""

from __future__ import annotations

from typing import Any

from pytest_mtpsweep.interface.registry import kind
from pytest_mtpsweep.wishes.gate import Gate, GateVerdict, parse_gate, parse_gates
from pytest_mtpsweep.wishes.request import AnalysisRequest


def gate(text: str, kind_name: str = "decode") -> Gate:
    """One gate parsed by the kind's grammar."""
    grammar = kind(kind_name).gates
    assert grammar is not None
    return parse_gate(text, grammar)


def request(*texts: str, kind_name: str = "decode", **kwargs: Any) -> AnalysisRequest:
    """An analysis request with these --expect gates, parsed as a run parses them."""
    gates = parse_gates(texts, kind(kind_name).gates, kind_name)
    return AnalysisRequest(expect=texts, gates=gates, **kwargs)


def failures(verdicts: list[GateVerdict] | tuple[GateVerdict, ...]) -> list[str]:
    """The sentences of the gates that did not pass."""
    return [v.sentence for v in verdicts if not v.passed]
