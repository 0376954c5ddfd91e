"""The authoring experiment: subjects write programs for tasks, in cohorts of prompt formats;
a checker judges each artefact in a sandbox and its error goes back as the next user turn.

This module is the kind's declaration (the entry point `authoring` names `KIND`): every pytest
process of the environment imports it for the kind's options, so it imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...kindapi import GateGrammar, Kind, Opt

KIND = Kind(
    name="authoring",
    fixture="cell",
    summary="One conversation to its outcome (authoring kind), recorded; assert `.valid` in the "
    "test.",
    ladder=f"{__name__}.ladder:SPEC",
    run=f"{__name__}.run.authoringrun:prepare",
    commands=f"{__name__}.cli:register",
    analyse=f"{__name__}.cli:analyse",
    gates=GateGrammar(  # --expect COHORT:SUBJECT:not-slower:M, M in percentage points
        syntax=f"COHORT:SUBJECT:{GateGrammar.WORD}:M, the one gate an authoring run has",
        example=f"doctest:alpha:{GateGrammar.WORD}:5 (no more than 5 percentage points less green)",
        cell_word="subject",
        unit="pp",
        unit_words="a number of percentage points",
        like="3 percentage points",
    ),
    options=(
        Opt(
            "--token-budget",
            "token_budget",
            "authoring: stop before a turn could take the run "
            "past N prompt+completion tokens (overrides the ladder)",
            int,
            metavar="N",
            overrides="token_budget",
        ),
    ),
)


if TYPE_CHECKING:  # mypy checks each part named above against its signature
    from .cli import analyse, register
    from .run.authoringrun import prepare

    Kind.check_parts(run=prepare, commands=register, analyse=analyse)
