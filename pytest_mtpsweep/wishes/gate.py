"""A gate, `--expect TREATMENT:CELL:RULE[:M]`, as one typed value from the command line on.

The text is parsed here and nowhere else (`parse_gates`), once the run's kind is known: the
kind declares what its gates may say (`GateGrammar`, on its `Kind`: the rules, the cell
vocabulary when it is fixed, the margin's unit, the words its messages use). What a kind
judges is a `Gate`; what it returns is a `GateVerdict` whose fields the runner, the history,
JUnit and the terminal read, never its sentence.

Pure and cheap: every pytest run with `--ladder` imports it through the kind declarations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final, Literal

from ..base.errors import ExpectationError

WORD: Final = "not-slower"  # the margin rule's word in `--expect TREATMENT:CELL:not-slower:M`
DIRECTIONS: tuple[str, ...] = ("faster", "slower", "equivalent", WORD)
MIN_MARGIN_PCT = 0.0  # exclusive: a margin of 0 is a superiority test, not this one
MAX_MARGIN_PCT = 50.0  # inclusive: beyond, "not slower" says nothing a user would gate on

Decided = Literal["pass", "fail", "undecided"]


@dataclass(frozen=True)
class GateGrammar:
    """What a kind's gates may say, declared on its `Kind` (None there: it judges none)."""

    # the margin rule's word (`not-slower`), and every word a gate may end in
    WORD: ClassVar[str] = WORD
    DIRECTIONS: ClassVar[tuple[str, ...]] = DIRECTIONS

    syntax: str  # the form, for a message: TREATMENT:LEVEL:not-slower:M
    example: str  # one written out, for a message
    rules: tuple[str, ...] = (WORD,)  # the words a gate may end in (not-slower takes M)
    cells: tuple[str, ...] | None = None  # a fixed cell vocabulary; None: the ladder's
    cell_word: str = "cell"  # what a cell is called in a message: subset, level, subject
    unit: str = "%"  # the margin's unit in a sentence
    unit_words: str = "a percent"  # the margin's unit in a refusal
    like: str = "3 %"  # a margin in words, for a refusal

    def margin(self, text: str, where: str) -> float:
        """The margin M from its text (in this grammar's unit), bounded 0 < M ≤ 50;
        ValueError in one sentence naming `where`."""
        try:
            margin = float(text)
        except ValueError:
            margin = math.nan
        if not (math.isfinite(margin) and MIN_MARGIN_PCT < margin <= MAX_MARGIN_PCT):
            raise ValueError(
                f"{where}: the margin {text!r} is not {self.unit_words} in "
                f"(0, {MAX_MARGIN_PCT:g}]; write it like {WORD}:3 (no more than {self.like} worse)"
            )
        return margin


@dataclass(frozen=True)
class Gate:
    """One `--expect` gate, parsed: `treatment` against the baseline on `cell`, by `rule`
    (`margin` only for not-slower, in `unit`); `text` is the gate as given, its name."""

    text: str
    treatment: str
    cell: str
    rule: str
    margin: float | None = None
    unit: str = "%"

    def __str__(self) -> str:
        return self.text

    @property
    def key(self) -> str:
        """The headline cell the gate names, `treatment:cell`."""
        return f"{self.treatment}:{self.cell}"


@dataclass(frozen=True)
class GateFigures:
    """A judged gate's numbers, what a gate history records. Signed as a gain: positive is
    better (a rate's rise, a latency's fall), so a loss reads negative for every metric."""

    metric: str  # what was compared (decode's endpoint, load's latency percentile)
    estimate_pct: float
    lower_pct: float
    upper_pct: float
    confidence: float  # the interval's two-sided level
    margin_pct: float | None = None  # a not-slower gate's margin


@dataclass(frozen=True)
class GateVerdict:
    """One gate, judged: it becomes the test item `mtpsweep::expect[<gate>]`.

    `decided` is the verdict: `pass`, `fail` (an interval still across the margin at the last
    look fails, by the gate's rule), or `undecided` when the gate was never judged (no
    analysis), which fails CI too. `sentence` is what the terminal and the JUnit message show.
    """

    gate: Gate
    decided: Decided
    sentence: str
    figures: GateFigures | None = None  # its estimate and interval, where it has them

    @classmethod
    def of(
        cls, gate: Gate, passed: bool, sentence: str, figures: GateFigures | None = None
    ) -> GateVerdict:
        """A judged gate's verdict."""
        return cls(gate, "pass" if passed else "fail", sentence, figures)

    @classmethod
    def unjudged(cls, gate: Gate, why: str) -> GateVerdict:
        """A gate no analysis judged: undecided, and failed."""
        return cls(gate, "undecided", f"{gate} not judged: {why}")

    @property
    def passed(self) -> bool:
        return self.decided == "pass"

    @property
    def judged(self) -> bool:
        return self.decided != "undecided"


def _syntax(text: str, g: GateGrammar) -> ExpectationError:
    return ExpectationError(f"expectation {text!r} is not {g.syntax}; write it like {g.example}")


def parse_gate(text: str, g: GateGrammar) -> Gate:
    """One gate's text as a `Gate` by the kind's grammar; ExpectationError naming the fix else.
    A treatment key may hold colons, so the parts are taken from the right."""
    four = [p.strip() for p in text.strip().rsplit(":", 3)]
    margin: float | None = None
    if len(four) == 4 and four[2] == WORD:
        if not all(four[:3]):
            raise _syntax(text, g)
        try:
            margin = g.margin(four[3], f"expectation {text!r}")
        except ValueError as exc:
            raise ExpectationError(str(exc)) from None
        treatment, cell, rule = four[:3]
    elif g.rules == (WORD,):
        raise _syntax(text, g)
    else:
        three = [p.strip() for p in text.strip().rsplit(":", 2)]
        if len(three) != 3 or not all(three):
            raise _syntax(text, g)
        treatment, cell, rule = three
        if rule not in g.rules:
            raise ExpectationError(
                f"expectation {text!r} ends in {rule!r}; use one of {', '.join(g.rules)}"
            )
        if rule == WORD:
            raise ExpectationError(
                f"expectation {text!r} gives {WORD} no margin; write it like "
                f"{treatment}:{cell}:{WORD}:3 (no more than {g.like} slower)"
            )
    if rule not in g.rules:
        raise _syntax(text, g)
    if g.cells is not None and cell not in g.cells:
        raise ExpectationError(
            f"expectation {text!r} names unknown {g.cell_word} {cell!r}; use one of "
            f"{', '.join(g.cells)}"
        )
    return Gate(text, treatment, cell, rule, margin, g.unit)


def parse_gates(texts: Sequence[str], grammar: GateGrammar | None, kind: str) -> tuple[Gate, ...]:
    """Every `--expect` of one invocation, parsed once; ExpectationError naming the option,
    the gate and the fix for the first that is not one the kind can judge."""
    if texts and grammar is None:
        raise ExpectationError(
            f"--expect {texts[0]}: the {kind} kind judges no gates; drop --expect."
        )
    out = []
    for text in texts:
        try:
            out.append(parse_gate(text, grammar))  # type: ignore[arg-type]
        except ExpectationError as exc:
            raise ExpectationError(f"--expect {text}: {exc}.") from None
    return tuple(out)


def check_known(gate: Gate, what: str, name: str, known: Sequence[str] | frozenset[str]) -> None:
    """ExpectationError when a gate names a `what` the run does not have."""
    if name not in known:
        raise ExpectationError(
            f"--expect {gate}: expectation {gate.text!r} names unknown {what} {name!r}; use "
            f"one of {', '.join(sorted(known))}."
        )
